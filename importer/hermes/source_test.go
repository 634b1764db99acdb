package hermes_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spoolhq/spool/importer/hermes"
	"github.com/spoolhq/spool/store"
)

// TestStateDBNotRegular: a state.db that is a directory or a named pipe fails the import with
// one line naming it, stores nothing and never blocks (a pipe is not opened).
func TestStateDBNotRegular(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		make       func(path string) error
	}{
		{"directory", "is a directory, not a regular file", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"fifo", "is a named pipe (FIFO), not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := copyHome(t)
			db := filepath.Join(home, "state.db")
			if err := os.Remove(db); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(db); err != nil {
				t.Fatal(err)
			}
			st := openStore(t)
			_, err := hermes.Import(bg, st, home, hermes.Options{})
			if err == nil || !strings.Contains(err.Error(), "state.db "+tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("import of a home whose state.db is a %s: %v, want one line saying so", tc.name, err)
			}
			if n, _ := st.Stats(bg); n.Sessions != 0 {
				t.Errorf("%d sessions stored", n.Sessions)
			}
		})
	}
}

// TestWALWithoutSHM: a home holding state.db and a -wal with rows not yet checkpointed but no
// -shm (a copy of a running Hermes' home, or one that crashed) is imported with the -wal's rows,
// and the home is byte for byte as before: no -shm appears, nothing changes.
func TestWALWithoutSHM(t *testing.T) {
	t.Parallel()
	live := copyHome(t)
	db := rawDB(t, filepath.Join(live, "state.db"))
	exec(t, db, "PRAGMA journal_mode = WAL", "PRAGMA wal_autocheckpoint = 0",
		`INSERT INTO sessions (id, source, started_at, title) VALUES ('20260410_100000_wal001', 'cli', 1775815200.0, 'only in the wal')`,
		`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('20260410_100000_wal001', 'user', 'a row in the wal', 1775815210.0)`)
	conn, err := db.Conn(bg) // keeps the -wal from being checkpointed away while it is copied
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The home as a backup copies it: every file but the -shm.
	home := filepath.Join(t.TempDir(), "copied")
	err = filepath.WalkDir(live, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(live, path)
		switch {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(home, rel), 0o755)
		case rel == "state.db-shm":
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(home, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, home)
	if _, ok := before["state.db-wal"]; !ok {
		t.Fatal("no -wal in the copied home")
	}
	st := openStore(t)
	rep, err := hermes.Import(bg, st, home, hermes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, before, snapshot(t, home))
	if rep.Sessions != 9 {
		t.Errorf("imported %d sessions, want 9 (one only in the -wal)", rep.Sessions)
	}
	ms, err := st.Conversation(bg, "20260410_100000_wal001", store.ViewAll)
	if err != nil || len(ms) != 1 || ms[0].Content != "a row in the wal" {
		t.Errorf("the -wal's rows: %+v %v", ms, err)
	}
}
