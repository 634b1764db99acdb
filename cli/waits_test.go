package cli_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// holdWriteLock takes SQLite's write lock on path from this process (BEGIN IMMEDIATE, as a
// writer stopped mid-transaction or a sqlite3 shell left in a transaction holds it) until the
// returned function releases it.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	driver := ""
	for _, d := range sql.Drivers() {
		if d == "sqlite" || d == "sqlite3_spool" { // the default build's, the sqlite_cgo build's
			driver = d
		}
	}
	db, err := sql.Open(driver, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			db.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// A database another process keeps locked makes `spool run` say what it waits for after a
// second and fail with one line once database.write_timeout is spent, instead of waiting
// silently (before: 20 s without a word, then "database busy: still locked after 20s: database
// is locked (5) (SQLITE_BUSY)"); once the lock is gone, the same command works.
func TestLockedDatabaseSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	release := holdWriteLock(t, filepath.Join(home, "spool.db"))
	env := []string{"SPOOL_DATABASE_WRITE_TIMEOUT=1500ms"}
	r := spoolEnv(t, home, "", env, "run", "SAY hello")
	if r.code == 0 {
		t.Fatalf("run on a locked database succeeded: %q", r.stdout)
	}
	var notices, errs []string
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		switch {
		case strings.Contains(l, "waiting for the database write lock (held by another process)"):
			notices = append(notices, l)
		case strings.HasPrefix(l, "spool: ") && strings.Contains(l, "gave up on a database write after waiting"):
			errs = append(errs, l)
		}
	}
	if len(notices) == 0 || len(errs) != 1 || !strings.Contains(errs[0], "(held by another process)") {
		t.Fatalf("stderr %q: want a notice of the wait and one error line naming the lock", r.stderr)
	}
	release()
	spoolEnv(t, home, "", env, "run", "SAY hello").ok(t, "run once the lock is released")
}
