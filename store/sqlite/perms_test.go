package sqlite

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/store"
)

// TestOpenRestrictsModes: opening a database of this user's clears the group and other bits of
// the file, its -wal and its -shm (a copy or a chmod may have left them readable by everyone),
// and keeps the owner's bits: a read-only file stays read-only.
func TestOpenRestrictsModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		mode, want os.FileMode
	}{
		{"world readable", 0o644, 0o600},
		{"group writable", 0o660, 0o600},
		{"read-only for everyone", 0o444, 0o400},
		{"already private", 0o600, 0o600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "spool.db")
			db, err := Open(bg, path, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Chmod(p, tc.mode); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
			db, err = Open(bg, path, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.GetSession(bg, "s"); err != nil {
				t.Fatalf("read after reopening: %v", err)
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(p)
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != tc.want {
					t.Errorf("%s: mode %v after open, want %v", filepath.Base(p), got, tc.want)
				}
			}
		})
	}
}
