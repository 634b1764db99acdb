package hermes_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spoolhq/spool/importer/hermes"
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
