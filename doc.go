// Package spool is the front door for Go programs: long sessions for an LLM agent, stored,
// searchable and compacted, behind one import.
//
// Open a store with Open (a file path for SQLite, a postgres:// URL for PostgreSQL shared by
// many hosts, or ":memory:" for a database that lives until Close), then work with a Session:
//
//	db, err := spool.Open(ctx, "chat.db")
//	s, err := db.NewSession(ctx, "support")
//	err = s.Append(ctx, spool.UserMessage("Hello"), spool.AssistantMessage("Hi! How can I help?"))
//	history, err := s.Load(ctx) // what the model sees: send it to your model
//
// Load is what the model sees (after compactions: the summary, the working set and the recent
// messages); Transcript is everything the session ever said, archived messages included. Pop
// undoes the last exchange and Clear every one, Search runs a full-text query over the session, Branch copies it into a child session,
// Recall runs spool's session_search over every session, and Compact plans and commits a
// compaction.
//
// To let spool run the agent loop, make an Agent with your provider.Client (any model API:
// see its contract on provider.Client) and your tools, and call Agent.Run for one turn. The
// agent compacts before a request would outgrow the model's window. Options give the embedder
// the agent's whole system prompt (spool's own guidance is opt-in), a *slog.Logger and an
// Observer of model calls, tool calls, compactions and lease waits.
//
// Errors returned by this package are *Error values carrying a Class and the session id.
//
// A compaction replaces the active history and archives the replaced messages, which stay
// searchable by Search and Recall. Recall leaves out the calling session's active messages,
// because the model already sees them. A framework that shortens its own context without
// committing the compaction through spool (Session.Compact, or a plan committed with
// store.Compactor.ArchiveAndCompact) therefore hides the dropped messages from recall: spool still
// believes the model sees them. Session.Compact and Agent.Run always commit.
package spool
