// Package prompt builds a session's system prompt in three tiers joined in a fixed order:
// stable (identity, tool, memory, session_search and delegate guidance, model-family and platform hints),
// context (the caller's system message and one project rule file) and volatile (memory files,
// skills index, the session line).
//
// The prompt is frozen per session: it is built once, persisted by its sha256 through the store,
// and restored byte for byte on resume. It is rebuilt only for a new session or after a
// compaction, and a rebuild whose inputs have unchanged bytes yields identical bytes, because
// nothing in it depends on the clock or on map order (the session line carries the session's
// start time, not now). Files are read at build time only, with bounded sizes; editing
// MEMORY.md mid-session changes nothing until the next rebuild.
//
// Per-turn text (recall, plugin context) never goes here: package wire puts it into the current
// user message.
package prompt
