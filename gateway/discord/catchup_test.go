package discord_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/discord"
	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

func openStore(t *testing.T) *sqlite.DB {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// until polls cond (a hang guard of a minute, not a verdict).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// counting is a Handler that counts every call per event id, in order.
type counting struct {
	mu    sync.Mutex
	order []platform.Event
	n     map[string]int
}

func (c *counting) Handle(_ context.Context, ev platform.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[ev.EventID]++
	c.order = append(c.order, ev)
	return nil
}

func (c *counting) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order)
}

// TestCatchUpNewSession: a dropped socket whose session Discord forgot (the RESUME refused,
// a new session identified) is followed by a read of every known channel's history after its
// last handed-on message: the 150 messages sent to a channel meanwhile (two pages), a thread's
// and a DM's are handed on exactly once, in order, the bot's own and another bot's are not, the
// messages handed on before are not again, and a live message that arrives while its channel's
// history is read waits and follows it. The cursors end in the store.
func TestCatchUpNewSession(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	fake.AddChannel("501", discordfake.PublicThread, "500")
	fake.AddChannel("600", discordfake.DMChannel, "")
	st := openStore(t)
	h := &counting{}
	r := start(t, fake, discord.Config{Cursors: st}, h)
	var before []string
	before = append(before, fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: "before 1"}))
	before = append(before, fake.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "44", Content: "before 2"}))
	before = append(before, fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "42", Content: "before 3"}))
	until(t, "the first three messages", func() bool { return h.calls() == 3 })
	if _, err := r.ad.Send(context.Background(), platform.Address{Platform: "discord", ChatType: platform.Group, ChatID: "500"}, "the bot's reply"); err != nil {
		t.Fatal(err)
	}

	// the socket drops, Discord forgets the session and refuses the reconnects for a while
	fake.Refuse(1 << 20)
	fake.Expire()
	var gap []string
	for i := range 150 {
		gap = append(gap, fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: fmt.Sprint("gap ", i)}))
	}
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: fake.BotID, Content: "the bot itself", Bot: true})
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "77", Content: "another bot", Bot: true})
	gap = append(gap, fake.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "44", Content: "gap in the thread"}))
	gap = append(gap, fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "42", Content: "gap in the DM"}))
	release := make(chan struct{})
	fake.Fail("GET messages", discordfake.Fault{Until: release}) // the first history read waits
	fake.Accept()
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := fake.Wait(wctx, func(v discordfake.View) bool { return v.Calls("GET messages") >= 1 }); err != nil {
		t.Fatal(err)
	}
	// live messages while the history is read: every known channel is catching up
	var live []string
	live = append(live, fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: "live 500"}))
	live = append(live, fake.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "44", Content: "live 501"}))
	live = append(live, fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "42", Content: "live 600"}))
	until(t, "the live messages held", func() bool { return r.ad.Counts()["held_for_catch_up"] == 3 })
	close(release)
	want := len(before) + len(gap) + len(live)
	until(t, "every message", func() bool { return h.calls() >= want })
	r.stop(t)

	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.order) != want {
		t.Fatalf("%d handler calls, want %d", len(h.order), want)
	}
	for _, id := range slices.Concat(before, gap, live) {
		if h.n[id] != 1 {
			t.Errorf("message %s handed on %d times, want once", id, h.n[id])
		}
	}
	perChat := map[string][]string{}
	for _, ev := range h.order {
		ch := ev.ChatID
		if ev.ThreadID != "" {
			ch = ev.ThreadID
		}
		perChat[ch] = append(perChat[ch], ev.Text)
		if ev.Text == "the bot itself" || ev.Text == "another bot" {
			t.Errorf("a bot's message handed on: %+v", ev)
		}
	}
	wantChat := map[string][]string{"501": {"before 2", "gap in the thread", "live 501"}, "600": {"before 3", "gap in the DM", "live 600"}}
	for ch, w := range wantChat {
		if !slices.Equal(perChat[ch], w) {
			t.Errorf("channel %s: %q, want %q", ch, perChat[ch], w)
		}
	}
	c500 := perChat["500"]
	if len(c500) != 152 || c500[0] != "before 1" || c500[1] != "gap 0" || c500[150] != "gap 149" || c500[151] != "live 500" {
		t.Errorf("channel 500: %d messages, %q ... %q", len(c500), c500[:min(3, len(c500))], c500[max(0, len(c500)-2):])
	}
	for _, ev := range h.order {
		switch ev.Text {
		case "gap in the DM":
			if ev.ChatType != platform.DM {
				t.Errorf("a caught-up DM as %s", ev.ChatType)
			}
		case "gap in the thread":
			if ev.ChatType != platform.Thread || ev.ChatID != "500" || ev.ThreadID != "501" {
				t.Errorf("a caught-up thread message at %+v", ev.Address)
			}
		}
	}
	// the live messages were in the history when it was read (they came after the new session
	// began): handed on from there, their live copies dropped
	if c := r.ad.Counts(); c["caught_up"] != int64(len(gap)+len(live)) || c["received"] != int64(len(before)) {
		t.Errorf("counts %v, want %d caught up and %d received", c, len(gap)+len(live), len(before))
	}
	cs, err := st.ReadCursors(context.Background(), "discord", fake.BotID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range cs {
		got[c.Channel] = c.LastID
	}
	if got["500"] != live[0] || got["501"] != live[1] || got["600"] != live[2] {
		t.Errorf("cursors %v, want 500=%s 501=%s 600=%s", got, live[0], live[1], live[2])
	}
}

