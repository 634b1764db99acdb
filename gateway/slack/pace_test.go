package slack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/internal/simclock"
)

// vclock is a virtual clock for one caller at a time: a sleep moves it on by the wait.
type vclock struct {
	mu sync.Mutex
	t  time.Time
}

func (v *vclock) now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.t
}

func (v *vclock) sleep(ctx context.Context, d time.Duration) error {
	v.mu.Lock()
	v.t = v.t.Add(d)
	v.mu.Unlock()
	return ctx.Err()
}

func (v *vclock) wait(t *testing.T, pc *pacer, method, channel string) time.Duration {
	t.Helper()
	return v.post(t, pc, method, channel, PostReply)
}

func (v *vclock) post(t *testing.T, pc *pacer, method, channel string, k Post) time.Duration {
	t.Helper()
	t0 := v.now()
	if err := pc.wait(context.Background(), method, channel, k); err != nil {
		t.Fatal(err)
	}
	return v.now().Sub(t0)
}

// Posts to one channel go a burst of 3, then one a second; another channel waits for
// nothing; chat.update takes its tier's 50 a minute across the workspace, then waits for the
// minute since the first; methods without a limit are not held.
func TestPacePostsAndTiers(t *testing.T) {
	t.Parallel()
	v := &vclock{t: time.Unix(1_800_000_000, 0)}
	pc := newPacer(Pacing{}, v.sleep)
	pc.now = v.now
	var got []time.Duration
	for range 5 {
		got = append(got, v.wait(t, pc, "chat.postMessage", "C1"))
	}
	if want := []time.Duration{0, 0, 0, time.Second, time.Second}; !slices.Equal(got, want) {
		t.Fatalf("posts to one channel waited %v, want %v", got, want)
	}
	if d := v.wait(t, pc, "chat.postMessage", "C2"); d != 0 {
		t.Fatalf("a post to another channel waited %v", d)
	}
	u0 := v.now()
	var longest time.Duration
	for i := range 50 {
		longest = max(longest, v.wait(t, pc, "chat.update", fmt.Sprint("C", i%7)))
	}
	if longest != 0 {
		t.Fatalf("updates within the tier waited %v", longest)
	}
	v.wait(t, pc, "chat.update", "C1")
	if got := v.now().Sub(u0); got != paceWindow {
		t.Fatalf("the 51st update went %v after the first, want %v", got, paceWindow)
	}
	for range 100 {
		if d := v.wait(t, pc, "auth.test", ""); d != 0 {
			t.Fatalf("auth.test waited %v", d)
		}
	}
	off := newPacer(Pacing{Off: true}, v.sleep)
	off.now = v.now
	for range 10 {
		if d := v.wait(t, off, "chat.postMessage", "C1"); d != 0 {
			t.Fatalf("with pacing off a post waited %v", d)
		}
	}
}

// sim is the pacers' virtual clock (internal/simclock).
type sim = simclock.Clock

func newSim(t0 time.Time) *sim { return simclock.New(t0) }

// A reply's first message finds a post at once though the reply before it in its channel
// spent posts on a queued notice and on a retry, or on a later chunk and a resend: those go
// only while a post is left after them.
func TestPaceReplyFindsLastPost(t *testing.T) {
	t.Parallel()
	v := &vclock{t: time.Unix(1_800_000_000, 0)}
	pc := newPacer(Pacing{}, v.sleep)
	pc.now = v.now
	for round := range 8 {
		if d := v.post(t, pc, "chat.postMessage", "C1", PostReply); d != 0 {
			t.Fatalf("round %d: the reply's first message waited %v, want 0", round, d)
		}
		v.post(t, pc, "chat.postMessage", "C1", []Post{PostNotice, PostChunk}[round%2])
		v.post(t, pc, "chat.postMessage", "C1", []Post{PostRetry, PostResend}[round%2])
	}
	// with no reserve, posts share a channel in the order they come: the reply waits
	none := newPacer(Pacing{PostReserve: -1}, v.sleep)
	none.now = v.now
	v.post(t, none, "chat.postMessage", "C2", PostReply)
	v.post(t, none, "chat.postMessage", "C2", PostNotice)
	v.post(t, none, "chat.postMessage", "C2", PostRetry)
	if d := v.post(t, none, "chat.postMessage", "C2", PostReply); d != time.Second {
		t.Fatalf("with PostReserve -1 the fourth post waited %v, want 1s", d)
	}
}

