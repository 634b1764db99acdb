package telegram

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
	"github.com/spoolhq/spool/internal/platformfake/telegramfake"
	"github.com/spoolhq/spool/internal/simclock"
	"github.com/spoolhq/spool/store"
)

const token = "123456:TEST-token_secret"

var bg = context.Background()

// sleeps records the waits a bot asked for, without waiting (no wall time in verdicts).
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

type rig struct {
	env *platformtest.Env
	api *telegramfake.API
	bot *Bot
	sl  *sleeps
}

// newRig runs a real Bot against a fake Bot API, through a real router on SQLite with the
// offline model. o's zero fields take test defaults.
func newRig(t *testing.T, api *telegramfake.API, po platformtest.Options, o Options) *rig {
	t.Helper()
	if api == nil {
		api = telegramfake.New(t, token)
	}
	env := platformtest.New(t, po)
	sl := &sleeps{}
	o.Token, o.BaseURL, o.Leases = token, api.URL, env.Store
	if o.Holder == "" {
		o.Holder = store.NewHolder().String()
	}
	if o.Sleep == nil {
		o.Sleep = sl.sleep
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 2 * time.Second}
	}
	o.PollTimeout = time.Second
	if o.EditEvery == 0 {
		o.EditEvery = time.Millisecond
	}
	bot, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{env: env, api: api, bot: bot, sl: sl}
}

// settle waits until update id is confirmed and the router is idle.
func (r *rig) settle(t *testing.T, id int64) {
	t.Helper()
	r.api.WaitConfirmed(t, id)
	r.env.Idle(t)
}

