package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true,
		"PGPASSWORD": true, "SLACK_SIGNING_SECRET": true, "GH_PAT": true, "my_db_password": true, "NPM_AUTH": true,
		"PATH": false, "HOME": false, "SSH_AUTH_SOCK": false, "KEYBOARD_LAYOUT": false, "TERM": false, "GOPATH": false,
		"SPOOL_HOME": false, "XAUTHORITY": false,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSecretsRedactAndEnviron(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "OPENAI_API_KEY=sk-SECRET-123", "MY_PROVIDER=abcdefgh12345678", "SHORT_TOKEN=abc",
		"LONG_TOKEN=sk-SECRET-123-and-more", "HOME=/root"}
	s := NewSecrets(environ, "MY_PROVIDER")
	got := s.Redact("a sk-SECRET-123 b abcdefgh12345678 c sk-SECRET-123-and-more abc")
	want := "a [redacted OPENAI_API_KEY] b [redacted MY_PROVIDER] c [redacted LONG_TOKEN] abc"
	if got != want {
		t.Errorf("Redact:\n got %q\nwant %q", got, want)
	}
	var none *Secrets
	if none.Redact("sk-SECRET-123") != "sk-SECRET-123" {
		t.Error("nil Secrets must redact nothing")
	}
}

// TestCommandEnviron: a command sees the base variables and those the config passes (a name or
// a prefix*), nothing else, however its name looks.
func TestCommandEnviron(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "HOME=/root", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "TMPDIR=/tmp",
		"OPENAI_API_KEY=sk-SECRET", "SPOOL_DATABASE_URL=postgres://u:SECRETPW@h/db", "DATABASE_URL=postgres://x",
		"SLACK_CREDS=c", "GOPATH=/go", "GOFLAGS=-mod=mod", "NPM_CONFIG=x", "LC=odd", "=weird"}
	for _, tc := range []struct {
		pass []string
		want string
	}{
		{nil, "PATH=/bin HOME=/root LANG=C.UTF-8 LC_ALL=C TERM=xterm TMPDIR=/tmp"},
		{[]string{"GO*", "DATABASE_URL"}, "PATH=/bin HOME=/root LANG=C.UTF-8 LC_ALL=C TERM=xterm TMPDIR=/tmp DATABASE_URL=postgres://x GOPATH=/go GOFLAGS=-mod=mod"},
	} {
		if got := strings.Join(CommandEnviron(environ, tc.pass), " "); got != tc.want {
			t.Errorf("CommandEnviron(pass %q):\n got %q\nwant %q", tc.pass, got, tc.want)
		}
	}
	// Nothing allowed is an empty environment, not nil (which exec.Cmd takes as "inherit all").
	if got := CommandEnviron([]string{"OPENAI_API_KEY=sk-SECRET"}, nil); got == nil || len(got) != 0 {
		t.Errorf("CommandEnviron with nothing allowed = %#v, want an empty non-nil list", got)
	}
}

// The reproduction: `env | grep _KEY` from the terminal tool must neither see the key
// (the command's environment lacks it) nor return it (a key in output is redacted).
func TestTerminalKeepsKeysOut(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-SECRET-123")
	t.Setenv("CUSTOM_PROVIDER_CRED", "cred-value-98765")
	env := Env{WorkDir: t.TempDir(), Approver: AutoApprove,
		Secrets: NewSecrets(os.Environ(), "CUSTOM_PROVIDER_CRED")}
	res := call(t, env, "terminal", `{"command":"env | grep -E '_KEY|_CRED' ; echo status done"}`)
	if res.IsError || strings.Contains(res.Content, "SECRET-123") || strings.Contains(res.Content, "cred-value") ||
		strings.Contains(res.Content, "OPENAI_API_KEY") {
		t.Fatalf("the command saw a key: %+v", res)
	}
	// A key that reaches output by another way (a file) is redacted in the result.
	dir := env.WorkDir
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("OPENAI_API_KEY=sk-SECRET-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"command":"cat .env"}`, `{"path":".env"}`} {
		tool := "terminal"
		if strings.Contains(args, "path") {
			tool = "read_file"
		}
		res := call(t, env, tool, args)
		if strings.Contains(res.Content, "sk-SECRET-123") || !strings.Contains(res.Content, "[redacted OPENAI_API_KEY]") {
			t.Errorf("%s result not redacted: %q", tool, res.Content)
		}
	}
}

