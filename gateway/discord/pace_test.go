package discord

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
	"github.com/spoolhq/spool/internal/simclock"
)

var t0 = time.Unix(1_800_000_000, 0)

// simPacer is a create pacer on a virtual clock (Discord's 5 in 5 s, reserve r).
func simPacer(reserve int) (*createPacer, *simclock.Clock) {
	s := simclock.New(t0)
	p := newCreatePacer(5, 5*time.Second, reserve, s.Sleep, nil)
	p.now = s.Now
	return p, s
}

// start runs one create of kind k into ch at the clock's time; the result is when it went.
func start(t *testing.T, p *createPacer, s *simclock.Clock, ch string, k Create) func() time.Time {
	return s.Start(func() {
		if err := p.wait(context.Background(), ch, k); err != nil {
			t.Error(err)
		}
	})
}

// Three notices, two resends and a chunk ask for a channel's creates: they leave its last one,
// which a reply's first message then takes at once; the rest go in the next window. With no
// reserve (the old behaviour: creates in the order they came, as discordgo's bucket holds
// them) the reply waits out the window behind them.
func TestPaceReplyFindsLastCreate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reserve   int
		replyWait time.Duration
	}{{1, 0}, {0, 4*time.Second + createMargin}} {
		p, s := simPacer(tc.reserve)
		var others []func() time.Time
		for _, k := range []Create{CreateNotice, CreateResend, CreateNotice, CreateChunk, CreateNotice, CreateResend} {
			others = append(others, start(t, p, s, "c1", k))
			s.Advance(t0)
		}
		s.Advance(t0.Add(time.Second))
		reply := start(t, p, s, "c1", CreateReply)
		s.Advance(t0.Add(time.Minute))
		if got := reply().Sub(t0.Add(time.Second)); got != tc.replyWait {
			t.Errorf("reserve %d: the reply waited %v, want %v", tc.reserve, got, tc.replyWait)
		}
		if tc.reserve == 1 {
			for i, want := range []time.Duration{0, 0, 0, 0, 5*time.Second + createMargin, 5*time.Second + createMargin} {
				if got := others[i]().Sub(t0); got != want {
					t.Errorf("create %d went at +%v, want +%v", i, got, want)
				}
			}
		}
	}
}

// A reply that finds even the reserve spent (five replies just went) goes before the creates
// waiting in its channel, at the first create the window has again; they move back behind it.
func TestPaceReplyBeforeWaitingCreates(t *testing.T) {
	t.Parallel()
	p, s := simPacer(1)
	for range 5 {
		start(t, p, s, "c1", CreateReply)
		s.Advance(t0)
	}
	var notices []func() time.Time
	for range 4 {
		notices = append(notices, start(t, p, s, "c1", CreateNotice))
		s.Advance(t0)
	}
	other := start(t, p, s, "c2", CreateNotice) // another channel's allowance is its own
	s.Advance(t0.Add(time.Second))
	reply := start(t, p, s, "c1", CreateReply)
	s.Advance(t0.Add(time.Minute))
	w := 5*time.Second + createMargin
	if got := reply().Sub(t0); got != w {
		t.Errorf("the reply went at +%v, want +%v", got, w)
	}
	for i, want := range []time.Duration{w, w, w, 2 * w} {
		if got := notices[i]().Sub(t0); got != want {
			t.Errorf("notice %d went at +%v, want +%v (behind the reply, leaving a create)", i, got, want)
		}
	}
	if got := other().Sub(t0); got != 0 {
		t.Errorf("channel c2's notice waited %v, want 0", got)
	}
}

// A double text: the first message's reply, the second's queued notice and its reply, and two
// more queued replies come together. The queued replies (their users were told they were
// queued) leave the channel's last create, so the next idle message's reply finds it at once;
// paced as replies (the control) they spend it and that reply waits out the window.
func TestPaceQueuedReplyLeavesACreate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		queued   Create
		idleWait time.Duration
	}{{CreateQueued, 0}, {CreateReply, 5*time.Second + createMargin - 300*time.Millisecond}} {
		p, s := simPacer(1)
		for _, k := range []Create{CreateReply, CreateNotice, tc.queued, tc.queued, tc.queued} {
			start(t, p, s, "c1", k)
			s.Advance(t0)
		}
		s.Advance(t0.Add(300 * time.Millisecond))
		idle := start(t, p, s, "c1", CreateReply)
		s.Advance(t0.Add(time.Minute))
		if got := idle().Sub(t0.Add(300 * time.Millisecond)); got != tc.idleWait {
			t.Errorf("queued replies paced as %v: the idle reply waited %v, want %v", tc.queued, got, tc.idleWait)
		}
	}
}

