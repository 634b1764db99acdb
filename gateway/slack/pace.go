package slack

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
)

// Pacing are the Web API rate limits a Client keeps to on its own, so that Slack rarely has
// to answer 429 (which it still waits out, however long Retry-After is). Slack applies its
// limits per method per app per workspace: a Client is one bot token, so one workspace.
type Pacing struct {
	// PostEvery and PostBurst: chat.postMessage to one channel goes PostBurst at once, then
	// one per PostEvery (Slack: about one a second per channel, short bursts allowed).
	PostEvery time.Duration
	PostBurst int
	// PerMinute caps methods' calls in any minute across the workspace: their tiers.
	// Window, if set, is the span they are counted over instead (tests).
	PerMinute map[string]int
	Window    time.Duration
	// PostReserve is how many of a channel's posts only a reply's first message may take: a
	// notice, a retry, a reply's later chunk goes only while PostReserve posts are left after
	// it (0: 1; negative: none, every post in the order it came).
	PostReserve int
	// Off turns pacing off (tests that count calls).
	Off bool
}

// DefaultPacing is Slack's documented limits: one post a second per channel with bursts of
// 3 (Slack does not say how many), Tier 3 (50 a minute) for chat.update and the history
// reads that find an unsure post, Tier 1 for apps.connections.open.
var DefaultPacing = Pacing{PostEvery: time.Second, PostBurst: 3,
	PerMinute: map[string]int{"chat.update": 50, "conversations.history": 50, "conversations.replies": 50, "apps.connections.open": 1}}

// Post is what a chat.postMessage attempt is, for its channel's allowance: a reply's first
// message, which its user waits for having seen nothing, or a post that may wait behind such
// replies: the router's queued notice, a retry after a failed attempt, a reply's later chunk,
// a resend of a post whose outcome was never recorded, and the first message of a reply
// whose user was told its message was queued (SendKey.Noticed).
type Post int

const (
	PostReply Post = iota
	PostNotice
	PostRetry
	PostChunk
	PostResend
	PostQueued
)

var postNames = [...]string{"reply", "notice", "retry", "chunk", "resend", "queued"}

func (k Post) String() string {
	if k >= 0 && int(k) < len(postNames) {
		return postNames[k]
	}
	return "post"
}

// paceWindow is the span a tier's count is kept over: a minute, and a margin so the
// requests' trip to Slack cannot make two look closer than they went.
const paceWindow = time.Minute + paceMargin

const paceMargin = 250 * time.Millisecond

// pacer holds calls to their turn. A waiting call's slot is worked out again whenever a call
// comes or wakes, from the calls that went only, so a late call never lets the ones behind
// it go closer than the limits take.
type pacer struct {
	p     Pacing
	now   func() time.Time
	sleep platform.Sleeper
	log   *slog.Logger // nil: none

	mu      sync.Mutex
	posts   map[string]*postLine // per channel
	methods map[string]*tierLine // per method
}

// waiter is one waiting call's turn; urgent: a reply's first message (PostReply).
type waiter struct {
	at     time.Time
	urgent bool
}

// postLine is a channel's allowance of posts: PostBurst at most, one more every PostEvery.
type postLine struct {
	tokens  float64 // after the posts that went, at at
	at      time.Time
	waiting []*waiter
}

// tierLine is a method's calls in the last paceWindow and the calls waiting for a turn.
type tierLine struct {
	went    []time.Time
	waiting []*waiter
}

func newPacer(p Pacing, sleep platform.Sleeper) *pacer {
	if p.PostEvery <= 0 {
		p.PostEvery = DefaultPacing.PostEvery
	}
	if p.PostBurst <= 0 {
		p.PostBurst = DefaultPacing.PostBurst
	}
	if p.PostReserve == 0 {
		p.PostReserve = 1
	} else if p.PostReserve < 0 {
		p.PostReserve = 0
	}
	if p.PerMinute == nil {
		p.PerMinute = DefaultPacing.PerMinute
	}
	if p.Window <= 0 {
		p.Window = time.Minute
	}
	return &pacer{p: p, now: time.Now, sleep: sleep, posts: map[string]*postLine{}, methods: map[string]*tierLine{}}
}

