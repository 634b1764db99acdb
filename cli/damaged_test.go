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
