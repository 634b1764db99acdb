// Package store owns spool's durable data model: sessions, their messages, lineage, compaction
// persistence, search, and the errors callers branch on. It states the contract; backends
// (store/sqlite, store/postgres) implement it and prove it with the shared conformance suite in
// store/storetest. Nothing in this package speaks SQL; the SQL both backends share is written
// once in store/internal/sqlq, whose package doc says how a domain moves there.
//
// Transcripts are always ordered by message id, never by timestamp. Only active rows are what the
// model sees; compaction archives rows (still searchable and displayable) instead of deleting them.
//
// # Contracts by domain
//
// The contract is cut into small interfaces, one per domain, each with its own conformance tier:
//
//   - Sessions: create, get, resolve, update, end and reopen, titles, system prompts, list, delete.
//   - Transcript: append, load (what the model sees, the whole transcript, a page), hide and undo,
//     lineage (children, root, chain, resume target) and branch.
//   - Searcher: full-text search over every session.
//   - Leaser: turn leases with fencing generations, and the turn's own writes (BeginTurn,
//     CommitTurn); named leases for single-holder jobs (NamedLeaser: a platform's poller).
//   - Compactor: archive-and-compact, rotation, compression locks.
//   - PlatformState: routes, inbox, read cursors, per-bot watermarks (Watermarks), send ledger.
//   - APIState: idempotency keys, response records and conversation metadata (APIResponses).
//   - Accounting: model-call records and usage by day.
//   - Admin: import, prune, stats, check.
//
// Sessions, Transcript and Searcher, with LeaseTaker for the fences of Transcript's edits, are
// the base a third-party backend can provide alone (storetest.Base). Backend composes every
// domain with Close; only what opens and owns a database holds one (the CLI's root, spool.Open,
// dbcopy, the benchmarks). Every other consumer declares, where it is used, the domains or the
// few methods it needs.
//
// Two cuts differ from the obvious one, on purpose. BeginTurn and CommitTurn sit in Leaser, not
// Transcript: both take or return a Lease, so a backend of the base tier (which takes and
// releases leases but runs no turns) has none to begin or commit, while Transcript's appends
// stay usable unfenced. The accounting
// domain is named Accounting because Usage is already the name of a token count.
//
// # Fenced edits
//
// An edit of a history (Transcript's UndoLastExchange and HideMessage, Compactor's
// ArchiveAndCompact and RotateCompaction) takes a Fence as a required argument, and only a Lease
// gives one (Lease.Fence): an edit made without the conversation's turn lease does not compile,
// and one made with a lease another holder has since taken fails with ErrLeaseLost inside its
// own transaction and changes nothing. A turn edits with its own lease (turn.Turn.Fence); an
// edit outside a turn takes the lease for itself (UnderLease). A backend that offers the edits
// therefore keeps the lease rows it checks fences against: taking and releasing a lease
// (LeaseTaker) is the least it provides besides the base tier.
package store
