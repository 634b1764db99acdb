package discord_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/discord"
	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
)

type recorder struct {
	mu      sync.Mutex
	events  []platform.Event
	seen    map[string]bool
	calls   int
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{seen: map[string]bool{}, changed: make(chan struct{})} }

func (r *recorder) Handle(_ context.Context, ev platform.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if !r.seen[ev.EventID] {
		r.seen[ev.EventID] = true
		r.events = append(r.events, ev)
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

func (r *recorder) waitCalls(t *testing.T, n int) []platform.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r.mu.Lock()
		c, ch, evs := r.calls, r.changed, append([]platform.Event(nil), r.events...)
		r.mu.Unlock()
		if c >= n {
			return evs
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waited for %d handler calls, have %d", n, c)
		}
	}
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

// startFake starts a fake Discord, closed when the test ends.
func startFake(t *testing.T) *discordfake.Server {
	t.Helper()
	fake, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return fake
}

// running is an adapter whose Run is going: cancel stops it, done gives Run's result.
type running struct {
	ad     *discord.Adapter
	cancel context.CancelFunc
	done   chan error
}

// start makes an adapter from cfg for fake (its token and URL, a 2 s HTTP timeout), runs it on
// h and returns once the fake saw it connect.
func start(t *testing.T, fake *discordfake.Server, cfg discord.Config, h platform.Handler) running {
	t.Helper()
	cfg.Token, cfg.BaseURL, cfg.HTTP = fake.Token, fake.URL, &http.Client{Timeout: 2 * time.Second}
	ad, err := discord.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := running{ad: ad, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- ad.Run(ctx, h) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	if err := fake.Wait(wctx, func(v discordfake.View) bool { return v.Ready() == 1 }); err != nil {
		t.Fatalf("waiting for the first connection: %v", err)
	}
	return r
}

// stop ends Run and fails the test on its error.
func (r running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func setup(t *testing.T) (*discordfake.Server, *discord.Adapter, *recorder, *sleeps) {
	t.Helper()
	fake := startFake(t)
	sl := &sleeps{}
	rec := newRecorder()
	r := start(t, fake, discord.Config{Sleep: sl.sleep}, rec)
	t.Cleanup(func() { r.stop(t) })
	return fake, r.ad, rec, sl
}

func TestIntake(t *testing.T) {
	t.Parallel()
	fake, _, rec, _ := setup(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	fake.AddChannel("501", discordfake.PublicThread, "500")
	fake.AddChannel("600", discordfake.DMChannel, "")

	fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "42", Username: "ann", Content: "in a DM"})
	ch := fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Username: "bob", Content: "in a channel"})
	fake.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "44", Username: "cy", Content: "in a thread"})
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "77", Username: "otherbot", Content: "beep", Bot: true})
	fake.Redeliver(ch)
	got := rec.waitCalls(t, 4)
	want := []platform.Address{
		{Platform: "discord", ChatType: platform.DM, ChatID: "600", UserID: "42"},
		{Platform: "discord", ChatType: platform.Group, ChatID: "500", UserID: "43"},
		{Platform: "discord", ChatType: platform.Thread, ChatID: "500", ThreadID: "501", UserID: "44"},
	}
	if len(got) != 3 {
		t.Fatalf("events %+v", got)
	}
	for i := range want {
		if got[i].Address != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i].Address, want[i])
		}
	}
	if got[1].EventID != ch || got[1].Text != "in a channel" || got[1].UserName != "bob" {
		t.Errorf("channel event %+v", got[1])
	}
	keys := map[string]bool{}
	for _, ev := range got {
		k, err := platform.DefaultPolicy.Key(ev.Address)
		if err != nil {
			t.Fatal(err)
		}
		keys[k] = true
	}
	for _, k := range []string{"agent:main:discord:dm:600", "agent:main:discord:group:500:43", "agent:main:discord:thread:500:501"} {
		if !keys[k] {
			t.Errorf("key %s missing from %v", k, keys)
		}
	}
	rec.mu.Lock()
	calls := rec.calls
	rec.mu.Unlock()
	if calls != 4 { // three messages and the redelivery; the other bot's is not handed on
		t.Errorf("handler called %d times, want 4", calls)
	}
}

