// Package postgres is spool's multi-host store.Backend: one PostgreSQL database shared by
// any number of processes on any number of hosts, through pgx/v5's pgxpool. It passes the same
// conformance suite as store/sqlite (store/storetest) and keeps its contract:
//
//   - Every write is one transaction. Transcript writes first update their session's row, so
//     writes to one session serialize there and message ids grow in commit order per session.
//   - Turn leases are rows with a monotonic generation, taken by a conditional upsert; every
//     fenced transcript write locks the lease row and checks (conversation, holder, generation)
//     inside its own transaction. A holder on another host cannot be probed, so its lease is
//     reclaimed only after its TTL; expiry uses the database's clock, never the hosts'.
//   - Pooler-safe: no session state (no session-level SET, no session advisory locks, no
//     temporary tables; a planner setting a search needs is transaction-local, set_config(…, true));
//     it works behind PgBouncer in transaction mode with default_query_exec_mode=exec (or
//     cache_describe) in the URL. Migrations take a transaction-scoped advisory lock, so
//     replicas starting together migrate once.
//   - Search has SQLite's semantics: the query goes through the same sanitizer, words are
//     tokenized in Go exactly as the SQLite index tokenizes them and stored as a tsvector (GIN),
//     CJK substrings use pg_trgm (GIN) on rows containing CJK text, and tool rows index the same
//     bounded prefix. pg_trgm needs a UTF-8 ctype (C.UTF-8): under locale C it ignores CJK, and
//     Check reports such a database.
//   - Lease releases are announced with NOTIFY and heard on one dedicated LISTEN connection per
//     handle (WatchLease); the notification is a hint only, waiters also poll the rows.
package postgres
