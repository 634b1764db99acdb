package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// A database whose messages table is damaged: no command creates a session or adds a row, and
// each fails with one line that names the file and says to run db check.
func TestDamagedDatabaseWritesNothing(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "spool.db")
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, store.NewSession{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("words worth keeping ", 40)
	for i := range 200 {
		if _, err := db.Append(ctx, "old", store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%d %s", i, body)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Garbage over the messages table's root page: the sessions table stays readable, so a
	// store that creates a session before its first message would succeed at that much.
	raw := rawDB(t, path)
	var root, pageSize int
	if err := raw.QueryRow("SELECT rootpage FROM sqlite_master WHERE name = 'messages'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, pageSize), int64(root-1)*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := sessionRows(t, path)

	for _, args := range [][]string{
		{"run", "a new session"},
		{"run", "--resume", "old", "more"},
		{"search", "worth"},
		{"sessions", "show", "old"},
	} {
		r := spool(t, home, args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		last := lines[len(lines)-1]
		t.Logf("spool %v: exit %d, stderr %q", args, r.code, r.stderr)
		if r.code != 1 || !strings.Contains(last, path+" is damaged") || !strings.Contains(last, "spool db check") {
			t.Errorf("spool %v on a damaged database: exit %d, last line %q", args, r.code, last)
		}
		for _, l := range lines[:len(lines)-1] {
			if !strings.HasPrefix(l, "No model provider configured") {
				t.Errorf("spool %v: more than the one error line: %q", args, l)
			}
		}
		if after := sessionRows(t, path); after != before {
			t.Fatalf("spool %v changed the sessions of a damaged database:\nbefore %s\nafter  %s", args, before, after)
		}
	}
}

// sessionRows lists the sessions table (ids and counters), read past the store.
func sessionRows(t *testing.T, path string) string {
	t.Helper()
	raw := rawDB(t, path)
	defer raw.Close()
	rows, err := raw.Query("SELECT id, message_count, last_active FROM sessions ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id string
		var n, last int64
		if err := rows.Scan(&id, &n, &last); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%d:%d ", id, n, last)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A database whose search index is damaged but whose transcript tables are sound: spool run
// stores the whole turn, and then only indexing the new rows fails. The turn is stored once,
// so the command succeeds (exit 0) with one warning that names the damage; exiting 1 made a
// script retry the turn and store it twice.
func TestRunOnDamagedIndexStoresTheTurnAndSucceeds(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	spool(t, home, "run", "first words worth keeping").ok(t, "first run")
	path := filepath.Join(home, "spool.db")
	raw := rawDB(t, path)
	var sid string
	var root, pageSize int
	if err := raw.QueryRow("SELECT id FROM sessions").Scan(&sid); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRow("SELECT rootpage FROM sqlite_master WHERE name = 'messages_fts_data'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, pageSize), int64(root-1)*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r := spool(t, home, "run", "--resume", sid, "second turn please")
	t.Logf("exit %d, stderr %q", r.code, r.stderr)
	if r.code != 0 {
		t.Errorf("spool run on a damaged search index exited %d after storing the turn; want 0", r.code)
	}
	if !strings.Contains(r.stderr, "spool: warning: ") || !strings.Contains(r.stderr, "damaged") {
		t.Errorf("no warning about the damage: %q", r.stderr)
	}
	raw = rawDB(t, path)
	defer raw.Close()
	var n int
	if err := raw.QueryRow("SELECT count(*) FROM messages WHERE session_id = ? AND content = 'second turn please'", sid).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the second turn's message is stored %d times, want once", n)
	}
}
