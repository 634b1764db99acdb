package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadOnlyHomeDirectory: on a home the user cannot write (directory and database read-only, as a
// backup mounted read-only or a home owned by someone else), every read works (the database
// is opened read-only, nothing is migrated or written) and a write fails with one line that
// says the database is read-only. As root, which writes anything, the reads run as nobody.
func TestReadOnlyHomeDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home := filepath.Join(base, "home")
	spool(t, home, "run", "remember the blue door").ok(t, "seed")
	bin := spoolBin
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		const nobody = 65534
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
		// nobody must reach the binary and the home, and own the files (a home of one's own that
		// cannot be written, not someone else's).
		bin = filepath.Join(base, "spool")
		b, err := os.ReadFile(spoolBin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		for dir := base; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := filepath.Walk(home, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Chown(p, nobody, nobody)
		}); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(home)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Chmod(filepath.Join(home, e.Name()), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(home, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(home, 0o700) })
	run := func(args ...string) result {
		cmd := exec.Command(bin, append([]string{"--home", home}, args...)...)
		cmd.Env = cleanEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = base
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r := result{stdout: out.String(), stderr: errb.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run spool %v: %v", args, err)
		}
		return r
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "list"}, "remember the blue door"},
		{[]string{"search", "blue"}, "blue"},
		{[]string{"sessions", "show", "2"}, "remember the blue door"}, // the one session's id prefix
		{[]string{"sessions", "export", "-o", "-"}, "remember the blue door"},
	} {
		r := run(tc.args...)
		if r.code != 0 || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("spool %v on a read-only home: exit %d, stdout %q, stderr %q", tc.args, r.code, r.stdout, r.stderr)
		}
	}
	r := run("run", "a new turn")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if last := lines[len(lines)-1]; r.code != 1 || !strings.HasPrefix(last, "spool: the database is read-only: ") {
		t.Errorf("spool run on a read-only home: exit %d, last line %q", r.code, last)
	}
}