func keyOf(t *testing.T, a platform.Address) string {
	t.Helper()
	k, err := platform.DefaultPolicy.Key(a)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestNoTokenInErrors(t *testing.T) {
	t.Parallel()
	b, err := New(Options{Token: token, BaseURL: "http://127.0.0.1:1", Leases: nil, Mode: "webhook", WebhookURL: "https://x", WebhookSecret: "s",
		Sleep: func(ctx context.Context, _ time.Duration) error { return nil }, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Send(bg, platform.Address{ChatID: "1"}, "hi")
	if err == nil || strings.Contains(err.Error(), "TEST-token") {
		t.Fatalf("error %v: want a failure that does not name the token", err)
	}
	if _, err := New(Options{}); err == nil {
		t.Fatal("a bot without a token")
	}
}

// DMs, groups (per user), forum topics (shared per topic): each lane its own session, each
// reply back in its chat and topic, no context across topics.
func TestChatsAndTopics(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, platformtest.Options{}, Options{})
	r.env.Start(t, r.bot)
	a := r.api
	a.Push(10, "private", 0, 10, "hello from a DM")
	a.Push(-100, "supergroup", 0, 1, "alice in the group")
	a.Push(-100, "supergroup", 0, 2, "bob in the group")
	a.Push(-200, "supergroup", 5, 1, "topic five from alice")
	a.Push(-200, "supergroup", 5, 2, "topic five from bob")
	last := a.Push(-200, "supergroup", 6, 1, "SAY **topic** six <ok>")
	r.settle(t, last)

	dm := keyOf(t, platform.Address{Platform: "telegram", ChatType: platform.DM, ChatID: "10"})
	g1 := keyOf(t, platform.Address{Platform: "telegram", ChatType: platform.Group, ChatID: "-100", UserID: "1"})
	g2 := keyOf(t, platform.Address{Platform: "telegram", ChatType: platform.Group, ChatID: "-100", UserID: "2"})
	t5 := keyOf(t, platform.Address{Platform: "telegram", ChatType: platform.Thread, ChatID: "-200", ThreadID: "5"})
	t6 := keyOf(t, platform.Address{Platform: "telegram", ChatType: platform.Thread, ChatID: "-200", ThreadID: "6"})
	for k, want := range map[string]int{dm: 2, g1: 2, g2: 2, t5: 4, t6: 2} {
		ss := r.env.Sessions(t, k)
		if len(ss) != 1 {
			t.Fatalf("%s: %d sessions", k, len(ss))
		}
		tr := r.env.Transcript(t, ss[0].ID)
		if len(tr) != want {
			t.Fatalf("%s holds %q", k, tr)
		}
		if k == t5 && (strings.Contains(strings.Join(tr, "|"), "six") || strings.Contains(strings.Join(tr, "|"), "group")) {
			t.Fatalf("topic five holds other lanes' text: %q", tr)
		}
	}
	if got := answers(a.Texts(-200, 5)); len(got) != 2 {
		t.Fatalf("topic five got %q", got)
	}
	six := a.Messages(-200, 6)
	if len(six) != 1 || six[0].Text != "topic six <ok>" || six[0].ParseMode != "HTML" || !strings.Contains(six[0].Raw, "<b>topic</b> six &lt;ok&gt;") {
		t.Fatalf("topic six got %+v: want bold rendered and the angle brackets escaped", six)
	}
	if got := answers(a.Texts(-100, 0)); len(got) != 2 {
		t.Fatalf("group got %q", got)
	}
}

// A process that died after handling an update but before confirming it: Telegram delivers it
// again to the next process, which starts no second turn and sends nothing twice, and the
// conversation goes on in the same session.
func TestRestartAndRedelivery(t *testing.T) {
	t.Parallel()
	api := telegramfake.New(t, token)
	first := newRig(t, api, platformtest.Options{}, Options{})
	stop := startStoppable(t, first)
	id := api.Push(10, "private", 0, 10, "SAY remember the walrus")
	first.settle(t, id)
	stop()
	api.Unconfirm(id) // the confirming getUpdates never reached Telegram

	second := newRig(t, api, platformtest.Options{DB: first.env.DB}, Options{})
	second.env.Start(t, second.bot)
	id2 := api.Push(10, "private", 0, 10, "SAY still here")
	second.settle(t, id2)
	k := keyOf(t, platform.Address{Platform: "telegram", ChatType: platform.DM, ChatID: "10"})
	ss := second.env.Sessions(t, k)
	if len(ss) != 1 {
		t.Fatalf("%d sessions after the restart", len(ss))
	}
	tr := second.env.Transcript(t, ss[0].ID)
	want := []string{"u: SAY remember the walrus", "a: remember the walrus", "u: SAY still here", "a: still here"}
	if strings.Join(tr, "|") != strings.Join(want, "|") {
		t.Fatalf("transcript %q, want %q", tr, want)
	}
	if got := api.Texts(10, 0); strings.Join(got, "|") != "remember the walrus|still here" {
		t.Fatalf("chat shows %q", got)
	}
}

// startStoppable serves the rig's bot until the returned function is called.
func startStoppable(t *testing.T, r *rig) func() {
	t.Helper()
	r.env.Router.Attach(r.bot)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- r.env.Router.Serve(ctx, r.bot) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("router: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// 429 with retry_after 30 is waited out exactly (through the injected sleeper, no wall
// time), 5xx and a timeout are retried; every reply arrives once.
func TestRateLimitsAndFaults(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, platformtest.Options{}, Options{})
	r.env.Start(t, r.bot)
	a := r.api
	a.Fail("sendMessage", 1, telegramfake.Fault{RetryAfter: 30})
	id := a.Push(10, "private", 0, 10, "SAY one")
	r.settle(t, id)
	a.Fail("sendMessage", 2, telegramfake.Fault{Status: 502})
	id = a.Push(10, "private", 0, 10, "SAY two")
	r.settle(t, id)
	a.Fail("sendMessage", 1, telegramfake.Fault{Hang: true})
	id = a.Push(10, "private", 0, 10, "SAY three")
	r.settle(t, id)
	a.Fail("getUpdates", 2, telegramfake.Fault{Status: 500})
	id = a.Push(10, "private", 0, 10, "SAY four")
	r.settle(t, id)
	if got := strings.Join(a.Texts(10, 0), "|"); got != "one|two|three|four" {
		t.Fatalf("chat shows %q, want each reply once", got)
	}
	var saw30 bool
	for _, d := range r.sl.all() {
		if d == 30*time.Second {
			saw30 = true
		}
	}
	if !saw30 {
		t.Fatalf("retry_after 30 was not honoured: waits %v", r.sl.all())
	}
}

// Editing with an unchanged text ("message is not modified") is success; a reply over 4,096
// characters is split into messages Telegram accepts.
func TestEditAndSplit(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, platformtest.Options{}, Options{})
	to := platform.Address{Platform: "telegram", ChatType: platform.DM, ChatID: "10"}
	id, err := r.bot.Send(bg, to, "same")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.bot.Edit(bg, to, id, "same"); err != nil {
		t.Fatalf("an unchanged edit: %v, want success", err)
	}
	r.env.Start(t, r.bot)
	para := strings.Repeat("word ", 160) // 800 runes
	var say []string
	for range 12 {
		say = append(say, "SAY "+para, "SAY ")
	}
	uid := r.api.Push(11, "private", 0, 11, strings.Join(say, "\n"))
	r.settle(t, uid)
	got := r.api.Messages(11, 0)
	if len(got) < 3 {
		t.Fatalf("%d messages for a ~9,600-character reply, want 3", len(got))
	}
	total := 0
	for _, m := range got {
		if n := len([]rune(m.Text)); n > MaxChars {
			t.Fatalf("a message of %d characters", n)
		}
		total += strings.Count(m.Text, "word")
	}
	if total != 12*160 {
		t.Fatalf("%d words arrived, want %d", total, 12*160)
	}
}

// Webhook mode: the webhook is registered with its secret; a request without the secret is
// refused and records nothing; a redelivered update is answered once.
func TestWebhook(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, platformtest.Options{}, Options{Mode: "webhook", WebhookURL: "https://bot.example/platforms/telegram/webhook", WebhookSecret: "s3cret"})
	r.env.Start(t, r.bot)
	pattern, h := r.bot.Webhook(r.env.Router)
	mux := http.NewServeMux()
	mux.Handle(pattern, h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r.api.WaitFor(t, "setWebhook", func() bool { return r.api.Webhook() != nil })
	if r.api.Webhook()["secret_token"] != "s3cret" || r.api.Webhook()["url"] != "https://bot.example/platforms/telegram/webhook" {
		t.Fatalf("setWebhook got %v", r.api.Webhook())
	}
	id := r.api.Push(12, "private", 0, 12, "SAY hooked")
	body := r.api.UpdateJSON(id)
	post := func(secret string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+pattern, bytes.NewReader(body))
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post(""); c != http.StatusUnauthorized {
		t.Fatalf("no secret: %d", c)
	}
	if c := post("wrong"); c != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d", c)
	}
	r.env.Idle(t)
	if un, _ := r.env.Store.UnfinishedInbound(bg, "telegram", 0); len(un) != 0 || len(r.api.Texts(12, 0)) != 0 {
		t.Fatal("a request without the secret was handled")
	}
	for range 2 {
		if c := post("s3cret"); c != http.StatusOK {
			t.Fatalf("with the secret: %d", c)
		}
	}
	r.env.Idle(t)
	if got := r.api.Texts(12, 0); strings.Join(got, "|") != "hooked" {
		t.Fatalf("chat shows %q, want one answer", got)
	}
}

// Two spool serve processes on one database with the same bot: one polls, the other stands
// by (Telegram would answer two pollers 409); every message is answered once.
func TestOnePollerPerBot(t *testing.T) {
	t.Parallel()
	api := telegramfake.New(t, token)
	a := newRig(t, api, platformtest.Options{}, Options{LeaseTTL: 3 * time.Second})
	standby := make(chan struct{}, 1)
	b := newRig(t, api, platformtest.Options{DB: a.env.DB}, Options{LeaseTTL: 3 * time.Second, OnStandby: func() {
		select {
		case standby <- struct{}{}:
		default:
		}
	}})
	a.env.Start(t, a.bot)
	api.WaitFor(t, "the first poller", func() bool { return api.Polling() > 0 })
	b.env.Start(t, b.bot)
	<-standby
	var last int64
	for i := range 4 {
		last = api.Push(20+int64(i), "private", 0, 20+int64(i), fmt.Sprintf("SAY answer %d", i))
	}
	a.settle(t, last)
	b.env.Idle(t)
	<-standby // still standing by after the messages
	if conflicts := api.Conflicts(); conflicts != 0 {
		t.Fatalf("%d getUpdates conflicts: two processes polled one bot", conflicts)
	}
	for i := range 4 {
		if got := api.Texts(20+int64(i), 0); len(got) != 1 {
			t.Fatalf("chat %d got %q", 20+i, got)
		}
	}
}

// A compaction in a forum topic keeps the topic: the key still names the thread, the route
// follows the rotated session, and replies still land in the topic.
func TestCompactionInTopic(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, platformtest.Options{Rotate: true}, Options{})
	r.env.Start(t, r.bot)
	k := keyOf(t, platform.Address{Platform: "telegram", ChatType: platform.Thread, ChatID: "-300", ThreadID: "9"})
	var id int64
	for i := range 6 {
		id = r.api.Push(-300, "supergroup", 9, 1, fmt.Sprintf("SAY note %d %s", i, strings.Repeat("detail ", 300)))
		r.settle(t, id)
	}
	before := r.env.Sessions(t, k)
	id = r.api.Push(-300, "supergroup", 9, 1, "/compress the notes")
	r.settle(t, id)
	id = r.api.Push(-300, "supergroup", 9, 1, "SAY after compaction")
	r.settle(t, id)
	texts := r.api.Texts(-300, 9)
	if len(texts) != 8 || !strings.HasPrefix(texts[6], "Compacted") || texts[7] != "after compaction" {
		t.Fatalf("topic shows %q", texts)
	}
	if got := r.api.Texts(-300, 0); len(got) != 0 {
		t.Fatalf("replies left the topic: %q", got)
	}
	rt, err := r.env.Store.GetRoute(bg, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 1 || rt.SessionID == before[0].ID {
		t.Fatalf("route %s, sessions before %d: want the rotated continuation", rt.SessionID, len(before))
	}
	tr := r.env.Transcript(t, rt.SessionID)
	if tr[len(tr)-1] != "a: after compaction" || !strings.Contains(strings.Join(tr, "|"), "summary") {
		t.Fatalf("continuation holds %q", tr)
	}
}

// answers drops the "queued" notices (whether a message found its lane busy depends on timing).
func answers(texts []string) []string {
	var out []string
	for _, t := range texts {
		if !strings.HasPrefix(t, "⏳ Queued") {
			out = append(out, t)
		}
	}
	return out
}

// An outage longer than a call's retries loses nothing (what the Telegram soak reported as
// lost: its injected faults piled up into minutes of getUpdates failing through every retry
// and sendMessage failing, and the run ended before they were over). While getUpdates is
// down, polling goes on call after call and confirms nothing; while sendMessage is down, the
// stored reply waits in the inbox (replied); once the API is back, the update is fetched and
// the reply delivered, once.
func TestOutageLongerThanRetries(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, platformtest.Options{Router: platform.Config{RecoverEvery: 10 * time.Millisecond}}, Options{Retries: 2})
	a := r.api
	a.Down("getUpdates", telegramfake.Fault{Status: 500})
	r.env.Start(t, r.bot)
	id := a.Push(10, "private", 0, 10, "SAY after the outage")
	a.WaitFor(t, "three getUpdates calls failed through their retries", func() bool { return a.Calls("getUpdates") >= 3*3 })
	if a.Confirmed() > id {
		t.Fatal("an update was confirmed while getUpdates failed")
	}
	a.Down("sendMessage", telegramfake.Fault{Status: 503})
	a.Up("getUpdates")
	a.WaitConfirmed(t, id)
	state := func() store.InboundState {
		un, err := r.env.Store.UnfinishedInbound(bg, "telegram", 0)
		if err != nil || len(un) != 1 {
			return ""
		}
		return un[0].State
	}
	a.WaitFor(t, "the reply stored while sendMessage is down", func() bool { return state() == store.InboundReplied })
	if got := a.Texts(10, 0); len(got) != 0 {
		t.Fatalf("sent %q while sendMessage was down", got)
	}
	a.Up("sendMessage")
	a.WaitFor(t, "the reply delivered", func() bool { return len(a.Texts(10, 0)) > 0 })
	r.env.Idle(t)
	if got := strings.Join(a.Texts(10, 0), "|"); got != "after the outage" {
		t.Fatalf("chat shows %q, want the reply once", got)
	}
	if un, err := r.env.Store.UnfinishedInbound(bg, "telegram", 0); err != nil || len(un) != 0 {
		t.Fatalf("unfinished after the outage: %v %v", un, err)
	}
}

