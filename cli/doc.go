// Package cli is spool's command line: cobra commands, one file per command group, and their
// rendering (tables for people, --json for scripts, progress bars on a terminal).
//
// Contract for every command: output goes to stdout, diagnostics to stderr; a runtime error is
// one line on stderr ("spool: session \"abc\" not found") with exit status 1, an argument error
// adds the command's usage and exits 2; nothing stored is changed by a command that fails on bad
// input. The store is opened in one place (app.openStore).
//
// spool chat on a terminal (tui.go) runs one Bubble Tea program for the whole chat: a line
// editor and a live view at the bottom, everything finished printed above it. The view is drawn
// by screen.go (ultraviolet's cell renderer) right after each message the program handles, not
// on Bubble Tea's frame clock; screen also owns raw mode and the terminal modes. The chat's worker
// goroutine talks to it only through tui's methods (read, ask, pick, live, spin, println), which
// keep their order; with piped input the chat reads lines as they come (lineReader), unchanged.
package cli