func TestResumeAfterDrop(t *testing.T) {
	t.Parallel()
	fake, _, rec, _ := setup(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: "before"})
	rec.waitCalls(t, 1)
	fake.Drop()
	// said while the bot is away: replayed by RESUME
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: "while away"})
	got := rec.waitCalls(t, 2)
	if got[1].Text != "while away" {
		t.Fatalf("events %+v", got)
	}
	fake.Inspect(func(v discordfake.View) {
		if v.Resumes() != 1 || v.Identifies() != 1 {
			t.Errorf("identifies %d resumes %d, want 1 and 1", v.Identifies(), v.Resumes())
		}
	})
}

func TestSend(t *testing.T) {
	t.Parallel()
	fake, ad, _, sl := setup(t)
	ctx := context.Background()
	thread := platform.Address{Platform: "discord", ChatType: platform.Thread, ChatID: "500", ThreadID: "501"}
	fake.Fail("POST messages", discordfake.Fault{Status: 429, RetryAfter: 30})
	id, err := ad.Send(ctx, thread, "hello thread")
	if err != nil {
		t.Fatal(err)
	}
	sl.mu.Lock()
	if len(sl.d) != 1 || sl.d[0] != 30*time.Second {
		t.Errorf("sleeps %v, want [30s]", sl.d)
	}
	sl.mu.Unlock()
	fake.Fail("POST messages", discordfake.Fault{Status: 500, After: true})
	if _, err := ad.Send(ctx, thread, "made, answer lost"); err != nil {
		t.Fatal(err)
	}
	fake.Fail("POST messages", discordfake.Fault{Status: 503})
	if _, err := ad.Send(ctx, thread, "after a 503"); err != nil {
		t.Fatal(err)
	}
	fake.Fail("PATCH messages", discordfake.Fault{Status: 429, RetryAfter: 2.5}, discordfake.Fault{Status: 502})
	if err := ad.Edit(ctx, thread, id, "hello thread, edited"); err != nil {
		t.Fatal(err)
	}
	var de *discord.Error
	if err := ad.Edit(ctx, thread, "123", "x"); !errors.As(err, &de) || de.Code != 10008 || de.Status != 404 {
		t.Fatalf("edit of an unknown message: %v", err)
	}
	if _, err := ad.Send(ctx, thread, strings.Repeat("x", 2001)); !errors.As(err, &de) || de.Code != 50035 {
		t.Fatalf("2001 characters: %v", err)
	}
	fake.Fail("POST messages", discordfake.Fault{Status: 500}, discordfake.Fault{Status: 500}, discordfake.Fault{Status: 500}, discordfake.Fault{Status: 500})
	if _, err := ad.Send(ctx, thread, "never"); !errors.As(err, &de) || de.Status != 500 {
		t.Fatalf("persistent 500: %v", err)
	}
	fake.Inspect(func(v discordfake.View) {
		msgs := v.Messages("")
		if len(msgs) != 3 {
			t.Fatalf("messages %+v", msgs)
		}
		for _, m := range msgs {
			if m.ChannelID != "501" {
				t.Errorf("reply outside the thread: %+v", m)
			}
		}
		if msgs[0].Content != "hello thread, edited" || msgs[1].Content != "made, answer lost" || msgs[2].Content != "after a 503" {
			t.Errorf("messages %+v", msgs)
		}
	})
	if ad.Limits().MaxChars != 2000 {
		t.Errorf("limits %+v", ad.Limits())
	}
}