// createKind reads the send-ledger key the router puts in a send's context.
func TestCreateKind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		k    *platform.SendKey
		want Create
	}{
		{nil, CreateReply},
		{&platform.SendKey{Turn: "t", Chunk: 0}, CreateReply},
		{&platform.SendKey{Turn: "t", Chunk: -1}, CreateNotice},
		{&platform.SendKey{Turn: "t", Chunk: 0, Unsure: true}, CreateResend},
		{&platform.SendKey{Turn: "t", Chunk: 2}, CreateChunk},
		{&platform.SendKey{Turn: "t", Chunk: 0, Noticed: true}, CreateQueued},
		{&platform.SendKey{Turn: "t", Chunk: 2, Noticed: true}, CreateChunk},
	} {
		ctx := context.Background()
		if c.k != nil {
			ctx = platform.WithSendKey(ctx, *c.k)
		}
		if got := createKind(ctx); got != c.want {
			t.Errorf("createKind(%+v) = %v, want %v", c.k, got, c.want)
		}
	}
}

// Under any mix of replies, notices, chunks, resends and retries arriving at any times in a
// few channels, each channel's creates stay within Discord's limit as the fake checks it (a
// bucket of 5 that resets 5 s after its first create) and within 5 in any 5 s; and a reply
// whose channel had no other reply in the window before it goes at once. The same run with no
// reserve (the old order) breaks the last property: the control.
func TestPaceKeepsDiscordLimits(t *testing.T) {
	t.Parallel()
	quietWaited := map[int]int{}
	for _, reserve := range []int{1, 0} {
		for seed := range uint64(30) {
			rng := rand.New(rand.NewPCG(seed, 7))
			p, s := simPacer(reserve)
			type call struct {
				ch    string
				k     Create
				at    time.Time
				quiet bool
				went  func() time.Time
			}
			var calls []*call
			at := t0
			for range 400 {
				at = at.Add(time.Duration(rng.ExpFloat64() * float64(400*time.Millisecond)))
				c := &call{ch: []string{"a", "b", "c"}[rng.IntN(3)], at: at}
				if rng.IntN(3) > 0 {
					c.k = Create(1 + rng.IntN(int(CreateQueued))) // any kind but a reply
				}
				calls = append(calls, c)
			}
			span := 5*time.Second + createMargin
			for i, c := range calls {
				if c.k == CreateReply {
					c.quiet = true
					for _, o := range calls[:i] {
						if o.ch == c.ch && o.k == CreateReply && o.at.Add(span).After(c.at) {
							c.quiet = false // another reply in the window before it
						}
					}
				}
				s.Advance(c.at)
				c.went = start(t, p, s, c.ch, c.k)
			}
			s.Advance(at.Add(time.Hour))
			byCh := map[string][]time.Time{}
			for _, c := range calls {
				w := c.went()
				if w.Before(c.at) {
					t.Fatalf("a create went before it came")
				}
				byCh[c.ch] = append(byCh[c.ch], w)
				if c.quiet && w != c.at {
					quietWaited[reserve]++
					if reserve == 1 {
						t.Errorf("seed %d: a reply into a quiet channel %s waited %v", seed, c.ch, w.Sub(c.at))
					}
				}
			}
			for ch, ts := range byCh {
				slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
				for i := 5; i < len(ts); i++ {
					if ts[i].Sub(ts[i-5]) < 5*time.Second {
						t.Fatalf("reserve %d seed %d: channel %s had 6 creates within %v", reserve, seed, ch, ts[i].Sub(ts[i-5]))
					}
				}
				var b struct {
					left  int
					reset time.Time
				}
				for _, x := range ts { // the fake's bucket (discordfake.Limits.Create)
					if !x.Before(b.reset) {
						b.left, b.reset = 5, x.Add(5*time.Second)
					}
					if b.left == 0 {
						t.Fatalf("reserve %d seed %d: channel %s: the fake would answer 429 at +%v", reserve, seed, ch, x.Sub(t0))
					}
					b.left--
				}
			}
		}
	}
	if quietWaited[0] == 0 {
		t.Errorf("control: with no reserve no quiet reply ever waited; the test cannot tell the orders apart")
	}
	t.Logf("quiet replies that waited: reserve 1: %d, none: %d", quietWaited[1], quietWaited[0])
}