// wait holds a call of method (to channel; a post of kind k) until the limits allow it.
//
// A channel's posts are shared by its replies, the router's queued notices and the retries
// of failed attempts, and the first message of a reply to a message that found its chat idle
// comes first (PostReply): its user has seen nothing until it goes, while a notice only says
// a message waits, a queued message's user has seen that notice, and a retry's message is
// late already. So anything but a PostReply goes only while PostReserve posts are left after
// it, which the next reply may take at once; a reply that finds even those spent goes before
// the other posts waiting in its channel, and they move back behind it.
func (pc *pacer) wait(ctx context.Context, method, channel string, k Post) error {
	if pc == nil || pc.p.Off {
		return nil
	}
	n := pc.p.PerMinute[method]
	post := method == "chat.postMessage" && channel != ""
	if !post && n <= 0 {
		return nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	now := pc.now()
	me := &waiter{urgent: k == PostReply}
	var pl *postLine
	var tl *tierLine
	if post {
		if pl = pc.posts[channel]; pl == nil {
			pc.forget(now)
			pl = &postLine{tokens: float64(pc.p.PostBurst), at: now}
			pc.posts[channel] = pl
		}
		pl.enqueue(me)
		defer func() { pl.waiting = slices.DeleteFunc(pl.waiting, func(x *waiter) bool { return x == me }) }()
	}
	if n > 0 {
		if tl = pc.methods[method]; tl == nil {
			tl = &tierLine{}
			pc.methods[method] = tl
		}
		tl.waiting = append(tl.waiting, me)
		defer func() { tl.waiting = slices.DeleteFunc(tl.waiting, func(x *waiter) bool { return x == me }) }()
	}
	t0 := now
	for {
		at := now
		if pl != nil {
			now = latest(now, pl.at)
			at = latest(at, pc.postSlot(pl, me, now))
		}
		if tl != nil {
			at = latest(at, tierSlot(tl, me, n, pc.p.Window+paceMargin, now))
		}
		if at.After(now) {
			d := at.Sub(now)
			pc.mu.Unlock()
			err := pc.sleep(ctx, d)
			pc.mu.Lock()
			now = latest(pc.now(), now.Add(d)) // (a test's clock may stand still)
			if err != nil {
				return err
			}
			continue
		}
		if pl != nil {
			pl.tokens = min(float64(pc.p.PostBurst), pl.tokens+float64(now.Sub(pl.at))/float64(pc.p.PostEvery)) - 1
			pl.at = now
		}
		if pc.log != nil && (pl != nil || now.After(t0)) {
			args := []any{"method", method, "channel", channel, "waited", now.Sub(t0)}
			if pl != nil {
				args = append(args, "post", k.String(), "left", pl.tokens, "waiting", len(pl.waiting)-1)
			}
			if tl != nil {
				args = append(args, "tier_calls", len(tl.went))
			}
			pc.log.Debug("slack: paced", args...)
		}
		if tl != nil {
			tl.went = append(tl.went, now)
		}
		return nil
	}
}

// enqueue puts a post in its channel's line: a reply's first message after the replies
// waiting, anything else last.
func (pl *postLine) enqueue(me *waiter) {
	i := len(pl.waiting)
	if me.urgent {
		if i = slices.IndexFunc(pl.waiting, func(x *waiter) bool { return !x.urgent }); i < 0 {
			i = len(pl.waiting)
		}
	}
	pl.waiting = slices.Insert(pl.waiting, i, me)
}

// postSlot is when me may post: the channel's allowance, refilling from now, has for each post
// waiting ahead of it, and then for it, one post — a reply's first message — or one and the
// PostReserve it leaves — anything else.
func (pc *pacer) postSlot(pl *postLine, me *waiter, now time.Time) time.Time {
	left := min(float64(pc.p.PostBurst), pl.tokens+float64(now.Sub(pl.at))/float64(pc.p.PostEvery))
	t := now
	for _, x := range pl.waiting {
		need := 1.0
		if !x.urgent {
			need += float64(min(pc.p.PostReserve, pc.p.PostBurst-1))
		}
		if left < need {
			t = t.Add(time.Duration(math.Ceil((need - left) * float64(pc.p.PostEvery))))
			left = need
		}
		x.at = t
		if x == me {
			return t
		}
		left--
	}
	return t
}

// tierSlot is when me may call a method that takes n calls a minute: after the calls that
// went and those waiting ahead of it, no more than n-1 others within span before it.
func tierSlot(tl *tierLine, me *waiter, n int, span time.Duration, now time.Time) time.Time {
	tl.went = slices.DeleteFunc(tl.went, func(x time.Time) bool { return !x.Add(span).After(now) })
	slices.SortFunc(tl.went, func(a, b time.Time) int { return a.Compare(b) })
	times := slices.Clone(tl.went)
	for _, x := range tl.waiting {
		t := now
		if len(times) >= n {
			t = latest(t, times[len(times)-n].Add(span))
		}
		if x == me {
			return t
		}
		times = append(times, t)
	}
	return now
}

// forget drops the channels whose allowance is full again and that wait for nothing, once
// there are many. Under pc.mu.
func (pc *pacer) forget(now time.Time) {
	if len(pc.posts) <= 10000 {
		return
	}
	for c, x := range pc.posts {
		if len(x.waiting) == 0 && x.tokens+float64(now.Sub(x.at))/float64(pc.p.PostEvery) >= float64(pc.p.PostBurst) {
			delete(pc.posts, c)
		}
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
