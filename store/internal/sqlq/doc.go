// Package sqlq owns the store's SQL that both backends share: each domain's queries, scanning and
// transaction logic written once, over a small executor and dialect seam. store/sqlite and
// store/postgres embed Store and keep only what truly differs: connections and pools, the write
// gate, busy and reconnect retries, FTS5 versus tsvector, the raw reader, pgx pipelining.
//
// # Contract
//
// A backend gives Store three things (DB): a reader Executor, write transactions, and the lease
// fence a fenced write checks inside its transaction. An Executor runs statements over a pool or
// one transaction; queries are written once with "?" placeholders and the Dialect rebinds them
// ($1, $2 … on PostgreSQL) and spells what differs (ordering by bytes, floor division, what a
// text column can hold, "no limit"). A query string handed to an Executor must be fixed (built
// from constants and the dialect, never from values): backends prepare and cache statements by
// their text. Rows are delivered to a callback, not returned as an iterator, so SQLite's raw
// reader can serve them without database/sql's per-row costs; QueryRow's Scan reports a missing
// row with an error matching sql.ErrNoRows (pgx's ErrNoRows wraps it).
//
// Write transactions may run their function more than once (busy and reconnect retries): it
// must have no effects outside its Executor. Errors are wrapped with the operation's name here,
// once; backends return the seam's errors unchanged.
//
// # Moving a domain here
//
// Done: Accounting (RecordRequest, Requests, UsageByDay), model cooldowns, SystemPrompt and the
// numbering of NextTitle (each backend keeps its query of candidate titles). To move another:
//
//  1. Copy one backend's methods into a file of this package named by the domain, as methods
//     of Store; replace the driver calls with Executor's (Exec, QueryRow, Query) and the
//     backend's spellings with Dialect's (add a field to Dialect with both spellings when a new
//     one appears: one place says how the backends differ).
//  2. Scan nullable columns into sql.Null* (pgx and the raw reader both accept them).
//  3. Delete both backends' methods (Store is embedded, so its methods are theirs); keep a
//     backend method only where it adds what truly differs, and let it call Store's.
//  4. Statements SQLite prepares on its writer (writerStatements) reference this package's
//     constants, so the prepared text and the executed text stay the same string.
//  5. On a hot path, give the write one Job value holding everything (its arguments boxed once,
//     see EncodedRequest): a call through Executor makes its variadic arguments escape, so a
//     closure plus argument slices would cost allocations the backend's direct call did not.
//  6. Run both backends' conformance tiers (SQLite with both drivers, PostgreSQL) and the
//     domain's benchmark before and after.
package sqlq