// A reply's first message that finds even the last post spent (three replies just went in
// the channel) goes before the notice and the retry waiting there, at the first post the
// allowance has again; they move back behind it, and wait until they leave a post.
func TestPaceReplyBeforeWaitingPosts(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	s := newSim(t0)
	pc := newPacer(Pacing{}, s.Sleep)
	pc.now = s.Now
	went := map[string]func() time.Time{}
	for _, x := range []struct {
		name string
		k    Post
	}{{"reply0", PostReply}, {"reply1", PostReply}, {"reply2", PostReply}, {"notice", PostNotice}, {"retry", PostRetry}, {"reply", PostReply}} {
		went[x.name] = s.Start(func() {
			if err := pc.wait(context.Background(), "chat.postMessage", "C1", x.k); err != nil {
				t.Error(err)
			}
		})
		s.Advance(t0)
	}
	s.Advance(t0.Add(time.Minute))
	for name, w := range map[string]time.Duration{"reply0": 0, "reply1": 0, "reply2": 0, "reply": time.Second, "notice": 3 * time.Second, "retry": 4 * time.Second} {
		if got := went[name]().Sub(t0); got != w {
			t.Errorf("%s went at +%v, want +%v (the reply at the next post; the notice and the retry, which leave a post, behind it)", name, got, w)
		}
	}
}

// The soak's slow case after the reserve: a double text in a channel — the router's notice
// for the second message, the first message's reply, at once the second's — and a message
// that finds its own chat idle 300 ms later, from another lane in the channel. Its reply goes
// at once; the queued message's reply, whose user saw the notice, waits until it leaves a post.
// (With the queued reply as urgent as any, it took the last post and the idle reply waited
// 700 ms.)
func TestPaceQueuedReplyLeavesAPost(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	s := newSim(t0)
	pc := newPacer(Pacing{}, s.Sleep)
	pc.now = s.Now
	went := map[string]func() time.Time{}
	for _, x := range []struct {
		name string
		k    Post
		at   time.Duration
	}{{"notice", PostNotice, 0}, {"first", PostReply, 0}, {"queued", PostQueued, 0}, {"idle", PostReply, 300 * time.Millisecond}} {
		s.Advance(t0.Add(x.at))
		went[x.name] = s.Start(func() {
			if err := pc.wait(context.Background(), "chat.postMessage", "C1", x.k); err != nil {
				t.Error(err)
			}
		})
	}
	s.Advance(t0.Add(time.Minute))
	for name, w := range map[string]time.Duration{"notice": 0, "first": 0, "idle": 300 * time.Millisecond, "queued": 2 * time.Second} {
		if got := went[name]().Sub(t0); got != w {
			t.Errorf("%s went at +%v, want +%v", name, got, w)
		}
	}
}