func TestBadToken(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	ad, err := discord.New(discord.Config{Token: "wrong-secret-token", BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = ad.Run(ctx, newRecorder())
	if err == nil || strings.Contains(err.Error(), "wrong-secret-token") {
		t.Fatalf("Run with a bad token: %v", err)
	}
}

// TestSendKeyAcrossProcesses: the same SendKey sent again (another process, after a crash
// between send and ack) carries the same enforce_nonce, so Discord returns the first message.
func TestSendKeyAcrossProcesses(t *testing.T) {
	t.Parallel()
	fake, ad, _, _ := setup(t)
	to := platform.Address{Platform: "discord", ChatType: platform.Group, ChatID: "500"}
	k := platform.SendKey{Turn: "discord:123", Chunk: 0}
	first, err := ad.Send(platform.WithSendKey(context.Background(), k), to, "once")
	if err != nil {
		t.Fatal(err)
	}
	k.Unsure = true
	again, err := ad.Send(platform.WithSendKey(context.Background(), k), to, "once")
	if err != nil || again != first {
		t.Fatalf("resend: %q %v, want %q", again, err, first)
	}
	fake.Inspect(func(v discordfake.View) {
		if n := len(v.Messages("500")); n != 1 {
			t.Errorf("%d messages, want 1", n)
		}
	})
}

// TestThreadLookupRetried: GET /channels/{id} failing twice does not put a thread's message in
// its channel's lane: the lookup is retried and the message keyed as the thread.
func TestThreadLookupRetried(t *testing.T) {
	t.Parallel()
	fake, _, rec, _ := setup(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	fake.AddChannel("502", discordfake.PublicThread, "500")
	fake.Fail("GET channel", discordfake.Fault{Status: 500}, discordfake.Fault{Status: 503})
	fake.Say(discordfake.UserMessage{ChannelID: "502", AuthorID: "43", Content: "in a thread"})
	got := rec.waitCalls(t, 1)
	want := platform.Address{Platform: "discord", ChatType: platform.Thread, ChatID: "500", ThreadID: "502", UserID: "43"}
	if got[0].Address != want {
		t.Fatalf("address %+v, want %+v", got[0].Address, want)
	}
}

// TestStartRetried: Discord refusing the first gateway connections (away while the bot
// starts) delays the start, with growing waits through the sleeper, and does not end Run;
// the fourth attempt connects and messages flow.
func TestStartRetried(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.Refuse(3)
	fake.AddChannel("600", discordfake.DMChannel, "")
	sl := &sleeps{}
	rec := newRecorder()
	r := start(t, fake, discord.Config{Sleep: sl.sleep}, rec)
	ad := r.ad
	fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "41", Username: "ann", Content: "hello after the outage"})
	if evs := rec.waitCalls(t, 1); evs[0].Text != "hello after the outage" {
		t.Fatalf("events %+v", evs)
	}
	r.stop(t)
	var refused int
	fake.Inspect(func(v discordfake.View) { refused = v.Refused() })
	sl.mu.Lock()
	waits := append([]time.Duration(nil), sl.d...)
	sl.mu.Unlock()
	if refused != 3 || len(waits) < 3 || waits[0] != 500*time.Millisecond || waits[1] != time.Second || waits[2] != 2*time.Second {
		t.Fatalf("refused %d, waits %v: want three refusals waited out 0.5 s, 1 s, 2 s", refused, waits)
	}
	if ad.Counts()["open_retries"] != 3 {
		t.Fatalf("counts %v", ad.Counts())
	}
}

// TestStartStoppedWhileAway: a bot stopped while Discord still refuses it ends Run without
// an error (nothing failed but the wait).
func TestStartStoppedWhileAway(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.Refuse(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	ad, err := discord.New(discord.Config{Token: fake.Token, BaseURL: fake.URL, HTTP: &http.Client{Timeout: 2 * time.Second},
		Sleep: func(c context.Context, _ time.Duration) error {
			if n++; n == 5 {
				cancel()
			}
			return c.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ad.Run(ctx, newRecorder()); err != nil {
		t.Fatalf("Run stopped while Discord was away: %v", err)
	}
	var refused int
	fake.Inspect(func(v discordfake.View) { refused = v.Refused() })
	if refused != 5 {
		t.Fatalf("refused %d connections, want 5 (one per attempt until stopped)", refused)
	}
}

// blocking is a Handler that holds every event until released.
type blocking struct {
	got     chan platform.Event
	release chan struct{}
}

func (b blocking) Handle(_ context.Context, ev platform.Event) error {
	b.got <- ev
	<-b.release
	return nil
}

// TestStopWaitsForHandOn: a message read off the socket while the bot stops is handed on
// before Run returns (so the router records it while its store is open: Discord does not
// deliver it again to the next process); Run waits for the hand-on, and nothing is handed on
// after it returned.
func TestStopWaitsForHandOn(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddChannel("600", discordfake.DMChannel, "")
	h := blocking{got: make(chan platform.Event, 1), release: make(chan struct{})}
	r := start(t, fake, discord.Config{}, h)
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "41", Username: "ann", Content: "sent as the bot stops"})
	select {
	case <-h.got:
	case <-wctx.Done():
		t.Fatal("the message never reached the handler")
	}
	r.cancel()
	if err := fake.Wait(wctx, func(v discordfake.View) bool { return v.Ready() == 0 }); err != nil {
		t.Fatal(err) // the socket is closed: Run is in its stop
	}
	select {
	case err := <-r.done:
		t.Fatalf("Run returned (%v) while the message was still being handed on", err)
	default:
	}
	close(h.release)
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestStopReadsWhatWasSent: messages Discord wrote to the socket just before the bot stops
// are read and handed on before the socket closes (StopGrace): the next process identifies
// as a new session, which Discord does not replay them to. Without the grace, a gateway
// restart right after a message lost it (the platform soak with restarts every 500 ms lost
// 170 of 185 messages; one in 5,000 in a 10-minute run).
func TestStopReadsWhatWasSent(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddChannel("600", discordfake.DMChannel, "")
	rec := newRecorder()
	r := start(t, fake, discord.Config{StopGrace: 2 * time.Second}, rec)
	fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "41", Username: "ann", Content: "one"})
	fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "41", Username: "ann", Content: "two"})
	r.stop(t) // the bot stops as the messages are on their way
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.events) != 2 {
		t.Fatalf("handed on %d of the 2 messages sent before the stop", len(rec.events))
	}
}