// TestFirstStartReplaysNothing: a bot with no cursors (its first start) does not read any
// channel's history: what was said before it ever ran is not handed on.
func TestFirstStartReplaysNothing(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	for i := range 5 {
		fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: fmt.Sprint("old ", i)})
	}
	h := &counting{}
	r := start(t, fake, discord.Config{Cursors: openStore(t)}, h)
	id := fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: "new"})
	until(t, "the new message", func() bool { return h.calls() >= 1 })
	r.stop(t)
	if h.calls() != 1 || h.n[id] != 1 {
		t.Fatalf("handed on %d messages (%v), want only the new one", h.calls(), h.n)
	}
	fake.Inspect(func(v discordfake.View) {
		if n := v.Calls("GET messages"); n != 0 {
			t.Errorf("read the history %d times on a first start", n)
		}
	})
}

// firstOnly keeps only each channel's first cursor write: the process "dies" before its later
// cursor writes reach the store (they are written in the background).
type firstOnly struct {
	platform.Cursors
	mu   sync.Mutex
	seen map[string]bool
}

func (f *firstOnly) AdvanceReadCursor(ctx context.Context, c store.ReadCursor) error {
	f.mu.Lock()
	first := !f.seen[c.Channel]
	f.seen[c.Channel] = true
	f.mu.Unlock()
	if !first {
		return nil
	}
	return f.Cursors.AdvanceReadCursor(ctx, c)
}

func (f *firstOnly) AdvanceWatermark(ctx context.Context, w store.Watermark) error {
	f.mu.Lock()
	first := !f.seen["watermark"]
	f.seen["watermark"] = true
	f.mu.Unlock()
	if !first {
		return nil
	}
	return f.Cursors.AdvanceWatermark(ctx, w)
}

// serveOn runs a router on env with a Discord adapter for fake and returns its stop.
func serveOn(t *testing.T, env *platformtest.Env, fake *discordfake.Server, cfg discord.Config) (*discord.Adapter, func()) {
	t.Helper()
	cfg.Token, cfg.BaseURL, cfg.Sleep = fake.Token, fake.URL, (&sleeps{}).sleep
	ad, err := discord.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.Router.Serve(ctx, ad) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return ad, stop
}