// Under any mix of posts and updates arriving at any times, more than the limits take, the
// calls go within Slack's limits as the fake checks them without its grace (per channel a
// burst of 3 posts and then one a second; 50 updates in any minute), each in the order it
// came among its kind (replies' first messages, other posts, updates), and every call goes;
// and a reply whose channel had no other reply in the second before it goes at once.
func TestPaceKeepsSlackLimits(t *testing.T) {
	t.Parallel()
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 2))
		s := newSim(time.Unix(1_800_000_000, 0))
		pc := newPacer(Pacing{}, s.Sleep)
		pc.now = s.Now
		type arrival struct {
			method, channel string
			k               Post
			at              time.Time
			went            func() time.Time
		}
		var arr []*arrival
		gap := []time.Duration{600 * time.Millisecond, 1500 * time.Millisecond, 4 * time.Second}[seed%3]
		for range 600 {
			s.Advance(s.Now().Add(time.Duration(rng.Float64() * float64(gap))))
			a := &arrival{method: []string{"chat.postMessage", "chat.update"}[rng.IntN(2)], channel: []string{"C1", "C2", "D3"}[rng.IntN(3)],
				k: Post(rng.IntN(len(postNames))), at: s.Now()}
			a.went = s.Start(func() {
				if err := pc.wait(context.Background(), a.method, a.channel, a.k); err != nil {
					t.Error(err)
				}
			})
			arr = append(arr, a)
		}
		s.Advance(s.Now().Add(10 * time.Hour))
		posts, lines := map[string][]time.Time{}, map[string][]time.Time{}
		var updates []time.Time
		for i, a := range arr {
			g := a.went()
			if g.IsZero() {
				t.Fatalf("seed %d: call %d never went", seed, i)
			}
			if a.method == "chat.update" {
				if n := len(updates); n > 0 && g.Before(updates[n-1]) {
					t.Fatalf("seed %d: update %d went before one that came earlier", seed, i)
				}
				updates = append(updates, g)
				continue
			}
			line := fmt.Sprint(a.channel, a.k == PostReply)
			if ps := lines[line]; len(ps) > 0 && g.Before(ps[len(ps)-1]) {
				t.Fatalf("seed %d: post %d (%s) went before one of its kind that came earlier", seed, i, a.k)
			}
			lines[line] = append(lines[line], g)
			posts[a.channel] = append(posts[a.channel], g)
			if a.k == PostReply && !g.Equal(a.at) {
				quiet := true
				for _, o := range arr[:i] {
					if o.method == a.method && o.channel == a.channel && o.k == PostReply && o.went().After(a.at.Add(-time.Second)) {
						quiet = false
					}
				}
				if quiet {
					t.Errorf("seed %d: reply %d to %s waited %v though no other reply went there in the second before it", seed, i, a.channel, g.Sub(a.at))
				}
			}
		}
		for ch, gs := range posts {
			slices.SortFunc(gs, func(x, y time.Time) int { return x.Compare(y) })
			tokens, at := 3.0, gs[0]
			for i, g := range gs {
				tokens = min(3, tokens+float64(g.Sub(at))/float64(time.Second))
				at = g
				if tokens < 1-1e-6 {
					t.Fatalf("seed %d: post %d to %s is over the per-channel limit (%.3f left)", seed, i, ch, tokens)
				}
				tokens--
			}
		}
		for i := 50; i < len(updates); i++ {
			if updates[i].Sub(updates[i-50]) < time.Minute {
				t.Fatalf("seed %d: updates %d and %d went %v apart (50 a minute)", seed, i-50, i, updates[i].Sub(updates[i-50]))
			}
		}
	}
}

// A send's key says what kind of post it is for its channel's allowance.
func TestPostKind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		k    platform.SendKey
		want Post
	}{
		{platform.SendKey{Turn: "t", Chunk: 0}, PostReply},
		{platform.SendKey{Turn: "t", Chunk: -1}, PostNotice},
		{platform.SendKey{Turn: "t", Chunk: 1}, PostChunk},
		{platform.SendKey{Turn: "t", Chunk: 0, Unsure: true}, PostResend},
		{platform.SendKey{Turn: "t", Chunk: 0, Noticed: true}, PostQueued},
		{platform.SendKey{Turn: "t", Chunk: 2, Noticed: true}, PostChunk},
	} {
		if got := postKind(c.k); got != c.want {
			t.Errorf("postKind(%+v) = %v, want %v", c.k, got, c.want)
		}
	}
}
