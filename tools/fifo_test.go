//go:build unix

package tools

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFileToolsRefuseFIFOs: a named pipe in the workspace (nobody writing to it, nobody reading)
// is refused by read_file, write_file, edit_file and search_files with one clear error, instead of an open
// that waits for the other end forever; write_file leaves the pipe as it was.
func TestFileToolsRefuseFIFOs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	env := Env{WorkDir: dir, Approver: AutoApprove}
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"read_file", `{"path":"pipe.txt"}`, "read pipe.txt: is a named pipe (FIFO), not a regular file"},
		{"write_file", `{"path":"pipe.txt","content":"x"}`, "write pipe.txt: is a named pipe (FIFO), not a regular file"},
		{"edit_file", `{"path":"pipe.txt","old_string":"x","new_string":"y"}`, "edit pipe.txt: is a named pipe (FIFO), not a regular file"},
		{"search_files", `{"pattern":"x","dir":"pipe.txt"}`, "no matches"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			done := make(chan Result, 1)
			go func() { done <- call(t, env, tc.tool, tc.args) }()
			var res Result
			select {
			case res = <-done:
			case <-time.After(time.Minute): // a hang guard, no timing verdict
				// Let the blocked open go, so the test binary is not left hanging.
				if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
					defer f.Close()
				}
				t.Fatalf("%s on a FIFO blocked", tc.tool)
			}
			if !strings.Contains(res.Content, tc.want) || strings.Count(res.Content, "\n") > 1 {
				t.Errorf("%s = %+v, want one line saying %q", tc.tool, res, tc.want)
			}
			if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("after %s the FIFO is %v, %v", tc.tool, st.Mode(), err)
			}
		})
	}
}