// TestCatchUpAfterCrash: a gateway whose socket is cut (Discord forgets its session, its
// reconnects refused: it reads nothing more) and that stops without grace, while people go on
// writing in a channel, a thread and a DM, then a new gateway on the same database: every
// message sent meanwhile gets exactly one answer, and none of the messages the first one
// answered is answered again, though the first one's last cursor writes were lost (the new
// one reads them again; the inbox knows them).
func TestCatchUpAfterCrash(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	fake.AddChannel("501", discordfake.PublicThread, "500")
	fake.AddChannel("600", discordfake.DMChannel, "")
	env := platformtest.New(t, platformtest.Options{})
	_, stop := serveOn(t, env, fake, discord.Config{StopGrace: -1, Cursors: &firstOnly{Cursors: env.Store, seen: map[string]bool{}}})
	waitFor(t, fake, func(v discordfake.View) bool { return v.Ready() == 1 })
	say := func(ch string, dm bool, user, text string) {
		fake.Say(discordfake.UserMessage{ChannelID: ch, DM: dm, AuthorID: user, Content: "SAY " + text})
	}
	say("500", false, "43", "a1")
	say("501", false, "44", "t1")
	say("600", true, "42", "d1")
	waitFor(t, fake, func(v discordfake.View) bool { return len(v.Messages("")) == 3 })
	say("500", false, "43", "a2") // answered; its cursor write is lost
	say("600", true, "42", "d2")
	waitFor(t, fake, func(v discordfake.View) bool { return len(v.Messages("")) == 5 })
	env.Idle(t)

	// the crash: the socket is cut, nothing more is read, no grace
	fake.Refuse(1 << 20)
	fake.Expire()
	say("500", false, "43", "a3")
	say("501", false, "44", "t2")
	say("600", true, "42", "d3")
	say("500", false, "43", "a4")
	stop()

	env2 := platformtest.New(t, platformtest.Options{DB: env.DB})
	fake.Accept()
	ad2, _ := serveOn(t, env2, fake, discord.Config{Cursors: env2.Store})
	waitFor(t, fake, discordfake.HasPosted("a3", "a4", "t2", "d3"))
	env2.Idle(t)
	say("500", false, "43", "a5") // live after the new start
	waitFor(t, fake, discordfake.HasPosted("a5"))
	env2.Idle(t)

	fake.Inspect(func(v discordfake.View) {
		n := map[string]int{}
		for _, m := range v.Messages("") {
			n[m.ChannelID+":"+m.Content]++
		}
		for _, k := range []string{"500:a1", "500:a2", "500:a3", "500:a4", "500:a5", "501:t1", "501:t2", "600:d1", "600:d2", "600:d3"} {
			if n[k] != 1 {
				t.Errorf("%s answered %d times, want once (all: %v)", k, n[k], n)
			}
		}
		answers := 0
		for _, m := range v.Messages("") {
			if !strings.Contains(m.Content, "Queued") { // a3 and a4 came together: a notice is right
				answers++
			}
		}
		if answers != 10 {
			t.Errorf("%d answers, want 10: %v", answers, n)
		}
	})
	if c := ad2.Counts(); c["caught_up"] < 5 { // a3, a4, t2, d3, and a2 and d2 again (dropped by the inbox)
		t.Errorf("counts %v: want the four missed messages and the two whose cursor was lost caught up", c)
	}
	for key, want := range map[string][]string{
		"agent:main:discord:group:500:43":   {"u: SAY a1", "a: a1", "u: SAY a2", "a: a2", "u: SAY a3", "a: a3", "u: SAY a4", "a: a4", "u: SAY a5", "a: a5"},
		"agent:main:discord:thread:500:501": {"u: SAY t1", "a: t1", "u: SAY t2", "a: t2"},
		"agent:main:discord:dm:600":         {"u: SAY d1", "a: d1", "u: SAY d2", "a: d2", "u: SAY d3", "a: d3"},
	} {
		ss := env2.Sessions(t, key)
		if len(ss) != 1 {
			t.Fatalf("%s: %d sessions", key, len(ss))
		}
		if got := env2.Transcript(t, ss[0].ID); !slices.Equal(got, want) {
			t.Errorf("%s: transcript %q, want %q", key, got, want)
		}
	}
}

