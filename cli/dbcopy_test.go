package cli_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/store/storetest"
)

type copyReport struct {
	From, To string
	Verified bool
	Tables   []struct {
		Table    string
		Rows     int64
		Checksum string
	}
}

func (r copyReport) rows(table string) int64 {
	for _, t := range r.Tables {
		if t.Table == table {
			return t.Rows
		}
	}
	return -1
}

// filledHome is a SQLite home holding storetest.Fill's store.
func filledHome(t *testing.T) (home string, ids []string) {
	t.Helper()
	home = t.TempDir()
	withStore(t, home, func(st store.Backend) { ids = storetest.Fill(t, st) })
	return home, ids
}

func openSQLiteFile(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openPG(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestDBCopyRoundTrip: spool db copy carries a SQLite store to PostgreSQL and back to a new
// SQLite file; both copies hold what the original holds, ids and search included. A second copy
// into the full target is refused in one line and changes nothing; --replace overwrites it.
func TestDBCopyRoundTrip(t *testing.T) {
	t.Parallel()
	home, ids := filledHome(t)
	url := pgtest.NewDatabase(t)
	rep := decode[copyReport](t, spool(t, home, "--json", "db", "copy", "--to", url).ok(t, "copy to postgres"))
	if !rep.Verified || rep.rows("sessions") != int64(len(ids)) || rep.rows("messages") < 10 || rep.rows("routes") != 1 {
		t.Errorf("copy report %+v", rep)
	}
	pgHome := t.TempDir()
	env := []string{"SPOOL_DATABASE_URL=" + url}
	back := filepath.Join(t.TempDir(), "back.db")
	r := spoolEnv(t, pgHome, "", env, "db", "copy", "--to", back).ok(t, "copy back to sqlite")
	if !strings.Contains(r.stdout, "verified: 5 sessions") {
		t.Errorf("copy back printed %q", r.stdout)
	}
	orig := openSQLiteFile(t, filepath.Join(home, "spool.db"))
	storetest.SameContents(t, orig, openPG(t, url), ids)
	storetest.SameContents(t, orig, openSQLiteFile(t, back), ids)

	again := spool(t, home, "db", "copy", "--to", url)
	if again.code == 0 || !strings.Contains(again.stderr, "not empty") || !strings.Contains(again.stderr, "--replace") ||
		strings.Count(strings.TrimSpace(again.stderr), "\n") > 0 {
		t.Errorf("copy into a full target: exit %d, stderr %q (want one line naming --replace)", again.code, again.stderr)
	}
	spool(t, home, "db", "copy", "--to", url, "--replace").ok(t, "copy --replace")
	storetest.SameContents(t, orig, openPG(t, url), ids)
}

// TestDBCopyBadTarget: a target of the wrong kind, an unreachable server or a missing directory
// is one line, a non-zero exit, no password, and the source as it was.
func TestDBCopyBadTarget(t *testing.T) {
	t.Parallel()
	home, _ := filledHome(t)
	before := spool(t, home, "sessions", "list", "--json").ok(t, "list").stdout
	for _, to := range []string{
		"mysql://spool:hunter2@127.0.0.1/spool",
		"postgres://spool:hunter2@127.0.0.1:1/spool?sslmode=disable&connect_timeout=2",
		filepath.Join(t.TempDir(), "missing", "dir", "spool.db"),
		filepath.Join(home, "spool.db"),
	} {
		r := spool(t, home, "db", "copy", "--to", to)
		if r.code == 0 || strings.Contains(r.stderr, "hunter2") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 || r.stderr == "" {
			t.Errorf("--to %s: exit %d, stderr %q (want one line, non-zero, no password)", to, r.code, r.stderr)
		}
	}
	if after := spool(t, home, "sessions", "list", "--json").ok(t, "list").stdout; after != before {
		t.Errorf("the source changed:\n%s\n%s", before, after)
	}
	spool(t, home, "db", "check").ok(t, "db check of the source")
}

// blockedCopy starts spool db copy as a real process and returns once PostgreSQL shows it
// waiting for the lock the test holds (so it is mid-copy: earlier tables are written in its
// open transaction); then it kills the process with SIGKILL.
func blockedCopy(t *testing.T, home string, env []string, to, watchURL, waitingQuery string) {
	t.Helper()
	cmd := exec.Command(spoolBin, "--home", home, "db", "copy", "--to", to)
	cmd.Env = append(cleanEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	conn, err := pgx.Connect(context.Background(), watchURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(2 * time.Minute) // a bound for a broken build, not a verdict
	for {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`, waitingQuery+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the copy ended before it reached the lock: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the copy never waited for the lock:\n%s", out.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
}

// lockTable takes a table lock in an open transaction of its own connection (closed when the
// test ends); the caller releases it by ending tx.
func lockTable(t *testing.T, url, stmt string) (*pgx.Conn, pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	return conn, tx
}

// TestDBCopyInterrupted: a copy killed mid-way (SIGKILL, its transaction open after writing
// sessions and messages) leaves the target empty, in both directions; running it again copies
// everything.
func TestDBCopyInterrupted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("sqlite_to_postgres", func(t *testing.T) {
		t.Parallel()
		home, ids := filledHome(t)
		url := pgtest.NewDatabase(t)
		openPG(t, url).Close() // the schema, so the test can lock a table of it
		// SHARE lets the copy count routes but not insert into it: it stops after the tables
		// that come before (sessions, messages, requests, idempotency keys).
		lock, tx := lockTable(t, url, "LOCK TABLE routes IN SHARE MODE")
		blockedCopy(t, home, nil, url, url, `INSERT INTO "routes"`)
		_ = tx.Rollback(ctx)
		for _, table := range []string{"sessions", "messages", "requests", "system_prompts"} {
			var n int
			if err := lock.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 0 {
				t.Errorf("after the killed copy the target's %s holds %d rows (%v), want 0", table, n, err)
			}
		}
		spool(t, home, "db", "copy", "--to", url).ok(t, "copy again")
		storetest.SameContents(t, openSQLiteFile(t, filepath.Join(home, "spool.db")), openPG(t, url), ids)
	})
	t.Run("postgres_to_sqlite", func(t *testing.T) {
		t.Parallel()
		url := pgtest.NewDatabase(t)
		src := openPG(t, url)
		ids := storetest.Fill(t, src)
		// The copy reads routes after sessions, messages and the rest are written to the target.
		_, tx := lockTable(t, url, "LOCK TABLE routes IN ACCESS EXCLUSIVE MODE")
		target := filepath.Join(t.TempDir(), "copy.db")
		env := []string{"SPOOL_DATABASE_URL=" + url}
		blockedCopy(t, t.TempDir(), env, target, url, `SELECT count(*) FROM "routes"`)
		_ = tx.Rollback(ctx)
		dst := openSQLiteFile(t, target)
		if st, err := dst.Stats(ctx); err != nil || st.Sessions != 0 || st.Messages != 0 {
			t.Errorf("after the killed copy the target holds %+v (%v), want nothing", st, err)
		}
		dst.Close()
		spoolEnv(t, t.TempDir(), "", env, "db", "copy", "--to", target).ok(t, "copy again")
		storetest.SameContents(t, src, openSQLiteFile(t, target), ids)
	})
}
