// Package cli is spool's command line: cobra commands, one file per command group, and their
// rendering (tables for people, --json for scripts, progress bars on a terminal).
//
// Contract for every command: output goes to stdout, diagnostics to stderr; a runtime error is
// one line on stderr ("spool: session \"abc\" not found") with exit status 1, an argument error
// adds the command's usage and exits 2; nothing stored is changed by a command that fails on bad
// input. The store is opened in one place (app.openStore).
package cli
