// Package tools is the agent's tool registry and its built-in tools (read_file, write_file,
// edit_file, list_files, search_files, terminal, memory, session_search).
//
// A Registry's definitions are sorted by name and their JSON schemas are canonicalized once at
// construction, so two registries built from the same tools give byte-identical definitions in
// every process: a tool change is a prompt-cache break, and it must never happen by accident.
//
// Registry.Call never fails and never panics: an unknown tool, arguments that are not a JSON
// object or that violate the tool's schema, a tool error and a tool panic all come back as an
// error Result whose text tells the model what went wrong. Output is capped (head and tail kept
// around a marker) so one command cannot flood the context.
//
// Tools act for the user, and are safe by default: paths resolve against Env.WorkDir; the file
// tools stay inside the workspace (the git root above it, else the working directory, symbolic
// links resolved) unless Env.Approver consents, and writes (write_file, edit_file) show the
// approver a diff when Env.ConfirmWrites; edit_file replaces exact strings that must be unique
// (several edits apply all or none) and never overwrites a file changed since it read it; with
// Env.Journal, each write records the file's previous content (a Journal file per call) so a
// Revert can put it back, refusing a file changed since; the terminal asks Env.Approver before
// it runs anything and runs commands with an allow-list of spool's environment (BaseEnv and
// Env.PassEnv: no provider key, database URL or token reaches them); files that must be regular
// files (a named pipe would block) are refused otherwise; every result has the secret values
// spool knows (Env.Secrets) redacted, so no key reaches a transcript, the search index or the
// next request. memory writes files the prompt package
// reads only at the next prompt build (new session or compaction), and session_search is a
// read-only view of the store through package recall. The delegate tool is not here: it runs a
// sub-agent, so package agent serves it on top of a registry.
package tools