// Against the fake enforcing a channel's create limit: four queued notices go, the fifth waits
// in front of discordgo, and a reply's first message sent then goes at once, before it. With
// the pacing off (the old adapter: creates in discordgo's bucket in the order they came) the
// fifth notice takes the channel's last create and the reply waits for the bucket to reset.
func TestSendLeavesReplyACreate(t *testing.T) {
	t.Parallel()
	fake, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	// a long window, so that no wall time decides the test
	fake.SetLimits(discordfake.Limits{Create: discordfake.Limit{N: 5, Per: time.Minute}})
	ad, err := New(Config{Token: fake.Token, BaseURL: fake.URL, HTTP: &http.Client{Timeout: 10 * time.Second},
		Creates: CreateLimit{N: 5, Per: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	to := platform.Address{Platform: Platform, ChatType: platform.Group, ChatID: "700"}
	notice := func(ctx context.Context, i int) error {
		_, err := ad.Send(platform.WithSendKey(ctx, platform.SendKey{Turn: fmt.Sprintf("turn-%d", i), Chunk: -1}), to, fmt.Sprintf("queued %d", i))
		return err
	}
	for i := range 4 {
		if err := notice(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	fifth := make(chan error, 1)
	go func() { fifth <- notice(ctx, 4) }()
	defer func() { cancel(); <-fifth }()
	// the fifth notice either waits in the pacer or went
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	for {
		ad.creates.mu.Lock()
		l := ad.creates.lines["700"]
		waiting := l != nil && len(l.waiting) > 0
		ad.creates.mu.Unlock()
		went := false
		fake.Inspect(func(v discordfake.View) { went = len(v.Messages("700")) == 5 })
		if waiting || went {
			break
		}
		if wctx.Err() != nil {
			t.Fatal("the fifth notice neither waits nor went")
		}
		time.Sleep(time.Millisecond) // polling a condition, not waiting for one to happen
	}
	if _, err := ad.Send(platform.WithSendKey(wctx, platform.SendKey{Turn: "turn-r", Chunk: 0}), to, "the reply"); err != nil {
		t.Fatal(err)
	}
	fake.Inspect(func(v discordfake.View) {
		var got []string
		for _, m := range v.Messages("700") {
			got = append(got, m.Content)
		}
		if !slices.Contains(got, "the reply") || slices.Contains(got, "queued 4") {
			t.Errorf("when the reply was sent the channel had %q; want the reply and not the fifth notice", got)
		}
		if n := v.Limited(""); n != 0 {
			t.Errorf("the fake answered 429 %d times", n)
		}
	})
}

// TestReactionsPaced: the ⏳ mark on and off in one channel are one reaction call in any
// ReactionEvery (with the margin), the second asking the sleeper for the rest of the window
// (discordgo alone would send it after 200 ms, inside Discord's 250), while another
// channel's reaction does not wait.
func TestReactionsPaced(t *testing.T) {
	t.Parallel()
	fake, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	fake.AddChannel("700", discordfake.GuildText, "")
	fake.AddChannel("701", discordfake.GuildText, "")
	var mu sync.Mutex
	var slept []time.Duration
	ad, err := New(Config{Token: fake.Token, BaseURL: fake.URL, HTTP: &http.Client{Timeout: 10 * time.Second},
		Sleep: func(ctx context.Context, d time.Duration) error { // virtual: records, never waits
			mu.Lock()
			slept = append(slept, d)
			mu.Unlock()
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	a := fake.Say(discordfake.UserMessage{ChannelID: "700", AuthorID: "42", Content: "a"})
	b := fake.Say(discordfake.UserMessage{ChannelID: "701", AuthorID: "42", Content: "b"})
	in := func(ch string) platform.Address {
		return platform.Address{Platform: Platform, ChatType: platform.Group, ChatID: ch}
	}
	ctx := context.Background()
	start := time.Now()
	if err := ad.MarkQueued(ctx, in("700"), a); err != nil {
		t.Fatal(err)
	}
	if err := ad.UnmarkQueued(ctx, in("700"), a); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	mu.Lock()
	first := slices.Clone(slept)
	mu.Unlock()
	if err := ad.MarkQueued(ctx, in("701"), b); err != nil {
		t.Fatal(err)
	}
	window := ReactionEvery + createMargin
	if elapsed < window && (len(first) != 1 || first[0] <= 0 || first[0] > window) {
		t.Fatalf("the second reaction in a channel %v after the first asked to sleep %v; want once, the rest of %v", elapsed, first, window)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(slept) != len(first) {
		t.Fatalf("another channel's reaction slept %v", slept[len(first):])
	}
	fake.Inspect(func(v discordfake.View) {
		if v.Reacted(a, QueuedReaction) || !v.Reacted(b, QueuedReaction) || v.ReactionsAdded() != 2 {
			t.Fatalf("⏳ on a %v (want off), on b %v (want on), added %d (want 2)", v.Reacted(a, QueuedReaction), v.Reacted(b, QueuedReaction), v.ReactionsAdded())
		}
	})
}
