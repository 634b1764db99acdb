package discord

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
)

// Create is what a message create is for its channel's allowance: a reply's first message,
// which its user waits for having seen nothing, or a create that may wait behind replies (the
// router's queued notice, a reply's later chunk, a resend of a create whose outcome was never
// recorded, the first message of a reply whose user was told its message was queued). An
// attempt after a failed one keeps its first attempt's kind (Adapter.doCreate).
type Create int

const (
	CreateReply Create = iota
	CreateNotice
	CreateChunk
	CreateResend
	CreateQueued
)

var createNames = [...]string{"reply", "notice", "chunk", "resend", "queued"}

func (k Create) String() string {
	if k >= 0 && int(k) < len(createNames) {
		return createNames[k]
	}
	return "create"
}

// createKind is what a send is, from the send-ledger key the router puts in its context.
func createKind(ctx context.Context) Create {
	k, ok := platform.SendKeyFrom(ctx)
	switch {
	case !ok:
		return CreateReply // a send outside the router (a handoff's first message)
	case k.Chunk < 0:
		return CreateNotice
	case k.Unsure:
		return CreateResend
	case k.Chunk > 0:
		return CreateChunk
	case k.Noticed:
		return CreateQueued // its user was told the message was queued (SendKey.Noticed)
	}
	return CreateReply
}

// createMargin widens the window the pacer counts creates over, so that a request's trip to
// Discord cannot make two look closer than they went.
const createMargin = 250 * time.Millisecond

// createPacer keeps each channel's message creates within Discord's limit (N in any window of
// Per) and keeps Reserve of them for replies' first messages. It sits in front of discordgo:
// discordgo holds a create inside the route's bucket until the bucket resets, in the order the
// creates came, so a reply behind a notice and four retries would wait out the whole window.
//
// A channel's creates are shared by its replies, the router's queued notices and a reply's
// later chunks, and a reply's first message comes first: its user sees nothing until it goes,
// while a notice only says a message waits. So anything but a reply's first message goes only while Reserve creates
// are left after it, which the next reply may take at once; a reply that finds even those
// spent goes before the other creates waiting in its channel, and they move back behind it.
// A waiting create's slot is worked out again whenever a create comes or wakes, from the
// creates that went only.
type createPacer struct {
	n       int // 0: no pacing
	per     time.Duration
	reserve int
	now     func() time.Time
	sleep   platform.Sleeper
	log     *slog.Logger

	mu    sync.Mutex
	lines map[string]*createLine
}

type createLine struct {
	went    []time.Time // within the window, sorted
	waiting []*createWaiter
}

type createWaiter struct{ urgent bool }

func newCreatePacer(n int, per time.Duration, reserve int, sleep platform.Sleeper, log *slog.Logger) *createPacer {
	reserve = max(0, min(reserve, n-1))
	return &createPacer{n: n, per: per, reserve: reserve, now: time.Now, sleep: sleep, log: log, lines: map[string]*createLine{}}
}

// wait holds a create of kind k into channel until its turn.
func (p *createPacer) wait(ctx context.Context, channel string, k Create) error {
	if p == nil || p.n <= 0 || p.per <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	l := p.lines[channel]
	if l == nil {
		p.forget(now)
		l = &createLine{}
		p.lines[channel] = l
	}
	me := &createWaiter{urgent: k == CreateReply}
	i := len(l.waiting)
	if me.urgent {
		if i = slices.IndexFunc(l.waiting, func(x *createWaiter) bool { return !x.urgent }); i < 0 {
			i = len(l.waiting)
		}
	}
	l.waiting = slices.Insert(l.waiting, i, me)
	defer func() { l.waiting = slices.DeleteFunc(l.waiting, func(x *createWaiter) bool { return x == me }) }()
	t0 := now
	for {
		at := p.slot(l, me, now)
		if at.After(now) {
			d := at.Sub(now)
			p.mu.Unlock()
			err := p.sleep(ctx, d)
			p.mu.Lock()
			now = later2(p.now(), now.Add(d)) // (a test's clock may stand still)
			if err != nil {
				return err
			}
			continue
		}
		l.went = append(l.went, now)
		if p.log != nil {
			p.log.Debug("discord: create paced", "channel", channel, "create", k.String(), "waited", now.Sub(t0),
				"in_window", len(l.went), "waiting", len(l.waiting)-1)
		}
		return nil
	}
}

// slot is when me may go: after the creates that went and those waiting ahead of it, a reply's
// first message while one create is left in the window, anything else while 1+reserve are.
func (p *createPacer) slot(l *createLine, me *createWaiter, now time.Time) time.Time {
	span := p.per + createMargin
	l.went = slices.DeleteFunc(l.went, func(x time.Time) bool { return !x.Add(span).After(now) })
	times := slices.Clone(l.went)
	for _, x := range l.waiting {
		room := p.n // creates it may find in the window before it
		if !x.urgent {
			room -= p.reserve
		}
		t := now
		if len(times) >= room {
			t = later2(t, times[len(times)-room].Add(span))
		}
		if x == me {
			return t
		}
		j, _ := slices.BinarySearchFunc(times, t, func(a, b time.Time) int { return a.Compare(b) })
		times = slices.Insert(times, j, t)
	}
	return now
}

// forget drops the channels that wait for nothing and whose window is empty, once there are
// many. Under p.mu.
func (p *createPacer) forget(now time.Time) {
	if len(p.lines) <= 10000 {
		return
	}
	span := p.per + createMargin
	for c, l := range p.lines {
		if len(l.waiting) == 0 && (len(l.went) == 0 || !l.went[len(l.went)-1].Add(span).After(now)) {
			delete(p.lines, c)
		}
	}
}

func later2(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
