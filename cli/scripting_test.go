package cli_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	r := spool(t, t.TempDir(), "--version").ok(t, "version")
	// The commit is shown when the build recorded it (TestBuildVersion).
	if strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "spool ") ||
		!strings.Contains(r.stdout, "· SQLite 3.") ||
		!strings.Contains(r.stdout, "· driver modernc.org/sqlite") {
		t.Errorf("--version printed %q", r.stdout)
	}
}

// TestRunInputFromStdin: "-" reads the prompt from stdin; text piped beside a prompt is appended
// to it (it used to be dropped silently); an empty pipe changes nothing.
func TestRunInputFromStdin(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, c := range []struct {
		name, stdin string
		args        []string
		user        string
	}{
		{"dash reads the prompt", "SAY from stdin\n", []string{"-"}, "SAY from stdin"},
		{"piped text is appended", "line one\nline two\n", []string{"what failed?"}, "what failed?\n\nline one\nline two"},
		{"empty pipe", "", []string{"just this"}, "just this"},
		{"no argument reads the prompt", "SAY piped q\n", nil, "SAY piped q"},
	} {
		out := decode[runOut](t, spoolIn(t, home, c.stdin, append([]string{"run", "--json"}, c.args...)...).ok(t, c.name))
		shown := decode[shownMessages](t, spool(t, home, "sessions", "show", out.SessionID, "--json").ok(t, "show"))
		if len(shown.Messages) == 0 || shown.Messages[0].Role != "user" || shown.Messages[0].Content != c.user {
			t.Errorf("%s: stored %+v, want the user message %q", c.name, shown.Messages, c.user)
		}
	}
	if r := spoolIn(t, home, "  \n", "run", "-"); r.code != 2 || !strings.Contains(r.stderr, "the prompt is empty") {
		t.Errorf("empty prompt on stdin: %d %q", r.code, r.stderr)
	}
}

// TestRunStreamJSON: one JSON event per line as the turn runs, in the order things happened,
// ending with the result; --json with another format is refused.
func TestRunStreamJSON(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := spool(t, home, "run", "--output-format", "stream-json", `CALL list_files {"dir":"."}`).ok(t, "stream-json")
	var types []string
	var last map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", sc.Text(), err)
		}
		if tp, _ := ev["type"].(string); len(types) == 0 || types[len(types)-1] != tp {
			types = append(types, tp)
		}
		last = ev
	}
	if got := strings.Join(types, ","); got != "init,tool_call,tool_result,delta,result" {
		t.Errorf("event types in order %q", got)
	}
	res, _ := last["result"].(map[string]any)
	if sid, _ := res["session_id"].(string); sid == "" || res["tool_calls"] != 1.0 || res["context_window"] != 128000.0 {
		t.Errorf("final event %v", last)
	}
	for _, c := range [][]string{{"run", "--json", "--output-format", "stream-json", "x"}, {"run", "--output-format", "yaml", "x"}, {"chat", "--json"}} {
		if r := spool(t, home, c...); r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", c, r.code, r.stderr)
		}
	}
}

// TestContinueIsPerDirectory: --continue picks the most recent session started in the current
// directory, not the most recent one anywhere.
func TestContinueIsPerDirectory(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	a, b := t.TempDir(), t.TempDir()
	runIn := func(dir string, args ...string) runOut {
		t.Helper()
		cmd := exec.Command(spoolBin, append([]string{"--home", home, "run", "--json"}, args...)...)
		cmd.Env, cmd.Dir = cleanEnv(), dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %v in %s: %v", args, dir, err)
		}
		var r runOut
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	inA := runIn(a, "SAY in a")
	runIn(b, "SAY in b")
	if again := runIn(a, "--continue", "SAY a again"); again.SessionID != inA.SessionID {
		t.Errorf("--continue in %s went to %s, want %s", a, again.SessionID, inA.SessionID)
	}
	cmd := exec.Command(spoolBin, "--home", home, "run", "--continue", "hi")
	cmd.Env, cmd.Dir = cleanEnv(), t.TempDir()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--continue: no session was started in ") {
		t.Errorf("--continue in a fresh directory: %v %q", err, out)
	}
}