// TestNoConnectionAfterStop: a socket dropped just before the bot stops starts discordgo's
// reconnect loop, which does not stop with the session; its later success is closed again, so
// no connection stays open after Run returned.
func TestNoConnectionAfterStop(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	r := start(t, fake, discord.Config{StopGrace: -1}, newRecorder())
	wait := func(what string, cond func(v discordfake.View) bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer wcancel()
		if err := fake.Wait(wctx, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	// The next two handshakes fail: the reconnect loop is still retrying (its waits are 1 s,
	// then 2 s) when Run stops.
	fake.Refuse(2)
	fake.Drop()
	wait("a refused reconnect", func(v discordfake.View) bool { return v.Refused() >= 1 })
	r.stop(t)
	// The loop's third attempt succeeds, after Run returned (or, on a slow machine, before it
	// closed, when Run's own close ends it): either way no connection stays.
	wait("the reconnect loop's success", func(v discordfake.View) bool { return v.Identifies()+v.Resumes() >= 2 })
	wait("no open connection", func(v discordfake.View) bool { return v.Ready() == 0 })
}

// TestRateLimitsHonoured: with the fake enforcing per-channel limits on creates and edits,
// two bots' worth of sends into one channel (two adapters: the second knows nothing of what
// the first spent, so it meets the fake's 429s) all land exactly once, edited, and no call
// fails: discordgo paces each bucket from the headers, a 429 is waited out.
func TestRateLimitsHonoured(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.SetLimits(discordfake.Limits{Create: discordfake.Limit{N: 2, Per: 300 * time.Millisecond},
		Edit: discordfake.Limit{N: 2, Per: 300 * time.Millisecond}, Global: discordfake.Limit{N: 50, Per: time.Second}})
	to := platform.Address{Platform: "discord", ChatType: platform.Group, ChatID: "500"}
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for a := range 2 {
		ad, err := discord.New(discord.Config{Token: fake.Token, BaseURL: fake.URL, Sleep: platform.Sleep, HTTP: &http.Client{Timeout: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				text := fmt.Sprintf("bot %d message %d", a, i)
				id, err := ad.Send(context.Background(), to, text)
				if err == nil {
					err = ad.Edit(context.Background(), to, id, text+" edited")
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call failed under the rate limits: %v", err)
	}
	fake.Inspect(func(v discordfake.View) {
		n := map[string]int{}
		for _, m := range v.Messages("500") {
			n[m.Content]++
		}
		for a := range 2 {
			for i := range 6 {
				if k := fmt.Sprintf("bot %d message %d edited", a, i); n[k] != 1 {
					t.Errorf("%q: %d, want once (%v)", k, n[k], n)
				}
			}
		}
		t.Logf("the fake's own 429s: %v", v.LimitedByRoute())
	})
}
