package sqlite

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

const gateChildEnv = "SPOOL_SQLITE_GATE_CHILD"

// gateChild is a spool process that takes this host's write gate of the database in
// SPOOL_SQLITE_DB and then hangs: with role "gate" it holds only the gate (as a writer sleeping
// in its busy retry does), with "gate+lock" it also holds SQLite's write lock (a writer stopped
// mid-transaction). It prints "held" once it holds them.
func gateChild(role string) {
	ctx := context.Background()
	db, err := Open(ctx, os.Getenv("SPOOL_SQLITE_DB"), Options{Logger: discardLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gate child:", err)
		os.Exit(1)
	}
	if role == "gate" {
		if err := db.gate.enter(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "gate child:", err)
			os.Exit(1)
		}
		fmt.Println("held")
		select {}
	}
	_ = db.write(ctx, time.Minute, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES ('hung', 'writer')"); err != nil {
			return err
		}
		fmt.Println("held")
		select {}
	})
	os.Exit(1)
}

// startGateHolder starts a gateChild in role on path, waits until it holds, and SIGSTOPs it.
func startGateHolder(t *testing.T, path, role string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), gateChildEnv+"="+role, "SPOOL_SQLITE_DB="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "held" {
		t.Fatalf("gate holder did not start (%q)", sc.Text())
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// A spool process that hangs holding this host's write gate does not hold the other writers
// back: a write goes ahead without the gate when only the gate is held, and when the hung
// process also holds SQLite's lock the write fails with ErrBusy once its budget is spent,
// instead of waiting as long as its context lasts (before: forever).
func TestHungGateHolderDoesNotBlockWriters(t *testing.T) {
	t.Parallel()
	for _, role := range []string{"gate", "gate+lock"} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "hung.db")
			db, err := Open(bg, path, Options{Logger: discardLogger(), WriteBudget: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
				t.Fatal(err)
			}
			startGateHolder(t, path, role)
			// Far longer than the budget; the verdict is what the append returns, not when.
			ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
			defer cancel()
			_, err = db.Append(ctx, "s", store.Message{Role: store.RoleUser, Content: "past the hung holder"})
			switch role {
			case "gate":
				if err != nil {
					t.Fatalf("append beside a hung gate holder: %v", err)
				}
				if db.gateBypasses.Load() == 0 {
					t.Fatal("the append did not go around the gate")
				}
			default:
				var wt *store.WriteTimeoutError
				if !errors.As(err, &wt) || !errors.Is(err, store.ErrBusy) {
					t.Fatalf("append beside a hung lock holder: %v, want a *store.WriteTimeoutError after the budget", err)
				}
			}
		})
	}
}

// Closing twice returns the first result instead of panicking.
func TestCloseTwice(t *testing.T) {
	t.Parallel()
	db, err := Open(bg, filepath.Join(t.TempDir(), "c.db"), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Opening while another connection holds the database locked retries instead of failing with
// SQLite's "database is locked": within the budget it waits, past it the error is ErrBusy.
func TestOpenWaitsForALockedDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locked.db")
	db, err := Open(bg, path, Options{Logger: discardLogger(), JournalMode: "delete"})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// An exclusive lock (a writer committing in rollback mode) keeps even readers out.
	excl, err := sql.Open(driverName, dsn(path, 0, "NORMAL", false))
	if err != nil {
		t.Fatal(err)
	}
	defer excl.Close()
	conn, err := excl.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(bg, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	_, err = Open(bg, path, Options{Logger: discardLogger(), JournalMode: "delete", WriteBudget: 300 * time.Millisecond})
	if !errors.Is(err, store.ErrBusy) {
		t.Fatalf("open under an exclusive lock: %v, want ErrBusy after the budget", err)
	}
	done := make(chan error, 1)
	go func() {
		db, err := Open(bg, path, Options{Logger: discardLogger(), JournalMode: "delete"})
		if err == nil {
			db.Close()
		}
		done <- err
	}()
	if _, err := conn.ExecContext(bg, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("open once the lock is released: %v", err)
	}
}

// db check while another process holds the write lock waits for it (busy retry) instead of
// failing with "database is locked" in the full-text checks.
func TestCheckWaitsForWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "check.db")
	db, err := Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(bg, "s", store.Message{Role: store.RoleUser, Content: "indexed words"}); err != nil {
		t.Fatal(err)
	}
	if err := db.flushIndex(bg); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open(driverName, dsn(path, 0, "NORMAL", false))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO meta (key, value) VALUES ('writer', 'busy')"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		problems []string
		err      error
	}
	done := make(chan result, 1)
	go func() {
		p, err := db.Check(bg)
		done <- result{p, err}
	}()
	// Release the lock once Check has met it and is retrying; a Check that gives up at the
	// first busy answer returns before that.
	var r result
	for got := false; !got; {
		select {
		case r = <-done:
			got = true
		default:
			if db.BusyRetries() > 0 {
				tx.Rollback()
				r, got = <-done, true
			}
			time.Sleep(time.Millisecond)
		}
	}
	tx.Rollback()
	if r.err != nil || len(r.problems) != 0 {
		t.Fatalf("check beside a writer: %v %q", r.err, r.problems)
	}
}

