package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

var bg = context.Background()

func TestFileModesAndWAL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "spool.db")
	db, err := Open(bg, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.JournalMode() != "wal" {
		t.Fatalf("journal mode %q, want wal", db.JournalMode())
	}
	if _, err := db.CreateSession(bg, store.NewSession{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	var sync int
	if err := db.w.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 1 {
		t.Fatalf("synchronous = %d (%v), want 1 (NORMAL)", sync, err)
	}
	full, err := Open(bg, filepath.Join(t.TempDir(), "full.db"), Options{Synchronous: "full"})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if err := full.w.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("synchronous = %d (%v), want 2 (FULL)", sync, err)
	}
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, o := range []Options{{Synchronous: "OFF"}, {JournalMode: "memory"}} {
		if _, err := Open(bg, filepath.Join(dir, "x.db"), o); err == nil {
			t.Fatalf("Open accepted %+v", o)
		}
	}
	notDB := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("this is not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bg, notDB, Options{}); err == nil {
		t.Fatal("Open accepted a file that is not a database")
	}
	b, _ := os.ReadFile(notDB)
	if !strings.HasPrefix(string(b), "this is not a database") {
		t.Fatal("a failed open modified the file")
	}
}

func TestWALUnsafeFilesystemFallsBack(t *testing.T) {
	// Not parallel: it swaps the filesystem probe.
	orig := statfsType
	t.Cleanup(func() { statfsType = orig })
	statfsType = func(string) (int64, error) { return 0x6969, nil } // NFS
	path := filepath.Join(t.TempDir(), "nfs.db")
	db, err := Open(bg, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if db.JournalMode() != "delete" {
		t.Fatalf("journal mode on NFS = %q, want delete", db.JournalMode())
	}
	if _, err := db.CreateSession(bg, store.NewSession{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// A database already in WAL stays WAL, even on a filesystem that looks unsafe and even when
	// the configuration asks for the rollback journal: never downgrade a live WAL.
	statfsType = orig
	walPath := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(bg, walPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	statfsType = func(string) (int64, error) { return 0x6969, nil }
	again, err := Open(bg, walPath, Options{JournalMode: "delete"})
	if err != nil {
		t.Fatal(err)
	}
	if again.JournalMode() != "wal" {
		t.Fatalf("a live WAL database was switched to %q", again.JournalMode())
	}
	again.Close()
	w.Close()
}

// TestMigrationsUpgradeEveryVersion builds a database at each older schema version with data in
// it, then opens it with the current code: the upgrade must keep every row and make it searchable.
func TestMigrationsUpgradeEveryVersion(t *testing.T) {
	t.Parallel()
	for v := 1; v < SchemaVersion(); v++ {
		path := filepath.Join(t.TempDir(), "old.db")
		old := openAt(t, path, v)
		// Data written with plain SQL valid at version 1 (the columns every version has).
		mustExec(t, old, `INSERT INTO sessions (id, root_id, started_at, last_active, message_count) VALUES ('s', 's', 1, 1, 2)`)
		mustExec(t, old, `INSERT INTO messages (session_id, role, content, timestamp) VALUES
			('s', 'user', 'upgrade the parser', 1), ('s', 'assistant', '会话数据库 ready', 2)`)
		if v >= 2 { // what that version's writer did: flag rows with CJK text
			mustExec(t, old, `UPDATE messages SET cjk = 1 WHERE content LIKE '%会话%'`)
		}
		old.Close()

		db, err := Open(bg, path, Options{})
		if err != nil {
			t.Fatalf("upgrade from v%d: %v", v, err)
		}
		var got int
		if err := db.w.QueryRow("PRAGMA user_version").Scan(&got); err != nil || got != SchemaVersion() {
			t.Fatalf("upgrade from v%d reached v%d (%v)", v, got, err)
		}
		ms, err := db.Conversation(bg, "s", store.ViewActive)
		if err != nil || len(ms) != 2 {
			t.Fatalf("upgrade from v%d: %d messages, %v", v, len(ms), err)
		}
		for _, q := range []string{"parser", "会话数据库", "upgraded parsers"} { // the last through the stems
			hits, err := db.Search(bg, store.SearchQuery{Text: q})
			if err != nil || len(hits) != 1 {
				t.Fatalf("upgrade from v%d: search %q found %d (%v)", v, q, len(hits), err)
			}
		}
		if problems, err := db.Check(bg); err != nil || len(problems) > 0 {
			t.Fatalf("upgrade from v%d: check %v %v", v, problems, err)
		}
		db.Close()
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "future.db")
	db := openAt(t, path, -1)
	mustExec(t, db, "PRAGMA user_version = 999")
	db.Close()
	_, err := Open(bg, path, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this spool") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

func TestBusyBudget(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "busy.db")
	db, err := Open(bg, path, Options{WriteBudget: 200_000_000}) // 200 ms
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	// Another connection holds the write lock.
	other, err := sql.Open(driverName, dsn(path, 0, "NORMAL", false))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO meta (key, value) VALUES ('lock', 'held')"); err != nil {
		t.Fatal(err)
	}
	_, err = db.Append(bg, "b", store.Message{Role: store.RoleUser, Content: "x"})
	if !errors.Is(err, store.ErrBusy) || db.BusyRetries() == 0 {
		t.Fatalf("append under a held lock: %v (retries %d)", err, db.BusyRetries())
	}
	tx.Rollback()
	if _, err := db.Append(bg, "b", store.Message{Role: store.RoleUser, Content: "x"}); err != nil {
		t.Fatalf("append after the lock was released: %v", err)
	}
	if ms, _ := db.Conversation(bg, "b", store.ViewAll); len(ms) != 1 {
		t.Fatalf("%d rows after one failed and one good append", len(ms))
	}
}

// openAt creates a database migrated only up to version v (-1: all).
func openAt(t *testing.T, path string, v int) *DB {
	t.Helper()
	db := &DB{path: path, opts: Options{WriteBudget: 1e9}, log: discardLogger()}
	var err error
	if db.gate, err = openWriteGate(path); err != nil {
		t.Fatal(err)
	}
	db.w, err = sql.Open(driverName, dsn(path, writeBusyTimeoutMS, "NORMAL", false))
	if err != nil {
		t.Fatal(err)
	}
	db.w.SetMaxOpenConns(1)
	if _, err := db.applyJournalMode(bg); err != nil {
		t.Fatal(err)
	}
	if err := db.migrateTo(bg, v); err != nil {
		t.Fatal(err)
	}
	return db
}

func mustExec(t *testing.T, db *DB, q string) {
	t.Helper()
	if _, err := db.w.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestWriteGate: a writer queued behind another handle's write honours its context, and the
// queue recovers once the holder leaves.
func TestWriteGate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gate.db")
	a, err := Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateSession(bg, store.NewSession{ID: "g"}); err != nil {
		t.Fatal(err)
	}
	if err := a.gate.enter(bg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	_, err = b.Append(ctx, "g", store.Message{Role: store.RoleUser, Content: "queued"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued write: %v, want the context's deadline", err)
	}
	a.gate.exit()
	if _, err := b.Append(bg, "g", store.Message{Role: store.RoleUser, Content: "after"}); err != nil {
		t.Fatalf("write after the gate was freed: %v", err)
	}
	if ms, _ := b.Conversation(bg, "g", store.ViewAll); len(ms) != 1 || ms[0].Content != "after" {
		t.Fatalf("rows = %+v", ms)
	}
}
