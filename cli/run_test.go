package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/testbin"
)

// startFakeLLM builds cmd/fakellm once and runs it as a real process on a free port; it returns
// the base URL (without /v1).
func startFakeLLM(t testing.TB, extra ...string) string {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "github.com/spoolhq/spool/cmd/fakellm"), append([]string{"-addr", "127.0.0.1:0"}, extra...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = nil // its closing statistics are noise here
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("fakellm did not print its URL: %v", err)
	}
	return strings.TrimSpace(line)
}

// viaFake are the flags that point spool run at a fakellm process through the OpenAI adapter.
func viaFake(url string, args ...string) []string {
	return append([]string{"run", "--provider", "openai", "--base-url", url + "/v1", "--model", "fake-model"}, args...)
}

type runOut struct {
	SessionID string `json:"session_id"`
	Reply     string `json:"reply"`
	Usage     struct {
		InputTokens     int64 `json:"input_tokens"`
		OutputTokens    int64 `json:"output_tokens"`
		CacheReadTokens int64 `json:"cache_read_tokens"`
		APICalls        int64 `json:"api_calls"`
	} `json:"usage"`
	ModelCalls  int   `json:"model_calls"`
	ToolCalls   int   `json:"tool_calls"`
	CacheBreaks []any `json:"cache_breaks"`
}