func TestFileToolsConfinedToTheWorkspace(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws := filepath.Join(base, "repo")
	outside := filepath.Join(base, "elsewhere")
	writeTree(t, ws, map[string]string{".git/HEAD": "ref: x\n", "sub/in.txt": "inside\n"})
	writeTree(t, outside, map[string]string{"secret.txt": "outside\n"})
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	var asked []ApprovalRequest
	recordAnd := func(allow bool) Approver {
		return func(_ context.Context, r ApprovalRequest) error {
			asked = append(asked, r)
			if allow {
				return nil
			}
			return fmt.Errorf("%w: the user said no", ErrDenied)
		}
	}
	cases := []struct {
		name     string
		approver Approver
		tool     string
		args     string
		isErr    bool
		want     string
		asks     int
	}{
		// The workspace is the git root, so a subdirectory's parent is still inside.
		{"read inside from a subdir", nil, "read_file", `{"path":"../sub/in.txt"}`, false, "inside", 0},
		{"read outside, no approver", nil, "read_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(outside, "secret.txt")), true,
			"outside the workspace " + ws + " (non-interactive runs need --yes)", 0},
		{"read through a symlink out", nil, "read_file", `{"path":"../link/secret.txt"}`, true, "outside the workspace", 0},
		{"list outside, no approver", nil, "list_files", fmt.Sprintf(`{"dir":%q}`, outside), true, "outside the workspace", 0},
		{"search outside, no approver", nil, "search_files", fmt.Sprintf(`{"pattern":"x","dir":%q}`, outside), true, "outside the workspace", 0},
		{"read outside, approved", recordAnd(true), "read_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(outside, "secret.txt")), false, "outside", 1},
		{"read outside, refused", recordAnd(false), "read_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(outside, "secret.txt")), true,
			"is outside the workspace " + ws + ": not approved: the user said no", 1},
		{"write inside, no approver", nil, "write_file", `{"path":"new.txt","content":"hello\n"}`, false, "created", 0},
		{"write outside, no approver", nil, "write_file", fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(outside, "w.txt")), true,
			"writing " + filepath.Join(outside, "w.txt") + " needs approval", 0},
		{"write outside, refused", recordAnd(false), "write_file", fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(outside, "w.txt")), true,
			"not approved", 1},
	}
	for _, c := range cases {
		asked = nil
		env := Env{WorkDir: filepath.Join(ws, "sub"), Approver: c.approver}
		res := call(t, env, c.tool, c.args)
		if res.IsError != c.isErr || !strings.Contains(res.Content, c.want) || len(asked) != c.asks {
			t.Errorf("%s: %+v (asked %d times), want IsError=%v containing %q asking %d", c.name, res, len(asked), c.isErr, c.want, c.asks)
		}
		if c.asks > 0 && (!asked[0].Outside || asked[0].WorkDir != ws) {
			t.Errorf("%s: request %+v", c.name, asked[0])
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "w.txt")); err == nil {
		t.Error("a refused write outside the workspace happened")
	}
}

func TestConfirmWritesShowsTheDiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": "one\ntwo\nthree\n"})
	var req ApprovalRequest
	env := Env{WorkDir: dir, ConfirmWrites: true, Approver: func(_ context.Context, r ApprovalRequest) error {
		req = r
		return fmt.Errorf("%w: no", ErrDenied)
	}}
	res := call(t, env, "write_file", `{"path":"f.txt","content":"one\nTWO\nthree\n"}`)
	if !res.IsError || req.Tool != "write_file" || req.Outside {
		t.Fatalf("result %+v, request %+v", res, req)
	}
	want := "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
	if req.Diff != want {
		t.Errorf("diff:\n%s\nwant:\n%s", req.Diff, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Errorf("a refused write changed the file: %q", b)
	}
	if q := req.Question(); q != "Write "+filepath.Join(dir, "f.txt")+"?" {
		t.Errorf("question %q", q)
	}
}

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	base := lines(30, func(i int) string { return fmt.Sprint("l", i) })
	twoEdits := strings.Replace(strings.Replace(base, "l5\n", "L5\n", 1), "l25\n", "L25\n", 1)
	for _, c := range []struct{ name, old, new, want string }{
		{"new file", "", "a\nb\n", "--- f\n+++ f\n@@ -1,0 +1,2 @@\n+a\n+b\n"},
		{"unchanged", "a\n", "a\n", "(f is unchanged)"},
		{"two hunks", base, twoEdits, "--- f\n+++ f\n@@ -2,7 +2,7 @@\n l2\n l3\n l4\n-l5\n+L5\n l6\n l7\n l8\n" +
			"@@ -22,7 +22,7 @@\n l22\n l23\n l24\n-l25\n+L25\n l26\n l27\n l28\n"},
		{"append", "a\n", "a\nb\n", "--- f\n+++ f\n@@ -1,1 +1,2 @@\n a\n+b\n"},
	} {
		if got := unifiedDiff("f", c.old, c.new); got != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, got, c.want)
		}
	}
	big := lines(3000, func(i int) string { return fmt.Sprint("a", i) })
	other := lines(3000, func(i int) string { return fmt.Sprint("b", i) })
	if got := unifiedDiff("f", big, other); !strings.Contains(got, "3000 lines replaced by 3000 lines") {
		t.Errorf("a huge rewrite: %q", got[:min(len(got), 200)])
	}
	if got := unifiedDiff("f", lines(500, func(i int) string { return "x" }), ""); !strings.Contains(got, "(diff cut after 400 lines)") {
		t.Errorf("long diff not cut: %d bytes", len(got))
	}
}
