package slack_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
	"github.com/spoolhq/spool/gateway/slack"
	"github.com/spoolhq/spool/internal/platformfake/slackfake"
)

// served is a real Router (SQLite, offline model, gateway) with the real Slack adapter against
// the fake, its Events API endpoint on a local HTTP server.
type served struct {
	env    *platformtest.Env
	fake   *slackfake.Server
	ad     *slack.Adapter
	url    string
	secret []byte
	stop   func()
}

func serveSlack(t *testing.T, fake *slackfake.Server, o platformtest.Options, socket bool) *served {
	t.Helper()
	env := platformtest.New(t, o)
	s := &served{env: env, fake: fake, secret: []byte("e2e-secret")}
	sl := &sleeps{}
	c := slack.NewClient(slack.ClientConfig{BaseURL: fake.URL, Token: fake.BotToken, AppToken: fake.AppToken, Sleep: sl.sleep,
		HTTP: &http.Client{Timeout: 2 * time.Second}})
	var err error
	s.ad, err = slack.New(slack.Config{Client: c, SigningSecret: s.secret, Socket: socket})
	if err != nil {
		t.Fatal(err)
	}
	_, h := s.ad.Webhook(env.Router)
	env.Router.Attach(s.ad) // as spool serve does: events posted before Serve's goroutine runs are recorded (was a 503 race)
	srv := httptest.NewServer(h)
	s.url = srv.URL
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.Router.Serve(ctx, s.ad) }()
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	t.Cleanup(s.stop)
	return s
}

func (s *served) say(t *testing.T, m *slackfake.Message, retry int) {
	t.Helper()
	st, err := slackfake.Post(context.Background(), http.DefaultClient, s.url, s.secret, time.Now(), s.fake.Event(m), retry)
	if err != nil || st != http.StatusOK {
		t.Fatalf("event: %d %v", st, err)
	}
}

func texts(ps []slackfake.Posted, thread string) []string {
	var out []string
	for _, p := range ps {
		if p.ThreadTS == thread {
			out = append(out, p.Text)
		}
	}
	return out
}

func waitFake(t *testing.T, f *slackfake.Server, cond func(v slackfake.View) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Wait(ctx, cond); err != nil {
		var all []slackfake.Posted
		f.Inspect(func(v slackfake.View) { all = v.Messages("") })
		t.Fatalf("%v; posted: %+v", err, all)
	}
}

// TestSlackEndToEnd: DMs, a channel (per user), a thread (shared), a redelivered event and a
// mention twice, a 429 and a 5xx on the reply — each message answered exactly once, in its
// own channel and thread, each lane its own session.
func TestSlackEndToEnd(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	s := serveSlack(t, fake, platformtest.Options{}, false)

	dm := &slackfake.Message{Channel: "D0DM1", User: "U1", Text: "SAY dm answer"}
	s.say(t, dm, 0)
	s.say(t, dm, 1) // Slack's retry of the same event
	ann := &slackfake.Message{Channel: "C0CHAN", User: "U1", Text: "SAY ann's answer"}
	bob := &slackfake.Message{Channel: "C0CHAN", User: "U2", Text: "SAY bob's answer"}
	fake.Fail("chat.postMessage", slackfake.Fault{Status: 429, RetryAfter: 30}, slackfake.Fault{Status: 500, After: true})
	s.say(t, ann, 0)
	s.env.Idle(t)
	s.say(t, bob, 0)
	mention := *bob
	mention.EventID = "" // the same message as app_mention
	s.say(t, &mention, 0)
	th1 := &slackfake.Message{Channel: "C0CHAN", User: "U1", Text: "SAY thread one", ThreadTS: ann.TS}
	th2 := &slackfake.Message{Channel: "C0CHAN", User: "U2", Text: "SAY thread two", ThreadTS: ann.TS}
	s.say(t, th1, 0)
	s.env.Idle(t)
	s.say(t, th2, 0)
	s.env.Idle(t)

	fake.Inspect(func(v slackfake.View) {
		if got := texts(v.Messages("D0DM1"), ""); strings.Join(got, "|") != "dm answer" {
			t.Errorf("DM replies %q", got)
		}
		if got := texts(v.Messages("C0CHAN"), ""); strings.Join(got, "|") != "ann's answer|bob's answer" {
			t.Errorf("channel replies %q", got)
		}
		if got := texts(v.Messages("C0CHAN"), ann.TS); strings.Join(got, "|") != "thread one|thread two" {
			t.Errorf("thread replies %q", got)
		}
	})
	keys := map[string]string{
		"agent:main:slack:dm:T0FAKE:D0DM1":                "u: SAY dm answer|a: dm answer",
		"agent:main:slack:group:T0FAKE:C0CHAN:U1":         "u: SAY ann's answer|a: ann's answer",
		"agent:main:slack:group:T0FAKE:C0CHAN:U2":         "u: SAY bob's answer|a: bob's answer",
		"agent:main:slack:thread:T0FAKE:C0CHAN:" + ann.TS: "u: SAY thread one|a: thread one|u: SAY thread two|a: thread two",
	}
	for k, want := range keys {
		ss := s.env.Sessions(t, k)
		if len(ss) != 1 {
			t.Errorf("key %s: %d sessions", k, len(ss))
			continue
		}
		if got := strings.Join(s.env.Transcript(t, ss[0].ID), "|"); got != want {
			t.Errorf("key %s transcript %q, want %q", k, got, want)
		}
	}
}

