// Package hermes reads a Hermes Agent home (state.db, sessions/sessions.json and the legacy
// sessions/*.jsonl transcripts) into a spool store, and its memory files and config.yaml into a
// spool home. It never writes the source, not a byte:
// state.db is opened read-only through the store/sqlite driver; one with a -wal beside it (a
// live or crashed Hermes) is copied with its -wal into a private temporary directory and read
// there, with the -wal's rows, so no -shm is created or touched in the home; nothing else in the
// home is opened for writing. A state.db that is not a regular file (a directory, a named pipe)
// fails the import before anything is stored.
//
// Contract:
//   - Every sessions row becomes a spool session with the same id: source, user, session key,
//     model, model_config, system prompt (stored once per hash), title (numbered continuation
//     titles kept; a title another spool session holds is numbered on), start/end times, end
//     reason, token, cache, API-call and cost counters. Messages keep role, content, tool calls,
//     tool call id and name, reasoning (reasoning, else reasoning_content), reasoning_details,
//     finish reason, token count and timestamp, in row-id order.
//   - Lineage follows Hermes Agent's classification: a branch marker or a
//     parent ended "branched" before the child started is a branch; delegate and reset markers
//     (or a reset end reason with the same session key) are delegate and reset; a parent ended
//     "compression" is a compression continuation, so a migrated chain lists once and resumes at
//     its tip. Parents are imported before children.
//   - sessions.json entries become store routes (key → session, suspended and resume_pending
//     flags, the rest of the entry as origin) and the session's session key, keyed as spool's
//     adapters key the lane's next message: Hermes keys a Slack thread or a Telegram forum topic
//     under its chat's type (agent:main:slack:group:T:C:ts), spool as a thread
//     (agent:main:slack:thread:T:C:ts); the thread id comes from the entry (thread_id, or its
//     origin's), the session row's thread_id, or for Slack the timestamp form of the key's part.
//   - A legacy JSONL transcript replaces a session's SQLite rows only when it has strictly more
//     messages; corrupt lines are skipped with a warning; a transcript without a sessions row
//     becomes a session of its own.
//   - With Options.SpoolHome, memories/MEMORY.md and USER.md are merged into spool's memory
//     files there (tools.MergeMemory: spool's entries kept, none twice, entries over the limit
//     listed), and config.yaml's model, provider and same-named compression keys are written
//     into its config.yaml where that file does not set them (provider keys all or none; keys
//     never copied); every key not mapped is a Skip of kind "config". A config.yaml that is not
//     YAML fails Open; spool's config is left as it was when the result would not load.
//   - Columns are read by name: unknown tables and columns are ignored, missing optional ones
//     read as empty, so newer Hermes schemas import too.
//   - Importing is idempotent: sessions whose id the store already has, and routes whose key it
//     already has, are skipped and reported, never overwritten.
//   - A missing directory, a directory that is not a Hermes home, a corrupt or foreign state.db
//     or an unreadable sessions.json fails before anything is stored. A row spool cannot store
//     (an unknown role, a title over the limit) is skipped and reported, with its reason.
//
// Memory is bounded by the largest single session: sessions are read and written one at a time,
// with only a small index of all sessions (ids and lineage fields) held throughout.
package hermes
