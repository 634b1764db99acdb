//go:build unix

package regfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/regfile"
)

// TestOpen: a regular file (also through a symbolic link) opens; a FIFO without a writer, a
// directory and a character device are refused at once with a NotRegularError naming the kind.
func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file.txt")
	if err := os.WriteFile(file, []byte("text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	for _, l := range [][2]string{{file, "link-file"}, {fifo, "link-fifo"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"regular file", file, ""},
		{"link to a regular file", filepath.Join(dir, "link-file"), ""},
		{"fifo", fifo, "is a named pipe (FIFO), not a regular file"},
		{"link to a fifo", filepath.Join(dir, "link-fifo"), "is a named pipe (FIFO), not a regular file"},
		{"directory", dir, "is a directory, not a regular file"},
		{"character device", os.DevNull, "is a character device, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type opened struct {
				data []byte
				err  error
			}
			done := make(chan opened, 1)
			go func() {
				b, err := regfile.ReadFile(tc.path)
				done <- opened{b, err}
			}()
			var got opened
			select {
			case got = <-done:
			case <-time.After(time.Minute): // a hang guard only
				t.Fatalf("ReadFile(%s) blocked", tc.path)
			}
			if tc.want == "" {
				if got.err != nil || string(got.data) != "text\n" {
					t.Fatalf("ReadFile = %q, %v", got.data, got.err)
				}
				return
			}
			var nr *regfile.NotRegularError
			if !errors.As(got.err, &nr) || got.err.Error() != tc.want {
				t.Fatalf("ReadFile = %v, want a *NotRegularError saying %q", got.err, tc.want)
			}
		})
	}
}