// Resolve (a handoff's target) asks getChat what the chat is, so the lane's key is the one
// the chat's own messages get: a DM, a forum topic (shared), a plain group (per user: a user
// is needed), a channel; a topic of a chat that is no forum, an unknown chat and a bad topic
// id are refused with one line.
func TestResolve(t *testing.T) {
	t.Parallel()
	api := telegramfake.New(t, token)
	api.AddChat(777, "private", false)
	api.AddChat(-100200, "supergroup", true)
	api.AddChat(-300, "group", false)
	api.AddChat(-400, "channel", false)
	b, err := New(Options{Token: token, BaseURL: api.URL, Leases: platformtest.New(t, platformtest.Options{}).Store, Retries: 1,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		chat, thread, user string
		key, err           string
	}{
		{chat: "777", key: "agent:main:telegram:dm:777"},
		{chat: "-100200", thread: "7", key: "agent:main:telegram:thread:-100200:7"},
		{chat: "-300", user: "42", key: "agent:main:telegram:group:-300:42"},
		{chat: "-300", err: "--user"},
		{chat: "-400", user: "9", key: "agent:main:telegram:channel:-400:9"},
		{chat: "-300", thread: "7", err: "not a forum"},
		{chat: "-999", err: "chat not found"},
		{chat: "-100200", thread: "x", err: "not a positive number"},
	} {
		a, key, err := platform.ResolveTarget(bg, b, platform.DefaultPolicy, tc.chat, tc.thread, tc.user)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "TEST-token") {
				t.Errorf("%s:%s: %v (%+v), want an error naming %q", tc.chat, tc.thread, err, a, tc.err)
			}
		case err != nil || key != tc.key:
			t.Errorf("%s:%s: key %q, %v; want %q", tc.chat, tc.thread, key, err, tc.key)
		}
	}
}

