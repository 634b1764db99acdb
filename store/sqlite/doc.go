// Package sqlite is spool's embedded store.Backend: one SQLite file in WAL mode, written
// through a single connection with BEGIN IMMEDIATE and a jittered retry on a time budget, read
// through a bounded pool. It is safe for several OS processes on one host: their writers queue
// on a kernel lock (flock on <db>-writer) before taking SQLite's, and lease releases wake
// waiters through inotify on files in <db>-leases.
//
// Open(Memory) (":memory:", or ":memory:NAME" for one shared by this process's handles of that
// name) is the same store in memory, through SQLite's memdb VFS (memory.go): no file anywhere,
// the rollback journal in memory instead of WAL, no write gate, no raw reader (database/sql
// reads it), lease releases waking waiters through channels. It passes the conformance suite
// but for the tests that need a second process.
//
// The default build uses modernc.org/sqlite (pure Go, CGO_ENABLED=0). Building with the tags
// `sqlite_cgo sqlite_fts5` switches to github.com/mattn/go-sqlite3; the driver seam is the
// driver_*.go files and nothing else differs.
//
// Durability: WAL with synchronous=NORMAL by default (a process crash loses nothing committed; a
// power loss may drop the last commits but never corrupts); Options.Synchronous "FULL" fsyncs
// every commit. On filesystems where WAL is unsafe (NFS, SMB, 9p, FUSE/virtiofs) a new database
// uses the rollback journal instead, and a database already in WAL is never switched back while
// it may be live. WAL checkpoints run beside the appends, on a connection of their own
// (checkpoint.go).
//
// The turn's writes (appends, CommitTurn, usage records, lease acquire/renew/release) go through
// a group writer (group.go): one goroutine commits what several callers queued in one
// transaction, each caller's write in its own savepoint with its own fence check, so one
// caller's failure never lands or fails another's; a caller returns once its commit is done.
//
// Transcripts, listings and search (the hot reads: every turn and resume loads a transcript) are
// read in the default build by rawReader, on read-only connections of its own through SQLite's
// C API, with database/sql as its fallback; see rawread_modernc.go for why and what it measured.
// So are a turn's point reads (its session, route, tip, prompt and last calls). The model's view
// of a session (Conversation with ViewActive) is kept between loads by historyCache
// (histcache.go): a load reads only the rows appended since, after a check in the same read
// transaction that proves the kept rows current (migration 0012's history_changes, maintained by
// triggers for every writer of the file).
//
// Full-text indexing is batched (see index.go): appends land in the table at once and reach the
// indexes every 512 appends, before any search and at close, so a search never misses a row.
package sqlite
