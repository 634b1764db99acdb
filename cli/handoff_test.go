package cli_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/platformfake/slackfake"
	"github.com/spoolhq/spool/internal/platformfake/telegramfake"
)

// serveProc is a running `spool serve`.
type serveProc struct {
	url string
	cmd *exec.Cmd
}

var listeningRe = regexp.MustCompile(`listening on (http://\S+)`)

func startServeProc(t *testing.T, home string, env []string) *serveProc {
	t.Helper()
	cmd := exec.Command(spoolBin, "--home", home, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = append(cleanEnv(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd}
	t.Cleanup(p.stop)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := listeningRe.FindStringSubmatch(sc.Text()); m != nil {
			p.url = m[1]
			break
		}
	}
	if p.url == "" {
		t.Fatal("spool serve never said where it listens")
	}
	go func() { // keep draining stderr so the process never blocks on it
		for sc.Scan() {
		}
	}()
	return p
}

func (p *serveProc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// TestHandoffToSlackAndBack: a terminal session is handed to a Slack thread (the same session
// id, bound by the thread's key), the agent posts there where the work stands, a reply in the
// thread through spool serve continues that session, sessions show lists the binding, and
// spool run --resume takes it back with the whole history. Bad targets are one-line errors.
func TestHandoffToSlackAndBack(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	home := t.TempDir()
	cfg := "platforms:\n  slack:\n    token_env: TEST_SLACK_TOKEN\n    signing_secret_env: TEST_SLACK_SECRET\n    base_url: " + fake.URL + "\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := "handoff-signing-secret"
	env := []string{"TEST_SLACK_TOKEN=" + fake.BotToken, "TEST_SLACK_SECRET=" + secret}

	type runOut struct {
		SessionID string `json:"session_id"`
		Reply     string `json:"reply"`
	}
	first := decode[runOut](t, spoolEnv(t, home, "", env, "run", "--output-format", "json", "SAY the plan: step one done, step two next").ok(t, "run"))
	sid := first.SessionID
	const thread = "1800000000.000100"

	type handoffOut struct {
		SessionID string `json:"session_id"`
		Key       string `json:"key"`
		MessageID string `json:"message_id"`
		Reply     string `json:"reply"`
	}
	h := decode[handoffOut](t, spoolEnv(t, home, "", env, "--json", "handoff", sid, "--to", "slack:C0CHAN:"+thread).ok(t, "handoff"))
	if h.SessionID != sid || h.Key != "agent:main:slack:thread:T0FAKE:C0CHAN:"+thread || h.MessageID == "" {
		t.Fatalf("handoff %+v (session %s)", h, sid)
	}
	var posted []slackfake.Posted
	fake.Inspect(func(v slackfake.View) { posted = v.Messages("C0CHAN") })
	if len(posted) != 1 || posted[0].ThreadTS != thread || posted[0].TS != h.MessageID || !strings.Contains(posted[0].Text, "[spool handoff]") || posted[0].Text != h.Reply {
		t.Fatalf("posted %+v, reply %q", posted, h.Reply)
	}

	type shown struct {
		ID       string `json:"id"`
		Bindings []struct {
			Key string `json:"key"`
		} `json:"bindings"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	show := func() shown {
		return decode[shown](t, spoolEnv(t, home, "", env, "--json", "sessions", "show", sid).ok(t, "show"))
	}
	if s := show(); len(s.Bindings) != 1 || s.Bindings[0].Key != h.Key {
		t.Fatalf("bindings %+v", s.Bindings)
	}
	if out := spoolEnv(t, home, "", env, "sessions", "show", sid).ok(t, "show").stdout; !regexp.MustCompile(`Bound to:\s+` + regexp.QuoteMeta(h.Key)).MatchString(out) {
		t.Fatalf("show:\n%s", out)
	}

	// a reply in the thread, through spool serve, continues the same session
	srv := startServeProc(t, home, env)
	body := fake.Event(&slackfake.Message{Channel: "C0CHAN", User: "U1", Text: "SAY continuing in slack", ThreadTS: thread})
	st, err := slackfake.Post(context.Background(), http.DefaultClient, srv.url+"/platforms/slack/events", []byte(secret), time.Now(), body, 0)
	if err != nil || st != http.StatusOK {
		t.Fatalf("event to spool serve: %d %v", st, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := fake.Wait(ctx, func(v slackfake.View) bool { return len(v.Messages("C0CHAN")) == 2 }); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	fake.Inspect(func(v slackfake.View) { posted = v.Messages("C0CHAN") })
	if posted[1].Text != "continuing in slack" || posted[1].ThreadTS != thread {
		t.Fatalf("reply in the thread %+v", posted[1])
	}

	// back in the terminal: the same session, with everything
	back := decode[runOut](t, spoolEnv(t, home, "", env, "run", "--output-format", "json", "--resume", sid, "SAY back in the terminal").ok(t, "run --resume"))
	if back.SessionID != sid {
		t.Fatalf("resume went to %s, want %s", back.SessionID, sid)
	}
	var texts []string
	for _, m := range show().Messages {
		if m.Role == "user" || m.Role == "assistant" {
			texts = append(texts, m.Role+": "+m.Content)
		}
	}
	want := []string{
		"user: SAY the plan: step one done, step two next", "assistant: the plan: step one done, step two next",
		"user: " + "[spool handoff]", "assistant: " + h.Reply,
		"user: SAY continuing in slack", "assistant: continuing in slack",
		"user: SAY back in the terminal", "assistant: back in the terminal",
	}
	if len(texts) != len(want) {
		t.Fatalf("history %q", texts)
	}
	for i := range want {
		if !strings.HasPrefix(texts[i], want[i]) {
			t.Errorf("message %d = %q, want %q...", i, texts[i], want[i])
		}
	}

	// bad targets: one line naming the problem, exit non-zero, nothing bound
	for _, tc := range []struct{ to, want string }{
		{"slack:C0CHAN", "--user"},
		{"discord:500", "platforms.discord is not configured"},
		{"irc:#go", "not telegram, slack or discord"},
		{"slack", "not PLATFORM:CHAT"},
	} {
		r := spoolEnv(t, home, "", env, "handoff", sid, "--to", tc.to)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("handoff --to %s: exit %d, stderr %q", tc.to, r.code, r.stderr)
		}
	}
	if s := show(); len(s.Bindings) != 1 {
		t.Fatalf("bindings after bad handoffs %+v", s.Bindings)
	}
}

// TestChatHandoff: /handoff in spool chat binds the thread to the chat's session and posts
// the agent's status there.
func TestChatHandoff(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	home := t.TempDir()
	cfg := "platforms:\n  slack:\n    token_env: TEST_SLACK_TOKEN\n    signing_secret_env: TEST_SLACK_SECRET\n    base_url: " + fake.URL + "\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TEST_SLACK_TOKEN=" + fake.BotToken, "TEST_SLACK_SECRET=x"}
	r := spoolEnv(t, home, "SAY working on it\n/handoff slack:D0DM1\n", env, "chat").ok(t, "chat")
	m := regexp.MustCompile(`Session (\S+) now continues in slack:D0DM1 \(key agent:main:slack:dm:T0FAKE:D0DM1\)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("chat output:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	var posted []slackfake.Posted
	fake.Inspect(func(v slackfake.View) { posted = v.Messages("D0DM1") })
	if len(posted) != 1 || !strings.Contains(posted[0].Text, "[spool handoff]") {
		t.Fatalf("posted %+v", posted)
	}
	out := spoolEnv(t, home, "", env, "sessions", "show", m[1]).ok(t, "show").stdout
	if !regexp.MustCompile(`Bound to:\s+agent:main:slack:dm:T0FAKE:D0DM1`).MatchString(out) || !strings.Contains(out, "working on it") {
		t.Fatalf("show:\n%s", out)
	}
}

// TestHandoffToTelegram: to a DM and to a forum topic (the topic's key is shared by its
// members), through the Telegram adapter's outbound side against its local fake.
func TestHandoffToTelegram(t *testing.T) {
	t.Parallel()
	const token = "123456:handoff-test-token"
	f := telegramfake.New(t, token)
	f.AddChat(777, "private", false) // what the adapter's getChat finds
	f.AddChat(-100200, "supergroup", true)
	home := t.TempDir()
	cfg := "platforms:\n  telegram:\n    token_env: TEST_TG_TOKEN\n    base_url: " + f.URL + "\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TEST_TG_TOKEN=" + token}
	type runOut struct {
		SessionID string `json:"session_id"`
	}
	sid := decode[runOut](t, spoolEnv(t, home, "", env, "run", "--output-format", "json", "SAY the work so far").ok(t, "run")).SessionID
	type handoffOut struct {
		Key string `json:"key"`
	}
	for _, tc := range []struct {
		to, key      string
		chat, thread int64
	}{
		{"telegram:777", "agent:main:telegram:dm:777", 777, 0},
		{"telegram:-100200:7", "agent:main:telegram:thread:-100200:7", -100200, 7},
	} {
		h := decode[handoffOut](t, spoolEnv(t, home, "", env, "--json", "handoff", sid, "--to", tc.to).ok(t, "handoff "+tc.to))
		if h.Key != tc.key {
			t.Errorf("handoff %s: key %s, want %s", tc.to, h.Key, tc.key)
		}
		if got := f.Texts(tc.chat, tc.thread); len(got) != 1 || !strings.Contains(got[0], "[spool handoff]") {
			t.Errorf("handoff %s: posted %q", tc.to, got)
		}
	}
	out := spoolEnv(t, home, "", env, "sessions", "show", sid).ok(t, "show").stdout
	for _, k := range []string{"agent:main:telegram:dm:777", "agent:main:telegram:thread:-100200:7"} {
		if !regexp.MustCompile(`Bound to:\s+` + regexp.QuoteMeta(k)).MatchString(out) {
			t.Errorf("show lacks %s:\n%s", k, out)
		}
	}
	// a plain group is per user: --user is needed
	if r := spoolEnv(t, home, "", env, "handoff", sid, "--to", "telegram:-100200"); r.code == 0 || !strings.Contains(r.stderr, "--user") {
		t.Errorf("handoff to a plain group: exit %d %q", r.code, r.stderr)
	}
}