// TestRestartNoGap: a graceful restart with nothing sent meanwhile reads the channels'
// history after the cursors and hands nothing on again (the bot's own replies in it are
// passed over): no message is answered twice.
func TestRestartNoGap(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	fake.AddChannel("600", discordfake.DMChannel, "")
	env := platformtest.New(t, platformtest.Options{})
	_, stop := serveOn(t, env, fake, discord.Config{Cursors: env.Store})
	waitFor(t, fake, func(v discordfake.View) bool { return v.Ready() == 1 })
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: "SAY one"})
	fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "42", Content: "SAY two"})
	waitFor(t, fake, func(v discordfake.View) bool { return len(v.Messages("")) == 2 })
	env.Idle(t)
	stop()

	env2 := platformtest.New(t, platformtest.Options{DB: env.DB})
	ad2, stop2 := serveOn(t, env2, fake, discord.Config{Cursors: env2.Store})
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: "SAY three"})
	waitFor(t, fake, func(v discordfake.View) bool { return len(v.Messages("")) >= 3 && v.Calls("GET messages") >= 2 })
	env2.Idle(t)
	stop2()
	fake.Inspect(func(v discordfake.View) {
		got := strings.Split(contents(v.Messages("")), "|")
		slices.Sort(got)
		if !slices.Equal(got, []string{"one", "three", "two"}) {
			t.Errorf("answers %q, want one, two and three once each", got)
		}
	})
	// "three" came live or, when it was already in the history read, from there; nothing else
	if c := ad2.Counts(); c["caught_up"]+c["received"] != 1 {
		t.Errorf("after a restart without a gap the adapter handed on %d messages (%v), want only the new one", c["caught_up"]+c["received"], c)
	}
}

// A channel and a thread whose very first messages come while no process is connected have
// no cursor; the next process finds them in GUILD_CREATE (their newest message is past the
// bot's watermark) and reads them after the watermark: each message handed on once, the one
// handed on before not again. Without the watermark they are never read.
func TestCatchUpNewChannel(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	st := openStore(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	h := &counting{}
	cfg := discord.Config{Cursors: st, Sleep: platform.Sleep}
	r := start(t, fake, cfg, h)
	before := fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "42", Username: "ann", Content: "before"})
	until(t, "the watermark in the store", func() bool {
		_, err := st.Watermark(context.Background(), discord.Platform, fake.BotID)
		return err == nil
	})
	r.stop(t)
	// while no process is connected: a new channel, a new thread, their first messages
	fake.AddChannel("700", discordfake.GuildText, "")
	fake.AddChannel("710", discordfake.PublicThread, "500")
	var gap []string
	for i, ch := range []string{"700", "710", "700"} {
		gap = append(gap, fake.Say(discordfake.UserMessage{ChannelID: ch, AuthorID: "43", Username: "bob", Content: fmt.Sprintf("gap %d", i)}))
	}
	r2 := start(t, fake, cfg, h)
	defer r2.stop(t)
	until(t, "the new channels' messages", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, id := range gap {
			if h.n[id] == 0 {
				return false
			}
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range append(gap, before) {
		if h.n[id] != 1 {
			t.Errorf("message %s handed on %d times, want once", id, h.n[id])
		}
	}
	for _, ev := range h.order {
		if ev.MessageID == gap[1] && (ev.ChatType != platform.Thread || ev.ThreadID != "710" || ev.ChatID != "500") {
			t.Errorf("the thread's message went to %+v", ev.Address)
		}
	}
}

// refusing is a Handler that refuses one message's first n hand-ons (the store away).
type refusing struct {
	counting
	id   string
	left int
}

func (r *refusing) Handle(ctx context.Context, ev platform.Event) error {
	r.mu.Lock()
	if ev.EventID == r.id && r.left > 0 {
		r.left--
		r.mu.Unlock()
		return fmt.Errorf("refused")
	}
	r.mu.Unlock()
	return r.counting.Handle(ctx, ev)
}

// A message the Handler keeps refusing holds its channel; the channel is read again after a
// backoff in the same session (no new session is needed), and the message is handed on once.
func TestHeldChannelRetried(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	st := openStore(t)
	fake.AddChannel("500", discordfake.GuildText, "")
	h := &refusing{left: 6} // every attempt of the live hand-on
	cfg := discord.Config{Cursors: st, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	r := start(t, fake, cfg, h)
	defer r.stop(t)
	first := fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "42", Username: "ann", Content: "first"})
	until(t, "the first message handed on", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.n[first] == 1 })
	h.mu.Lock()
	h.id = fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "42", Username: "ann", Content: "refused at first"})
	id := h.id
	h.mu.Unlock()
	until(t, "the held message handed on", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.n[id] == 1 })
	fake.Inspect(func(v discordfake.View) {
		if v.Identifies() != 1 {
			t.Errorf("%d sessions identified; the retry should not need a new one", v.Identifies())
		}
	})
	if got := r.ad.Counts()["held_channel_retries"]; got < 1 {
		t.Errorf("held_channel_retries = %d", got)
	}
}