// The per-chat cadence lets a burst of Burst calls go at once (a reply's first message does
// not wait behind the edits before it), then one per EditEvery; another chat has its own
// allowance, and a quiet second refills one call.
// vclock is a virtual clock for one caller at a time: a sleep moves it on by the wait.
type vclock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

func (v *vclock) now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.t
}

func (v *vclock) sleep(ctx context.Context, d time.Duration) error {
	v.mu.Lock()
	v.t = v.t.Add(d)
	v.waits = append(v.waits, d)
	v.mu.Unlock()
	return ctx.Err()
}

// wait is how long one paced call waited.
func (v *vclock) wait(t *testing.T, b *Bot, chat string, c call) time.Duration {
	t.Helper()
	t0 := v.now()
	if err := b.pace(bg, chat, c); err != nil {
		t.Fatal(err)
	}
	return v.now().Sub(t0)
}

func pacedBot(t *testing.T, every time.Duration, sleep platform.Sleeper) *Bot {
	t.Helper()
	b, err := New(Options{Token: token, Mode: "webhook", WebhookURL: "https://x", WebhookSecret: "s", EditEvery: every, Sleep: sleep})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Edits to one chat go Burst-ReplyReserve at once, then one per EditEvery: the burst's last
// calls are left for replies, which take them at once; other chats wait for nothing.
func TestPaceBurst(t *testing.T) {
	t.Parallel()
	v := &vclock{t: time.Unix(1_800_000_000, 0)}
	b := pacedBot(t, time.Second, v.sleep)
	b.now = v.now
	var got []time.Duration
	for range Burst + 2 {
		got = append(got, v.wait(t, b, "-100", callEdit))
	}
	if want := []time.Duration{0, time.Second, time.Second, time.Second, time.Second}; !slices.Equal(got, want) {
		t.Fatalf("edits waited %v, want %v (%d at once, then one a second)", got, want, Burst-ReplyReserve)
	}
	for i := range ReplyReserve {
		if d := v.wait(t, b, "-100", callReply); d != 0 {
			t.Fatalf("reply %d after the edits waited %v, want 0 (the calls the edits left)", i, d)
		}
	}
	if d := v.wait(t, b, "-100", callReply); d != time.Second {
		t.Fatalf("one more reply at once waited %v, want 1 s (the chat's calls spent)", d)
	}
	if d := v.wait(t, b, "777", callEdit); d != 0 {
		t.Fatalf("another chat waited %v", d)
	}
	v.t = v.t.Add(10 * time.Second) // full again
	got = got[:0]
	for _, c := range []call{callReply, callReply, callReply, callReply} {
		got = append(got, v.wait(t, b, "-100", c))
	}
	if want := []time.Duration{0, 0, 0, time.Second}; !slices.Equal(got, want) {
		t.Fatalf("replies after a quiet spell waited %v, want %v (a burst of %d)", got, want, Burst)
	}
}

// A slow case the soak found: a stream's edits (or a notice) as fast as the chat allows, a
// reply's first message, and the next reply 250 ms after it (the other user of a group).
// Both go at once: the edits left them two calls. (With one call left, the second reply
// waited 750 ms for the allowance.)
func TestPaceTwoRepliesFindCalls(t *testing.T) {
	t.Parallel()
	for _, chat := range []string{"5", "-100"} {
		v := &vclock{t: time.Unix(1_800_000_000, 0)}
		b := pacedBot(t, time.Second, v.sleep)
		b.now = v.now
		for round := range 6 {
			v.wait(t, b, chat, callEdit)
			v.wait(t, b, chat, []call{callEdit, callNotice}[round%2])
			if d := v.wait(t, b, chat, callReply); d != 0 {
				t.Fatalf("chat %s, round %d: the first reply waited %v, want 0", chat, round, d)
			}
			v.t = v.t.Add(250 * time.Millisecond)
			if d := v.wait(t, b, chat, callReply); d != 0 {
				t.Fatalf("chat %s, round %d: the reply 250 ms after it waited %v, want 0", chat, round, d)
			}
		}
	}
}

// The soak's slow case: a reply streamed in a chat — its message, then edits or the queued
// notice of a double text as fast as the chat allows — and the next reply's first message
// comes right after them. It goes at once: they left it a call. (Before, they took the
// burst's last call, and the next reply waited up to EditEvery for the allowance.)
func TestPaceReplyFindsLastCall(t *testing.T) {
	t.Parallel()
	for _, chat := range []string{"5", "-100"} {
		v := &vclock{t: time.Unix(1_800_000_000, 0)}
		b := pacedBot(t, time.Second, v.sleep)
		b.now = v.now
		for round := range 6 {
			if d := v.wait(t, b, chat, callReply); d != 0 {
				t.Fatalf("chat %s, round %d: the reply's first message waited %v, want 0", chat, round, d)
			}
			v.wait(t, b, chat, []call{callEdit, callNotice}[round%2])
			v.wait(t, b, chat, callEdit)
		}
	}
}

// A double text in a DM — the notice for the second message, the first's reply, at once the
// second's, whose user saw the notice — then the next message 300 ms later, which found the
// chat idle: its reply goes at once. (With the queued reply as urgent, it took the chat's last
// call and the idle one waited 700 ms: the soak's slow Telegram cases.)
func TestPaceQueuedReplyLeavesCalls(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	s := newSim(t0)
	b := pacedBot(t, time.Second, s.Sleep)
	b.now = s.Now
	went := map[string]func() time.Time{}
	for _, x := range []struct {
		name string
		k    platform.SendKey
		at   time.Duration
	}{{"notice", platform.SendKey{Turn: "b", Chunk: -1}, 0}, {"first", platform.SendKey{Turn: "a"}, 0},
		{"queued", platform.SendKey{Turn: "b", Noticed: true}, 0}, {"idle", platform.SendKey{Turn: "c"}, 300 * time.Millisecond}} {
		s.Advance(t0.Add(x.at))
		went[x.name] = s.Start(func() {
			if err := b.pace(bg, "5", sendCall(platform.WithSendKey(bg, x.k))); err != nil {
				t.Error(err)
			}
		})
	}
	s.Advance(t0.Add(time.Minute))
	for name, w := range map[string]time.Duration{"notice": 0, "first": 0, "idle": 300 * time.Millisecond, "queued": 3 * time.Second} {
		if got := went[name]().Sub(t0); got != w {
			t.Errorf("%s went at +%v, want +%v", name, got, w)
		}
	}
}

// sim is the pacers' virtual clock (internal/simclock).
type sim = simclock.Clock

func newSim(t0 time.Time) *sim { return simclock.New(t0) }

// A reply's first message that finds even the last call spent (three replies just went in a
// group) goes before the edits and notices waiting in its chat, at the first call the
// allowance has again; they move back behind it and each waits until it leaves ReplyReserve
// calls, so the chat still gets no more than the cadence allows.
func TestPaceSendBeforeEdits(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	s := newSim(t0)
	b := pacedBot(t, time.Second, s.Sleep)
	b.now = s.Now
	went := map[string]func() time.Time{}
	for _, x := range []struct {
		name string
		c    call
	}{{"reply0", callReply}, {"reply1", callReply}, {"reply2", callReply}, {"edit", callEdit}, {"notice", callNotice}, {"reply", callReply}} {
		went[x.name] = s.Start(func() {
			if err := b.pace(bg, "-100", x.c); err != nil {
				t.Error(err)
			}
		})
		s.Advance(t0)
	}
	s.Advance(t0.Add(time.Minute))
	for name, w := range map[string]time.Duration{"reply0": 0, "reply1": 0, "reply2": 0, "reply": time.Second, "edit": 4 * time.Second, "notice": 5 * time.Second} {
		if got := went[name]().Sub(t0); got != w {
			t.Errorf("%s went at +%v, want +%v (the reply at the next call; the edit and the notice, which leave two calls, behind it)", name, got, w)
		}
	}
}

// Under any mix of replies, edits and notices arriving at any times, the calls go within
// Telegram's limits, checked as the fake checks them but without its grace (per chat a burst
// of 3 and then one call a second; per group 20 new messages a minute); and a reply whose
// chat had no other reply in the second before it goes at once (in a group, while the
// minute allows), whatever edits and notices went there.
func TestPaceKeepsLimits(t *testing.T) {
	t.Parallel()
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 1))
		s := newSim(time.Unix(1_800_000_000, 0))
		b := pacedBot(t, time.Second, s.Sleep)
		b.now = s.Now
		type arrival struct {
			chat string
			c    call
			at   time.Time
			went func() time.Time
		}
		var arr []*arrival
		gap := []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 4 * time.Second}[seed%3]
		for range 500 {
			s.Advance(s.Now().Add(time.Duration(rng.Float64() * float64(gap))))
			a := &arrival{chat: []string{"5", "-100"}[rng.IntN(2)], c: call(rng.IntN(3)), at: s.Now()}
			a.went = s.Start(func() {
				if err := b.pace(bg, a.chat, a.c); err != nil {
					t.Error(err)
				}
			})
			arr = append(arr, a)
		}
		s.Advance(s.Now().Add(time.Hour))
		calls, sends := map[string][]time.Time{}, map[string][]time.Time{}
		for i, a := range arr {
			g := a.went()
			if g.IsZero() {
				t.Fatalf("seed %d: call %d never went", seed, i)
			}
			calls[a.chat] = append(calls[a.chat], g)
			if a.c == callEdit {
				continue
			}
			if a.c == callReply && !g.Equal(a.at) {
				quiet, minute := true, 0
				for _, o := range arr[:i] {
					og := o.went()
					if o.c == callReply && o.chat == a.chat && og.After(a.at.Add(-time.Second)) {
						quiet = false
					}
					if o.c != callEdit && o.chat == a.chat && og.After(a.at.Add(-groupWindow)) {
						minute++
					}
				}
				if quiet && (a.chat == "5" || minute < GroupPerMinute-1) {
					t.Errorf("seed %d: reply %d to chat %s waited %v though no other reply went there in the second before it", seed, i, a.chat, g.Sub(a.at))
				}
			}
			sends[a.chat] = append(sends[a.chat], g)
		}
		for chat, gs := range calls {
			slices.SortFunc(gs, func(x, y time.Time) int { return x.Compare(y) })
			tokens, at := float64(Burst), gs[0]
			for i, g := range gs {
				tokens = min(Burst, tokens+float64(g.Sub(at))/float64(time.Second))
				at = g
				if tokens < 1-1e-6 {
					t.Fatalf("seed %d: call %d to chat %s at +%v is over the per-chat limit (%.3f calls left)", seed, i, chat, g.Sub(gs[0]), tokens)
				}
				tokens--
			}
		}
		ss := sends["-100"]
		slices.SortFunc(ss, func(x, y time.Time) int { return x.Compare(y) })
		for i := GroupPerMinute; i < len(ss); i++ {
			if ss[i].Sub(ss[i-GroupPerMinute]) < time.Minute {
				t.Fatalf("seed %d: new messages %d and %d to the group went %v apart (at most %d a minute)", seed, i-GroupPerMinute, i, ss[i].Sub(ss[i-GroupPerMinute]), GroupPerMinute)
			}
		}
	}
}