type shownMessages struct {
	ID       string `json:"id"`
	Messages []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

func (s shownMessages) roles() []string {
	out := make([]string, len(s.Messages))
	for i, m := range s.Messages {
		out[i] = m.Role
		if len(m.ToolCalls) > 0 {
			out[i] += fmt.Sprintf("(%d calls)", len(m.ToolCalls))
		}
	}
	return out
}

func TestRunTurnsAgainstFakeLLM(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()

	first := decode[runOut](t, spool(t, home, viaFake(url, "--json", `CALL read_file {"path":"doc.go"}`)...).ok(t, "first run"))
	if first.SessionID == "" || !strings.Contains(first.Reply, "read_file returned") || first.Usage.InputTokens == 0 ||
		first.ModelCalls != 2 || first.ToolCalls != 1 || first.CacheBreaks == nil {
		t.Fatalf("first turn: %+v", first)
	}
	plain := spool(t, home, viaFake(url, "--resume", first.SessionID, "thanks")...).ok(t, "plain resume")
	if !strings.HasPrefix(plain.stdout, "Answer ") || strings.Count(plain.stdout, "\n") != 1 {
		t.Errorf("plain reply on stdout = %q", plain.stdout)
	}
	if strings.Contains(plain.stderr, "offline") {
		t.Errorf("offline notice with a provider configured: %q", plain.stderr)
	}
	third := decode[runOut](t, spool(t, home, viaFake(url, "--json", "--resume", first.SessionID[:18],
		"CALL read_file {\"path\":\"run.go\"}\nCALL list_files {}")...).ok(t, "resume by prefix"))
	if third.SessionID != first.SessionID || third.ToolCalls != 2 || third.Usage.CacheReadTokens == 0 || len(third.CacheBreaks) != 0 {
		t.Errorf("third turn: %+v", third)
	}
	cont := decode[runOut](t, spool(t, home, viaFake(url, "--json", "--continue", "SAY done")...).ok(t, "continue"))
	if cont.SessionID != first.SessionID || cont.Reply != "done" {
		t.Errorf("--continue: %+v", cont)
	}

	shown := decode[shownMessages](t, spool(t, home, "sessions", "show", first.SessionID, "--json").ok(t, "show"))
	want := []string{"user", "assistant(1 calls)", "tool", "assistant", "user", "assistant", "user", "assistant(2 calls)", "tool", "tool", "assistant", "user", "assistant"}
	if got := shown.roles(); !slices.Equal(got, want) {
		t.Fatalf("stored roles %v, want %v", got, want)
	}
	if c := shown.Messages[7].ToolCalls; c[0].Function.Name != "read_file" || c[1].Function.Name != "list_files" {
		t.Errorf("tool calls %+v", c)
	}
	if !strings.Contains(shown.Messages[8].Content, "spool run") {
		t.Errorf("read_file result does not hold run.go: %.80q", shown.Messages[8].Content)
	}
	list := decode[[]listedSession](t, spool(t, home, "sessions", "list", "--json").ok(t, "list"))
	if len(list) != 1 || list[0].ID != first.SessionID {
		t.Errorf("sessions list: %+v", list)
	}
}

func TestRunConcurrentResumesTakeTurns(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t, "-latency", "20ms")
	home := t.TempDir()
	sid := decode[runOut](t, spool(t, home, viaFake(url, "--json", "start")...).ok(t, "start")).SessionID
	const n = 4
	cmds := make([]*exec.Cmd, n)
	outs := make([]*strings.Builder, n)
	for i := range n {
		cmd := exec.Command(spoolBin, append([]string{"--home", home}, viaFake(url, "--resume", sid,
			fmt.Sprintf("CALL read_file {\"path\":\"doc.go\"}\nCALL list_files {\"path\":\"p%d\"}", i))...)...)
		cmd.Env = cleanEnv()
		outs[i] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		cmds[i] = cmd
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	shown := decode[shownMessages](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show"))
	want := []string{"user", "assistant"}
	for range n {
		want = append(want, "user", "assistant(2 calls)", "tool", "tool", "assistant")
	}
	if got := shown.roles(); !slices.Equal(got, want) {
		t.Fatalf("turns interleaved: %v", got)
	}
	seen := map[string]bool{}
	for i := 2; i < len(shown.Messages); i += 5 {
		user, call := shown.Messages[i], shown.Messages[i+1]
		arg := call.ToolCalls[1].Function.Arguments
		if !strings.Contains(user.Content, arg) {
			t.Errorf("turn at %d: the call %s does not answer %q", i, arg, user.Content)
		}
		seen[arg] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct turns, want %d", len(seen), n)
	}
}

func TestRunBadInput(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	sid := decode[runOut](t, spool(t, home, viaFake(url, "--json", "hello")...).ok(t, "first")).SessionID

	offline := spool(t, t.TempDir(), "run", "hi").ok(t, "offline")
	if strings.Count(offline.stderr, "\n") != 1 || !strings.Contains(offline.stderr, "offline model") || !strings.HasPrefix(offline.stdout, "Answer ") {
		t.Errorf("offline run: stdout %q stderr %q", offline.stdout, offline.stderr)
	}

	// A provider that accepts one key only, as the real API does: a wrong key is a 401.
	locked := startFakeLLM(t, "-api-key", "sk-the-right-key-0001")
	lockedRun := func(args ...string) []string {
		return append([]string{"run", "--provider", "openai", "--base-url", locked + "/v1", "--model", "fake-model"}, args...)
	}

	noKey := []string{"OPENAI_API_KEY="}
	cases := []struct {
		name  string
		stdin string
		env   []string
		args  []string
		code  int
		msg   string
		saved string // the message kept in sid when the run reached the model ("" when nothing may change)
	}{
		{"unknown session", "", noKey, viaFake(url, "--resume", "nosuch", "hi"), 1, `session "nosuch" not found`, ""},
		{"resume and continue", "", noKey, viaFake(url, "--resume", sid, "--continue", "hi"), 2, "exclude each other", ""},
		{"unknown provider", "", noKey, []string{"run", "--provider", "llamas", "hi"}, 2, `unknown provider "llamas"`, ""},
		{"no api key", "", noKey, []string{"run", "--provider", "openai", "--model", "gpt-4o", "hi"}, 1, "OPENAI_API_KEY", ""},
		{"empty prompt", "", noKey, viaFake(url, "  "), 2, "prompt is empty", ""},
		{"10 MB paste", strings.Repeat("x", 10<<20), noKey, viaFake(url, "--resume", sid, "-"), 1, "input is 10.0 MB", ""},
		{"invalid api key", "", []string{"OPENAI_API_KEY=sk-a-wrong-key-9999"}, lockedRun("--resume", sid, "is my key right?"), 1,
			"check the API key, then send again): openai: auth (HTTP 401): Incorrect API key provided: sk-", "is my key right?"},
	}
	for _, c := range cases {
		before := snapshot(t, home)
		shownBefore := decode[shownMessages](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show before "+c.name))
		r := spoolEnv(t, home, c.stdin, c.env, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || !strings.HasPrefix(r.stderr, "spool: ") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d with %q", c.name, r.code, r.stderr, c.code, c.msg)
		}
		if lines := strings.SplitN(r.stderr, "\n", 2); c.code == 1 && len(lines) > 1 && strings.TrimSpace(lines[1]) != "" {
			t.Errorf("%s: more than one line on stderr: %q", c.name, r.stderr)
		}
		if c.saved == "" {
			if after := snapshot(t, home); after != before {
				t.Errorf("%s: bad input changed the store:\nbefore %s\nafter  %s", c.name, before, after)
			}
			continue
		}
		// The run reached the model: what was stored stays, and the new message is kept.
		shownAfter := decode[shownMessages](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show after "+c.name))
		n := len(shownBefore.Messages)
		if len(shownAfter.Messages) != n+1 || !slices.Equal(shownAfter.roles()[:n], shownBefore.roles()) ||
			shownAfter.Messages[n].Role != "user" || shownAfter.Messages[n].Content != c.saved {
			t.Errorf("%s: history %v became %v", c.name, shownBefore.roles(), shownAfter.roles())
		}
		for i := range n {
			if shownAfter.Messages[i].Content != shownBefore.Messages[i].Content {
				t.Errorf("%s: message %d changed from %q to %q", c.name, i, shownBefore.Messages[i].Content, shownAfter.Messages[i].Content)
			}
		}
	}
	// Provider down: a clear one-line error, the message is kept, the session goes on.
	down := spool(t, home, "run", "--provider", "openai", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--resume", sid, "still there?")
	if down.code != 1 || !strings.Contains(down.stderr, "message is saved") || !strings.Contains(down.stderr, "network") {
		t.Errorf("provider down: exit %d, stderr %q", down.code, down.stderr)
	}
	spool(t, home, viaFake(url, "--resume", sid, "back again")...).ok(t, "after the outage")
	shown := decode[shownMessages](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show"))
	if got := shown.roles(); !slices.Equal(got, []string{"user", "assistant", "user", "user", "user", "assistant"}) || shown.Messages[3].Content != "still there?" {
		t.Errorf("history after the outage: %v", got)
	}
}

// TestRunToolsSafeByDefault: without --yes, file tools stay inside the workspace (reads and
// writes outside are refused with a reason the model sees, nothing is touched), writes inside
// go ahead; with --yes a command still never sees or stores a provider key.
func TestRunToolsSafeByDefault(t *testing.T) {
	t.Parallel()
	home, ws, outside := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) runOut {
		t.Helper()
		cmd := exec.Command(spoolBin, append([]string{"--home", home, "run", "--json"}, args...)...)
		cmd.Env = append(cleanEnv(), env...)
		cmd.Dir = ws
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("spool run %q: %v\n%s", args, err, out)
		}
		var r runOut
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
		return r
	}
	// toolResult is what the model was told: the stored tool row of a run's session.
	toolResult := func(r runOut) string {
		t.Helper()
		shown := decode[shownMessages](t, spool(t, home, "sessions", "show", r.SessionID, "--json").ok(t, "show"))
		for _, m := range shown.Messages {
			if m.Role == "tool" {
				return m.Content
			}
		}
		t.Fatalf("no tool result in %+v", shown)
		return ""
	}
	secret := filepath.Join(outside, "secret.txt")
	got := toolResult(run(nil, fmt.Sprintf(`CALL read_file {"path":%q}`, secret)))
	if strings.Contains(got, "TOPSECRET") || !strings.Contains(got, "is outside the workspace "+ws) ||
		!strings.Contains(got, "pass --yes to allow it") || strings.Count(got, "\n") > 0 {
		t.Errorf("read outside the workspace: %q", got)
	}
	target := filepath.Join(outside, "written.txt")
	got = toolResult(run(nil, fmt.Sprintf(`CALL write_file {"path":%q,"content":"x"}`, target)))
	if _, err := os.Stat(target); err == nil || !strings.Contains(got, "is outside the workspace") {
		t.Errorf("write outside the workspace happened or was not explained: %q", got)
	}
	run(nil, `CALL write_file {"path":"inside.txt","content":"fine\n"}`)
	if b, err := os.ReadFile(filepath.Join(ws, "inside.txt")); err != nil || string(b) != "fine\n" {
		t.Errorf("write inside the workspace: %q, %v", b, err)
	}

	key := "sk-SECRET-123-" + strings.Repeat("x", 8)
	r := run([]string{"OPENAI_API_KEY=" + key, "MY_SERVICE_TOKEN=tok-0123456789"}, "--yes",
		`CALL terminal {"command":"env | grep -E '_KEY|_TOKEN'; echo done-listing"}`)
	if !strings.Contains(toolResult(r), "done-listing") {
		t.Fatalf("the command did not run: %q", toolResult(r))
	}
	shown := spool(t, home, "sessions", "show", r.SessionID, "--json").ok(t, "show").stdout
	found := spool(t, home, "search", "SECRET", "--json").ok(t, "search").stdout
	for _, leak := range []string{key, "tok-0123456789", "OPENAI_API_KEY="} {
		if strings.Contains(r.Reply+shown+found, leak) {
			t.Errorf("%q reached the transcript or the search index:\n%s", leak, shown)
		}
	}
}