// TestSlackBusyAndRestart: a message during a running turn of its thread is queued (the user
// is told) and answered after it, never interleaved; after the gateway restarts on the same
// database (Socket Mode this time), the thread goes on in the same session.
func TestSlackBusyAndRestart(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	s := serveSlack(t, fake, platformtest.Options{}, false)
	bg := context.Background()
	first := &slackfake.Message{Channel: "C0CHAN", User: "U1", Text: "WAIT hold 2\nSAY first answer", ThreadTS: "1800000000.000001"}
	s.say(t, first, 0)
	if err := s.env.Model.AwaitBarrier(bg, "hold", 1); err != nil {
		t.Fatal(err)
	}
	second := &slackfake.Message{Channel: "C0CHAN", User: "U2", Text: "SAY second answer", ThreadTS: "1800000000.000001"}
	s.say(t, second, 0)
	waitFake(t, fake, func(v slackfake.View) bool { return len(v.Messages("C0CHAN")) == 1 }) // the queued notice
	s.say(t, &slackfake.Message{Channel: "D0OTHER", User: "U9", Text: "WAIT hold 2\nSAY release"}, 0)
	s.env.Idle(t)
	var got []string
	fake.Inspect(func(v slackfake.View) { got = texts(v.Messages("C0CHAN"), first.ThreadTS) })
	if len(got) != 3 || !strings.Contains(got[0], "Queued") || got[1] != "first answer" || got[2] != "second answer" {
		t.Fatalf("thread replies %q", got)
	}
	key := "agent:main:slack:thread:T0FAKE:C0CHAN:1800000000.000001"
	ss := s.env.Sessions(t, key)
	if len(ss) != 1 {
		t.Fatalf("%d sessions", len(ss))
	}
	want := "u: WAIT hold 2\nSAY first answer|a: first answer|u: SAY second answer|a: second answer"
	if got := strings.Join(s.env.Transcript(t, ss[0].ID), "|"); got != want {
		t.Fatalf("transcript %q", got)
	}

	// restart: a new process on the same database, over Socket Mode
	s.stop()
	s2 := serveSlack(t, fake, platformtest.Options{DB: s.env.DB}, true)
	waitFake(t, fake, func(v slackfake.View) bool { return v.Conns() == 1 })
	fake.Push(fake.Event(&slackfake.Message{Channel: "C0CHAN", User: "U1", Text: "SAY after the restart", ThreadTS: "1800000000.000001"}))
	waitFake(t, fake, func(v slackfake.View) bool {
		return len(texts(v.Messages("C0CHAN"), first.ThreadTS)) == 4 && v.Pending() == 0
	})
	s2.env.Idle(t)
	ss2 := s2.env.Sessions(t, key)
	if len(ss2) != 1 || ss2[0].ID != ss[0].ID {
		t.Fatalf("after the restart: sessions %v, want the one %s", ss2, ss[0].ID)
	}
	if got := s2.env.Transcript(t, ss[0].ID); len(got) != 6 || got[5] != "a: after the restart" {
		t.Fatalf("transcript after the restart %q", got)
	}
}

// TestSlackHandoffCommand: /handoff in a DM moves its session to a thread: the thread's key is
// bound to the DM's session, the agent posts there, and the thread's replies continue it.
func TestSlackHandoffCommand(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	s := serveSlack(t, fake, platformtest.Options{}, false)
	s.env.Router.Command("handoff", platform.HandoffCommand(s.env.Router, s.env.Store, map[string]platform.Adapter{"slack": s.ad}, nil))
	s.say(t, &slackfake.Message{Channel: "D0DM1", User: "U1", Text: "SAY started in a DM"}, 0)
	s.env.Idle(t)
	s.say(t, &slackfake.Message{Channel: "D0DM1", User: "U1", Text: "/handoff slack:C0CHAN:1800000000.000500"}, 0)
	s.env.Idle(t)
	s.say(t, &slackfake.Message{Channel: "C0CHAN", User: "U2", Text: "SAY going on in the thread", ThreadTS: "1800000000.000500"}, 0)
	s.env.Idle(t)
	var dm, thread []string
	fake.Inspect(func(v slackfake.View) {
		dm = texts(v.Messages("D0DM1"), "")
		thread = texts(v.Messages("C0CHAN"), "1800000000.000500")
	})
	if len(dm) != 2 || !strings.HasPrefix(dm[1], "Handed this session") {
		t.Fatalf("DM %q", dm)
	}
	if len(thread) != 2 || !strings.Contains(thread[0], "[spool handoff]") || thread[1] != "going on in the thread" {
		t.Fatalf("thread %q", thread)
	}
	ss := s.env.Sessions(t, "agent:main:slack:dm:T0FAKE:D0DM1")
	if len(ss) != 1 {
		t.Fatalf("DM sessions %v", ss)
	}
	rt, err := s.env.Store.GetRoute(context.Background(), "agent:main:slack:thread:T0FAKE:C0CHAN:1800000000.000500")
	if err != nil || rt.SessionID != ss[0].ID {
		t.Fatalf("thread route %+v %v, want session %s", rt, err, ss[0].ID)
	}
	tr := s.env.Transcript(t, ss[0].ID)
	if len(tr) != 6 || tr[0] != "u: SAY started in a DM" || tr[5] != "a: going on in the thread" {
		t.Fatalf("transcript %q", tr)
	}
}
