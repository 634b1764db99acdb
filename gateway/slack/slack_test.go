package slack_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/slack"
	"github.com/spoolhq/spool/internal/platformfake/slackfake"
)

// recorder is a platform.Handler keeping what it was handed (deduplicating by EventID, as the
// Router's inbox does) and failing while fail > 0.
type recorder struct {
	mu      sync.Mutex
	events  []platform.Event
	seen    map[string]bool
	calls   int
	fail    int
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{seen: map[string]bool{}, changed: make(chan struct{})} }

func (r *recorder) Handle(_ context.Context, ev platform.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	defer func() { close(r.changed); r.changed = make(chan struct{}) }()
	if r.fail > 0 {
		r.fail--
		return errors.New("store unavailable")
	}
	if !r.seen[ev.EventID] {
		r.seen[ev.EventID] = true
		r.events = append(r.events, ev)
	}
	return nil
}

func (r *recorder) wait(t *testing.T, n int) []platform.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r.mu.Lock()
		if len(r.events) >= n {
			out := append([]platform.Event(nil), r.events...)
			r.mu.Unlock()
			return out
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waited for %d events, have %d", n, len(r.events))
		}
	}
}

func (r *recorder) waitCalls(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r.mu.Lock()
		c, ch := r.calls, r.changed
		r.mu.Unlock()
		if c >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waited for %d handler calls, have %d", n, c)
		}
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("8f742231b10e8888abcd99yyyzzz85a5")
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"event_callback"}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	good := slack.Sign(secret, ts, body)
	h := func(ts, sig string) http.Header {
		hd := http.Header{}
		if ts != "" {
			hd.Set("X-Slack-Request-Timestamp", ts)
		}
		if sig != "" {
			hd.Set("X-Slack-Signature", sig)
		}
		return hd
	}
	old := strconv.FormatInt(now.Add(-5*time.Minute-time.Second).Unix(), 10)
	future := strconv.FormatInt(now.Add(5*time.Minute+time.Second).Unix(), 10)
	for _, tc := range []struct {
		name string
		hd   http.Header
		body []byte
		want error
	}{
		{"good", h(ts, good), body, nil},
		{"edge of the window", h(strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 10), slack.Sign(secret, strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 10), body)), body, nil},
		{"stale", h(old, slack.Sign(secret, old, body)), body, slack.ErrStale},
		{"from the future", h(future, slack.Sign(secret, future, body)), body, slack.ErrStale},
		{"tampered body", h(ts, good), []byte(`{"type":"event_callback","x":1}`), slack.ErrBadSignature},
		{"other secret", h(ts, slack.Sign([]byte("other"), ts, body)), body, slack.ErrBadSignature},
		{"no signature", h(ts, ""), body, slack.ErrNoSignature},
		{"no timestamp", h("", good), body, slack.ErrNoSignature},
		{"timestamp not a number", h("12a", good), body, slack.ErrNoSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := slack.Verify(secret, tc.hd, tc.body, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestSignatureKnownVector is Slack's documented example (api.slack.com/authentication/verifying-requests-from-slack).
func TestSignatureKnownVector(t *testing.T) {
	t.Parallel()
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	got := slack.Sign([]byte("8f742231b10e8888abcd99yyyzzz85a5"), "1531420618", []byte(body))
	if want := "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

type env struct {
	fake   *slackfake.Server
	ad     *slack.Adapter
	rec    *recorder
	url    string
	secret []byte
	now    time.Time
	sleeps *sleeps
}

type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func setup(t *testing.T, socket bool) *env {
	t.Helper()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	e := &env{fake: fake, rec: newRecorder(), secret: []byte("s3cret-signing"), now: time.Unix(1_800_000_000, 0), sleeps: &sleeps{}}
	c := slack.NewClient(slack.ClientConfig{BaseURL: fake.URL, Token: fake.BotToken, AppToken: fake.AppToken,
		Sleep: e.sleeps.sleep, HTTP: &http.Client{Timeout: 2 * time.Second}})
	e.ad, err = slack.New(slack.Config{Client: c, SigningSecret: e.secret, Socket: socket, Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	pattern, h := e.ad.Webhook(e.rec)
	if pattern != slack.WebhookPattern {
		t.Fatalf("pattern %q", pattern)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.ad.Run(ctx, e.rec) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return e
}

func (e *env) post(t *testing.T, body []byte, retry int) int {
	t.Helper()
	st, err := slackfake.Post(context.Background(), http.DefaultClient, e.url, e.secret, e.now, body, retry)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestEventsAPI(t *testing.T) {
	t.Parallel()
	e := setup(t, false)

	// url_verification is answered with its challenge
	body := []byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	if st := e.post(t, body, 0); st != http.StatusOK {
		t.Fatalf("url_verification: %d", st)
	}

	dm := &slackfake.Message{Channel: "D0DM1", User: "U1", Text: "hello in a DM"}
	ch := &slackfake.Message{Channel: "C0CHAN", User: "U2", Text: "hello in a channel"}
	th := &slackfake.Message{Channel: "C0CHAN", User: "U3", Text: "hello in a thread", ThreadTS: "1800000000.000100"}
	for _, m := range []*slackfake.Message{dm, ch, th} {
		if st := e.post(t, e.fake.Event(m), 0); st != http.StatusOK {
			t.Fatalf("event: %d", st)
		}
	}
	// a retry of the channel message (same event_id), and the same mention as app_mention
	// (another event_id, the same ts): the handler's inbox takes each message once
	if st := e.post(t, e.fake.Event(ch), 1); st != http.StatusOK {
		t.Fatalf("retry: %d", st)
	}
	mention := *ch
	mention.EventID = ""
	if st := e.post(t, e.fake.Event(&mention), 0); st != http.StatusOK {
		t.Fatalf("mention: %d", st)
	}
	// the bot's own message and an edit are acked and dropped
	bot := []byte(`{"type":"event_callback","team_id":"T0FAKE","event_id":"EvBOT","event":{"type":"message","channel":"C0CHAN","user":"U0BOT","bot_id":"B0BOT","text":"mine","ts":"1800000001.000001"}}`)
	edit := []byte(`{"type":"event_callback","team_id":"T0FAKE","event_id":"EvEDIT","event":{"type":"message","subtype":"message_changed","channel":"C0CHAN","ts":"1800000001.000002"}}`)
	for _, b := range [][]byte{bot, edit} {
		if st := e.post(t, b, 0); st != http.StatusOK {
			t.Fatalf("ignored event: %d", st)
		}
	}

	got := e.rec.wait(t, 3)
	want := []platform.Address{
		{Platform: "slack", ChatType: platform.DM, ScopeID: "T0FAKE", ChatID: "D0DM1", UserID: "U1"},
		{Platform: "slack", ChatType: platform.Group, ScopeID: "T0FAKE", ChatID: "C0CHAN", UserID: "U2"},
		{Platform: "slack", ChatType: platform.Thread, ScopeID: "T0FAKE", ChatID: "C0CHAN", ThreadID: "1800000000.000100", UserID: "U3"},
	}
	if len(got) != 3 {
		t.Fatalf("%d events: %+v", len(got), got)
	}
	for i, ev := range got {
		if ev.Address != want[i] {
			t.Errorf("event %d address %+v, want %+v", i, ev.Address, want[i])
		}
	}
	if got[1].EventID != "T0FAKE:C0CHAN:"+ch.TS || got[1].MessageID != ch.TS || got[1].Text != ch.Text {
		t.Errorf("channel event %+v", got[1])
	}
	e.rec.mu.Lock()
	calls := e.rec.calls
	e.rec.mu.Unlock()
	if calls != 5 { // three messages, the retry, the mention; not the bot's or the edit
		t.Errorf("handler called %d times, want 5", calls)
	}
	// keys: the thread is shared, the channel is per user
	k1, _ := platform.DefaultPolicy.Key(got[1].Address)
	k2, _ := platform.DefaultPolicy.Key(got[2].Address)
	if k1 != "agent:main:slack:group:T0FAKE:C0CHAN:U2" || k2 != "agent:main:slack:thread:T0FAKE:C0CHAN:1800000000.000100" {
		t.Errorf("keys %q %q", k1, k2)
	}
}

func TestEventsAPIRefuses(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	body := e.fake.Event(&slackfake.Message{Channel: "C1", User: "U1", Text: "x"})
	for _, tc := range []struct {
		name   string
		secret []byte
		at     time.Time
		want   int
	}{
		{"wrong secret", []byte("nope"), e.now, http.StatusUnauthorized},
		{"stale timestamp", e.secret, e.now.Add(-6 * time.Minute), http.StatusUnauthorized},
	} {
		st, err := slackfake.Post(context.Background(), http.DefaultClient, e.url, tc.secret, tc.at, body, 0)
		if err != nil || st != tc.want {
			t.Errorf("%s: %d %v, want %d", tc.name, st, err, tc.want)
		}
	}
	// a handler that cannot record: 503, so Slack redelivers; the redelivery is taken
	e.rec.mu.Lock()
	e.rec.fail = 1
	e.rec.mu.Unlock()
	if st := e.post(t, body, 0); st != http.StatusServiceUnavailable {
		t.Fatalf("unrecorded event: %d, want 503", st)
	}
	if st := e.post(t, body, 1); st != http.StatusOK {
		t.Fatalf("redelivery: %d", st)
	}
	if got := e.rec.wait(t, 1); len(got) != 1 || got[0].Text != "x" {
		t.Fatalf("events %+v", got)
	}
	if e.ad.Counts()["rejected"] != 2 {
		t.Errorf("counts %v", e.ad.Counts())
	}
}

func TestSocketMode(t *testing.T) {
	t.Parallel()
	e := setup(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.fake.Wait(ctx, func(v slackfake.View) bool { return v.Conns() == 1 }); err != nil {
		t.Fatal(err)
	}
	m1 := &slackfake.Message{Channel: "D0DM1", User: "U1", Text: "one"}
	e.fake.Push(e.fake.Event(m1))
	e.rec.wait(t, 1)
	if err := e.fake.Wait(ctx, func(v slackfake.View) bool { return v.Acked() == 1 && v.Pending() == 0 }); err != nil {
		t.Fatal(err)
	}
	// the handler cannot record: no ack; after a disconnect the envelope comes again and is taken
	e.rec.mu.Lock()
	e.rec.fail = 1
	e.rec.mu.Unlock()
	m2 := &slackfake.Message{Channel: "D0DM1", User: "U1", Text: "two"}
	e.fake.Push(e.fake.Event(m2))
	if err := e.fake.Wait(ctx, func(v slackfake.View) bool { return v.Pending() == 1 }); err != nil {
		t.Fatal(err)
	}
	e.rec.waitCalls(t, 2)
	e.fake.Disconnect()
	got := e.rec.wait(t, 2)
	if got[1].Text != "two" {
		t.Fatalf("events %+v", got)
	}
	if err := e.fake.Wait(ctx, func(v slackfake.View) bool { return v.Pending() == 0 && v.Acked() == 2 }); err != nil {
		t.Fatal(err)
	}
	if e.ad.Counts()["socket_reconnect"] < 1 {
		t.Errorf("counts %v", e.ad.Counts())
	}
}

func TestClientRetries(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	_ = e.ad.Client()
	ctx := context.Background()
	to := platform.Address{Platform: "slack", ChatType: platform.Thread, ChatID: "C1", ThreadID: "1800000000.000001"}

	// 429 with Retry-After 30 is waited out in full, then the post goes through once
	e.fake.Fail("chat.postMessage", slackfake.Fault{Status: 429, RetryAfter: 30})
	id, err := e.ad.Send(ctx, to, "after the rate limit")
	if err != nil {
		t.Fatal(err)
	}
	if s := e.sleeps.all(); len(s) != 1 || s[0] != 30*time.Second {
		t.Fatalf("sleeps %v, want [30s]", s)
	}
	// a 5xx before the post, and a 5xx after it (a crash between send and ack), then a timeout
	// after it: every message exactly once
	e.fake.Fail("chat.postMessage", slackfake.Fault{Status: 500})
	if _, err := e.ad.Send(ctx, to, "after a 500"); err != nil {
		t.Fatal(err)
	}
	e.fake.Fail("chat.postMessage", slackfake.Fault{Status: 502, After: true})
	if _, err := e.ad.Send(ctx, to, "posted, answer lost"); err != nil {
		t.Fatal(err)
	}
	top := platform.Address{Platform: "slack", ChatType: platform.Group, ChatID: "C2"}
	e.fake.Fail("chat.postMessage", slackfake.Fault{Status: 503, After: true})
	if _, err := e.ad.Send(ctx, top, "top level, answer lost"); err != nil {
		t.Fatal(err)
	}
	// edits: a 429 then success; editing a message that is not there fails for good
	e.fake.Fail("chat.update", slackfake.Fault{Status: 429, RetryAfter: 1.5})
	if err := e.ad.Edit(ctx, to, id, "edited"); err != nil {
		t.Fatal(err)
	}
	var apiErr *slack.APIError
	if err := e.ad.Edit(ctx, to, "1.2", "x"); !errors.As(err, &apiErr) || apiErr.Code != "message_not_found" {
		t.Fatalf("edit of a missing message: %v", err)
	}
	// a server that keeps failing: an error after the bounded retries, naming the method
	e.fake.Fail("chat.update", slackfake.Fault{Status: 500}, slackfake.Fault{Status: 500}, slackfake.Fault{Status: 500}, slackfake.Fault{Status: 500})
	if err := e.ad.Edit(ctx, to, id, "never"); !errors.As(err, &apiErr) || apiErr.Status != 500 || apiErr.Method != "chat.update" {
		t.Fatalf("persistent 500: %v", err)
	}
	e.fake.Inspect(func(v slackfake.View) {
		msgs := v.Messages("")
		texts := map[string]int{}
		for _, m := range msgs {
			texts[m.Text]++
		}
		for _, w := range []string{"edited", "after a 500", "posted, answer lost", "top level, answer lost"} {
			if texts[w] != 1 {
				t.Errorf("%q posted %d times (all: %v)", w, texts[w], texts)
			}
		}
		if len(msgs) != 4 {
			t.Errorf("%d messages, want 4: %+v", len(msgs), msgs)
		}
		for _, m := range msgs {
			if m.Channel == "C1" && m.ThreadTS != to.ThreadID {
				t.Errorf("reply outside the thread: %+v", m)
			}
		}
	})
	// a wrong token is an ok:false error that names the code, never the token
	bad := slack.NewClient(slack.ClientConfig{BaseURL: e.fake.URL, Token: "xoxb-wrong-secret", Sleep: e.sleeps.sleep})
	_, err = bad.PostMessage(ctx, "C1", "", "x")
	if !errors.As(err, &apiErr) || apiErr.Code != "invalid_auth" {
		t.Fatalf("bad token: %v", err)
	}
	if s := err.Error(); contains(s, "xoxb-wrong-secret") {
		t.Fatalf("error shows the token: %s", s)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestSendKeyAcrossProcesses: a chunk whose first send went out but whose answer was lost
// (the process died before the ledger heard the ts) is sent again by another process with
// the same SendKey, Unsure: the post carrying its nonce is found, none is added.
func TestSendKeyAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := setup(t, false)
	to := platform.Address{Platform: "slack", ChatType: platform.Thread, ChatID: "C1", ThreadID: "1800000000.000001"}
	k := platform.SendKey{Turn: "slack:T0FAKE:C1:1800000000.000002", Chunk: 0}
	first, err := e.ad.Send(platform.WithSendKey(context.Background(), k), to, "once")
	if err != nil {
		t.Fatal(err)
	}
	k.Unsure = true
	again, err := e.ad.Send(platform.WithSendKey(context.Background(), k), to, "once")
	if err != nil || again != first {
		t.Fatalf("resend: %q %v, want %q", again, err, first)
	}
	other, err := e.ad.Send(platform.WithSendKey(context.Background(), platform.SendKey{Turn: k.Turn, Chunk: 1, Unsure: true}), to, "once")
	if err != nil || other == first {
		t.Fatalf("another chunk: %q %v", other, err)
	}
	e.fake.Inspect(func(v slackfake.View) {
		if n := len(v.Messages("C1")); n != 2 {
			t.Errorf("%d messages, want 2", n)
		}
	})
}

// TestRunRefusedToken: a bot token Slack refuses stops Run with an error that names the
// problem, not the token; a Slack that is down at start does not.
func TestRunRefusedToken(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ad, err := slack.New(slack.Config{Client: slack.NewClient(slack.ClientConfig{BaseURL: fake.URL, Token: "xoxb-refused-secret"})})
	if err != nil {
		t.Fatal(err)
	}
	err = ad.Run(context.Background(), newRecorder())
	if err == nil || !contains(err.Error(), "refused") || contains(err.Error(), "xoxb-refused-secret") {
		t.Fatalf("Run: %v", err)
	}
	fake.Fail("auth.test", slackfake.Fault{Status: 500}, slackfake.Fault{Status: 500}, slackfake.Fault{Status: 500}, slackfake.Fault{Status: 500})
	sl := &sleeps{}
	ad, _ = slack.New(slack.Config{Client: slack.NewClient(slack.ClientConfig{BaseURL: fake.URL, Token: fake.BotToken, Sleep: sl.sleep})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ad.Run(ctx, newRecorder()) }()
	if err := fake.Wait(context.Background(), func(v slackfake.View) bool { return v.Calls("auth.test") == 5 }); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run with Slack down at start: %v", err)
	}
}

// liftingSleeps records each wait and, on the first, lifts the fake's rate limits: the wait
// "passed" without wall time.
type liftingSleeps struct {
	sleeps
	fake *slackfake.Server
}

func (l *liftingSleeps) sleep(ctx context.Context, d time.Duration) error {
	l.fake.SetLimits(slackfake.Limits{})
	return l.sleeps.sleep(ctx, d)
}

// Slack's own rate limit (the fake's, not an injected fault): a post over the channel's
// allowance and an update over the workspace's tier are answered 429 with Retry-After in
// whole seconds; the client waits out exactly that, however long, and the call then goes
// once: every message posted once, every update applied.
func TestRateLimitedBySlack(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	for _, method := range []string{"chat.postMessage", "chat.update"} {
		fake.SetLimits(slackfake.Limits{PostEvery: time.Hour, PostBurst: 1, PerMinute: map[string]int{"chat.update": 1}, Window: 2 * time.Hour})
		ls := &liftingSleeps{fake: fake}
		c := slack.NewClient(slack.ClientConfig{BaseURL: fake.URL, Token: fake.BotToken, Sleep: ls.sleep, Pacing: slack.Pacing{Off: true}})
		ad, err := slack.New(slack.Config{Client: c, BotUser: "U0BOT"})
		if err != nil {
			t.Fatal(err)
		}
		ch := "C-" + method
		to := platform.Address{Platform: "slack", ChatType: platform.Group, ChatID: ch}
		first, err := ad.Send(context.Background(), to, "first")
		if err != nil {
			t.Fatal(err)
		}
		if method == "chat.postMessage" {
			if _, err := ad.Send(context.Background(), to, "second"); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, text := range []string{"first, edited", "first, edited again"} {
				if err := ad.Edit(context.Background(), to, first, text); err != nil {
					t.Fatal(err)
				}
			}
		}
		var texts []string
		var limited int
		fake.Inspect(func(v slackfake.View) {
			for _, m := range v.Messages(ch) {
				texts = append(texts, m.Text)
			}
			limited = v.Limited(method)
		})
		want, wait := []string{"first", "second"}, time.Hour // the channel's next post in an hour
		if method == "chat.update" {
			want, wait = []string{"first, edited again"}, 2*time.Hour // the workspace's next update in two
		}
		if s := ls.all(); !slices.Equal(texts, want) || limited != 1 || len(s) != 1 || s[0] < wait-100*time.Second || s[0] > wait {
			t.Errorf("%s: messages %q, limited %d, waits %v; want %q, one 429, one wait of its Retry-After (%v)", method, texts, limited, s, want, wait)
		}
	}
}

// stepClock is a virtual clock for one caller at a time: a sleep moves it on by the wait.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// Through the adapter, a reply's first post that failed (500) and was retried, and then the
// router's queued notice, leave the channel a post: the next reply's first message takes it
// at once (the client's own pacing, on a virtual clock; every post lands once).
func TestSendLeavesReplyAPost(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	clk := &stepClock{t: time.Unix(1_800_000_000, 0)}
	c := slack.NewClient(slack.ClientConfig{BaseURL: fake.URL, Token: fake.BotToken, Sleep: clk.sleep, Now: clk.now})
	ad, err := slack.New(slack.Config{Client: c, BotUser: "U0BOT"})
	if err != nil {
		t.Fatal(err)
	}
	to := platform.Address{Platform: "slack", ChatType: platform.Group, ChatID: "C1"}
	send := func(turn string, chunk int, text string) time.Duration {
		t.Helper()
		t0 := clk.now()
		ctx := platform.WithSendKey(context.Background(), platform.SendKey{Turn: turn, Chunk: chunk})
		if _, err := ad.Send(ctx, to, text); err != nil {
			t.Fatal(err)
		}
		return clk.now().Sub(t0)
	}
	fake.Fail("chat.postMessage", slackfake.Fault{Status: 500})
	send("A", 0, "reply A") // a 500, 500 ms of backoff, then its retry
	send("B", -1, "queued") // the router's notice for a message into a busy turn
	if d := send("C", 0, "reply C"); d != 0 {
		t.Errorf("the next reply's first message waited %v, want 0 (the retry and the notice leave it a post)", d)
	}
	var texts []string
	fake.Inspect(func(v slackfake.View) {
		for _, m := range v.Messages("C1") {
			texts = append(texts, m.Text)
		}
	})
	if want := []string{"reply A", "queued", "reply C"}; !slices.Equal(texts, want) {
		t.Errorf("posted %q, want %q", texts, want)
	}
}
