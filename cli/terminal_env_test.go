//go:build linux

package cli_test

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// TestTerminalSeesNoKeys: a real spool process (on PostgreSQL through a SPOOL_DATABASE_URL with
// a password, a provider key and other credentials in its environment) runs the terminal tool's
// command, which writes what it can find to files the test reads directly (no redaction between
// them and the test): `env` shows only the allow-listed variables plus the one tools.env names,
// and /proc/$PPID/environ of spool itself cannot be read (spool is non-dumpable), while its
// /proc/$PPID/comm shows that $PPID is spool.
func TestTerminalSeesNoKeys(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "SECRETPW") // the test server trusts local users
	// As root, /proc/PID/environ of any process stays readable whatever its dumpable flag, and
	// the threat is a process of the same ordinary user: spool runs as nobody here.
	var asUser []string
	bin := spoolBin
	home, ws := t.TempDir(), t.TempDir()
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("running as root without setpriv: cannot run spool as an ordinary user")
		}
		asUser = []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}
		home, ws = openDir(t), openDir(t)
		bin = filepath.Join(openDir(t), "spool")
		data, err := os.ReadFile(spoolBin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("tools:\n  env: [SPOOL_TEST_PASSED, GO*]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"SPOOL_DATABASE_URL=" + u.String(), "OPENAI_API_KEY=sk-SECRET-0123456789",
		"DATABASE_URL=postgres://u:SECRETPW@h/db", "SLACK_CREDS=creds-SECRET-42", "MY_SERVICE=plain-SECRET-value"}
	command := `cat /proc/$PPID/comm > comm.out; cat /proc/$PPID/environ > environ.out 2>environ.err; ` +
		`tr '\0' '\n' < /proc/$PPID/environ | base64 > environ.b64 2>&1; env > env.out`
	argv := append(asUser, bin, "--home", home, "run", "--yes", "--json", fmt.Sprintf(`CALL terminal {"command":%q}`, command))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(cleanEnv(), append(secrets, "HOME="+home, "SPOOL_TEST_PASSED=visible", "GOFLAGS=-count=1")...)
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("spool run: %v\n%s", err, out)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			t.Fatalf("the command wrote no %s: %v", name, err)
		}
		return string(b)
	}
	if comm := strings.TrimSpace(read("comm.out")); comm != "spool" {
		t.Fatalf("$PPID of the command is %q, not spool", comm)
	}
	env := read("env.out")
	for _, want := range []string{"PATH=", "HOME=", "SPOOL_TEST_PASSED=visible", "GOFLAGS=-count=1"} {
		if !strings.Contains(env, want) {
			t.Errorf("the command's environment lacks %s:\n%s", want, env)
		}
	}
	all := env + read("environ.out") + read("environ.b64")
	for _, leak := range []string{"SECRET", "SPOOL_DATABASE_URL", "DATABASE_URL", "_CREDS", "OPENAI_API_KEY", "MY_SERVICE"} {
		if strings.Contains(all, leak) {
			t.Errorf("the command found %s:\nenv:\n%s\n/proc/$PPID/environ:\n%s", leak, env, read("environ.out"))
		}
	}
	if !strings.Contains(read("environ.err"), "Permission denied") {
		t.Errorf("reading spool's /proc/$PPID/environ: %q, want Permission denied", read("environ.err"))
	}
}

// openDir is a directory everyone may use, removed after the test.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "spool-env-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