// A group gets at most GroupPerMinute new messages a minute (Telegram's limit), then the
// next waits until the minute since the first has passed; edits there and new messages in a
// DM are not held by it.
func TestPaceGroupPerMinute(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	v := &vclock{t: t0}
	b := pacedBot(t, time.Millisecond, v.sleep)
	b.now = v.now
	var longest time.Duration
	for range GroupPerMinute + 5 {
		longest = max(longest, v.wait(t, b, "777", callReply))
	}
	g0 := v.now()
	for range GroupPerMinute {
		longest = max(longest, v.wait(t, b, "-100", callReply))
	}
	longest = max(longest, v.wait(t, b, "-100", callEdit))
	if longest >= time.Second {
		t.Fatalf("waited %v within the limits (a DM's messages, a group's first %d, an edit)", longest, GroupPerMinute)
	}
	v.wait(t, b, "-100", callReply)
	if got := v.now().Sub(g0); got != groupWindow {
		t.Fatalf("the group's message %d went %v after its first, want %v (a minute and the margin)", GroupPerMinute+1, got, groupWindow)
	}
}

// A failed call is retried at once the first time, then after a backoff that doubles from
// 500 ms with jitter, at most 30 s.
func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n        int
		u        float64
		min, max time.Duration
	}{
		{1, 0.99, 0, 0}, {2, 0, 250 * time.Millisecond, 250 * time.Millisecond}, {2, 0.999, 499 * time.Millisecond, 500 * time.Millisecond},
		{3, 0, 500 * time.Millisecond, 500 * time.Millisecond}, {4, 0.5, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{20, 0.999, 29 * time.Second, 30 * time.Second},
	} {
		if d := Backoff(c.n, c.u); d < c.min || d > c.max {
			t.Errorf("Backoff(%d, %v) = %v, want %v..%v", c.n, c.u, d, c.min, c.max)
		}
	}
}

// A 5xx is retried at once, then after backoffs: three failures cost two waits.
func TestRetryAtOnceFirst(t *testing.T) {
	t.Parallel()
	api := telegramfake.New(t, token)
	api.AddChat(-5, "supergroup", false)
	api.Fail("getChat", 3, telegramfake.Fault{Status: 502})
	sl := &sleeps{}
	b, err := New(Options{Token: token, BaseURL: api.URL, Mode: "webhook", WebhookURL: "https://x", WebhookSecret: "s", Sleep: sl.sleep})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Resolve(bg, "-5", ""); err != nil {
		t.Fatal(err)
	}
	got := sl.all()
	if api.Calls("getChat") != 4 || len(got) != 2 || got[0] < 250*time.Millisecond || got[0] > 500*time.Millisecond ||
		got[1] < 500*time.Millisecond || got[1] > time.Second {
		t.Fatalf("%d calls, waits %v: want 4 calls, the first retry at once, then 250-500 ms and 0.5-1 s", api.Calls("getChat"), got)
	}
}