// TestCompletion: the completion command is there, and completes session ids with their titles.
func TestCompletion(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	sid := decode[runOut](t, spool(t, home, "run", "--json", "SAY hello").ok(t, "run")).SessionID
	spool(t, home, "sessions", "rename", sid, "my\ttitle").ok(t, "rename")
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := spool(t, home, "completion", sh).ok(t, sh); !strings.Contains(r.stdout, "spool") {
			t.Errorf("completion %s printed %d bytes", sh, len(r.stdout))
		}
	}
	for _, c := range [][]string{{"__complete", "sessions", "show", ""}, {"__complete", "run", "--resume", sid[:8]}} {
		r := spool(t, home, c...).ok(t, "complete")
		if !strings.Contains(r.stdout, sid+"\tmy title\n") {
			t.Errorf("%v: %q", c, r.stdout)
		}
	}
	if r := spool(t, home, "--help").ok(t, "help"); !strings.Contains(r.stdout, "completion") {
		t.Errorf("completion is not listed in --help")
	}
}

// TestUnknownPriceIsNotZero: an unknown model's cost shows "n/a", not a made-up $0.0000.
func TestUnknownPriceIsNotZero(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	sid := decode[runOut](t, spool(t, home, "run", "--json", "SAY hello").ok(t, "run")).SessionID
	r := spool(t, home, "sessions", "show", sid).ok(t, "show")
	if !strings.Contains(r.stdout, "cost n/a (price of fake not known)") || strings.Contains(r.stdout, "$0.0000") {
		t.Errorf("sessions show:\n%s", r.stdout)
	}
}

// TestContextWindowFromConfigAndTable: one source of truth for the window: --context-length, then
// provider.context_length, then the table of known models.
func TestContextWindowFromConfigAndTable(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	window := func(args ...string) float64 {
		t.Helper()
		r := spool(t, home, append([]string{"run", "--output-format", "json"}, args...)...).ok(t, "run")
		var v map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatal(err)
		}
		return v["context_window"].(float64)
	}
	if w := window("--provider", "fake", "--model", "claude-sonnet-4-5", "SAY x"); w != 200000 {
		t.Errorf("known model: window %v, want the table's 200000", w)
	}
	if w := window("--context-length", "8000", "SAY x"); w != 8000 {
		t.Errorf("--context-length: %v", w)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("provider:\n  context_length: 32000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if w := window("SAY x"); w != 32000 {
		t.Errorf("provider.context_length: %v", w)
	}
}

// TestFirstRunShowsTheAgent: the README's first command, on the offline model, visibly works as
// an agent: it calls a tool on the directory and answers from what it found. With --provider fake
// (the plain scripted model the tests use) the same message is only echoed.
func TestFirstRunShowsTheAgent(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string) {
		cmd := exec.Command(spoolBin, append([]string{"--home", home, "run"}, args...)...)
		cmd.Env, cmd.Dir = cleanEnv(), dir
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("run %v: %v\n%s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	out, errs := run("summarize the files in this directory")
	if !strings.Contains(errs, "⚙ list_files") || !strings.Contains(out, "1 directories and 1 files") ||
		!strings.Contains(out, "notes.md") || !strings.Contains(out, "src/") || !strings.Contains(out, "offline model") {
		t.Errorf("first run:\nstdout %s\nstderr %s", out, errs)
	}
	// The guide names the config file of the home in use, not the default one.
	if want := "Configure a provider in " + filepath.Join(home, "config.yaml"); !strings.Contains(out, want) {
		t.Errorf("first run does not say %q:\n%s", want, out)
	}
	out, errs = run("--provider", "fake", "summarize the files in this directory")
	if strings.Contains(errs, "list_files") || !strings.Contains(out, "you said") {
		t.Errorf("--provider fake should only echo:\nstdout %s\nstderr %s", out, errs)
	}
}
