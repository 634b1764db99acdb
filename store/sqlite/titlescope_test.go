package sqlite

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/store"
)

// TestTitleScopeMigration: a database from before titles were scoped per principal upgrades in
// place; afterwards another principal may hold the same title and one principal still may not
// hold it twice.
func TestTitleScopeMigration(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "old.db")
	old := openAt(t, path, 12)
	mustExec(t, old, `INSERT INTO sessions (id, user_id, title, root_id, started_at, last_active) VALUES ('a', 'alice', 'Secret plan', 'a', 1, 1)`)
	old.Close()
	db, err := Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "b", UserID: "bob", Title: "Secret plan"}); err != nil {
		t.Fatalf("bob taking alice's title after the upgrade: %v", err)
	}
	if _, err := db.CreateSession(bg, store.NewSession{ID: "c", UserID: "alice", Title: "Secret plan"}); !errors.Is(err, store.ErrTitleInUse) {
		t.Fatalf("alice taking her own title twice after the upgrade: %v", err)
	}
}