// Another program's SQLite file at the path is refused before anything is written to it, in
// one line without SQL.
func TestForeignDatabaseRefusedUntouched(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "theirs.db")
	theirs, err := sql.Open(driverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "INSERT INTO notes (body) VALUES ('mine')"} {
		if _, err := theirs.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	theirs.Close()
	before := fileSum(t, path)
	_, err = Open(bg, path, Options{Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "not a spool database") {
		t.Fatalf("open another program's database: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(strings.ToUpper(msg), "CREATE") || strings.Contains(strings.ToUpper(msg), "SELECT") {
		t.Fatalf("error is not one plain line: %q", msg)
	}
	if fileSum(t, path) != before {
		t.Fatal("the foreign database was changed")
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + side); err == nil {
			t.Fatalf("%s was created beside the foreign database", side)
		}
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// mountTmpfs mounts a small tmpfs at a new directory (root only) and returns it; the test is
// skipped, saying why, where this process cannot mount.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (run the tests as root, as CI does)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); run as root with CAP_SYS_ADMIN to enable", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

func remount(t *testing.T, dir, opts string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s %s: %v: %s", dir, opts, err, out)
	}
}

// A database on a read-only filesystem opens read-only: every read works (lists, transcripts,
// search, stats, check), every write fails with ErrReadOnly, and nothing is created.
func TestReadOnlyFilesystem(t *testing.T) {
	t.Parallel()
	for _, journal := range []string{"wal", "delete"} {
		t.Run(journal, func(t *testing.T) {
			dir := mountTmpfs(t, "8m")
			path := filepath.Join(dir, "spool.db")
			db, err := Open(bg, path, Options{Logger: discardLogger(), JournalMode: journal})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Append(bg, "s", store.Message{Role: store.RoleUser, Content: "readable words"}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			remount(t, dir, "ro")
			ro, err := Open(bg, path, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatalf("open on a read-only filesystem: %v", err)
			}
			defer ro.Close()
			if !ro.ReadOnly() {
				t.Fatal("not opened read-only")
			}
			if ls, err := ro.ListSessions(bg, store.ListOptions{}); err != nil || len(ls) != 1 {
				t.Fatalf("list: %d %v", len(ls), err)
			}
			if ms, err := ro.Conversation(bg, "s", store.ViewAll); err != nil || len(ms) != 1 {
				t.Fatalf("conversation: %d %v", len(ms), err)
			}
			if hits, err := ro.Search(bg, store.SearchQuery{Text: "readable"}); err != nil || len(hits) != 1 {
				t.Fatalf("search: %d %v", len(hits), err)
			}
			if _, err := ro.Stats(bg); err != nil {
				t.Fatalf("stats: %v", err)
			}
			if p, err := ro.Check(bg); err != nil || len(p) != 0 {
				t.Fatalf("check: %q %v", p, err)
			}
			_, err = ro.Append(bg, "s", store.Message{Role: store.RoleUser, Content: "x"})
			if !errors.Is(err, store.ErrReadOnly) {
				t.Fatalf("append on a read-only database: %v", err)
			}
			if err := ro.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
		})
	}
}

// damage opens path with a plain connection and runs qs on it.
func damage(t *testing.T, path string, qs ...string) {
	t.Helper()
	c, err := sql.Open(driverName, "file:"+path+"?_pragma=foreign_keys(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	for _, q := range qs {
		if _, err := c.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Files that open but fail each of Check's checks: each is reported as a problem of its kind.
func TestCheckFindsDamage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string
	}{
		{"counters", func(t *testing.T, path string) {
			damage(t, path, "UPDATE sessions SET message_count = 99 WHERE id = 's1'")
		}, "counters: s1: message_count 99"},
		{"foreign keys", func(t *testing.T, path string) {
			damage(t, path, "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('ghost', 'user', 'orphan', 1)")
		}, "foreign key: messages row"},
		{"full-text", func(t *testing.T, path string) {
			damage(t, path, "INSERT INTO messages_fts (rowid, content, tool_name, tool_calls) VALUES (1, 'words that are not in the row', '', '')")
		}, "messages_fts:"},
		{"integrity", func(t *testing.T, path string) {
			// The index on messages loses its entries while the table keeps its rows.
			damage(t, path, "PRAGMA writable_schema = ON",
				"UPDATE sqlite_schema SET sql = replace(sql, 'messages(session_id', 'messages(role') WHERE type = 'index' AND sql LIKE '%messages(session_id%'")
		}, "integrity:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "damaged.db")
			db, err := Open(bg, path, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"s1", "s2"} {
				if _, err := db.CreateSession(bg, store.NewSession{ID: id}); err != nil {
					t.Fatal(err)
				}
				for i := range 20 {
					if _, err := db.Append(bg, id, store.Message{Role: store.RoleUser, Content: fmt.Sprint("message ", i)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			db.Close()
			tc.damage(t, path)
			db, err = Open(bg, path, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatalf("the damaged file must still open: %v", err)
			}
			defer db.Close()
			problems, err := db.Check(bg)
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			found := false
			for _, p := range problems {
				found = found || strings.HasPrefix(p, tc.want)
			}
			if !found {
				t.Fatalf("problems %q, want one starting %q", problems, tc.want)
			}
		})
	}
}

// Once SQLite reports the file corrupt, the handle writes nothing more: a write that would not
// touch a damaged page (a new session) fails too, with the first cause, and stores nothing.
func TestDamageStopsWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "spool.db")
	db, err := Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := db.Append(bg, "s", store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%d %s", i, strings.Repeat("x ", 300))}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	var root, pageSize int64
	c, err := sql.Open(driverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow("SELECT rootpage FROM sqlite_master WHERE name = 'messages'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", int(pageSize))), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()

	db, err = Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Append(bg, "s", store.Message{Role: store.RoleUser, Content: "into the damaged table"})
	var d *store.DamagedError
	if !errors.As(err, &d) || !errors.Is(err, store.ErrDamaged) || d.Path != path || d.Cause == "" {
		t.Fatalf("append to a damaged table: %v", err)
	}
	_, err = db.CreateSession(bg, store.NewSession{ID: "after"})
	if !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), d.Cause) {
		t.Fatalf("create after damage was seen: %v", err)
	}
	if _, err := db.GetSession(bg, "after"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a session was created on a damaged database: %v", err)
	}
}
