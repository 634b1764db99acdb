package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

func textHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

// ledger is a turn's send-ledger entries, read once and written through.
type ledger struct {
	tid     string
	entries map[int]store.SendEntry
}

func (r *Router) loadLedger(ctx context.Context, tid string) (*ledger, error) {
	es, err := r.st.Sends(ctx, tid)
	if err != nil {
		return nil, err
	}
	l := &ledger{tid: tid, entries: map[int]store.SendEntry{}}
	for _, e := range es {
		l.entries[e.Chunk] = e
	}
	return l, nil
}

// put sends or edits chunk i to text: a chunk with a message id is edited (only when its
// text changed), never sent again; a chunk without one is recorded before it is sent and
// after, with the id the platform gave it.
func (r *Router) put(ctx context.Context, out Outbound, to Address, l *ledger, i int, text string) error {
	h := textHash(text)
	e, ok := l.entries[i]
	if ok && e.MessageID != "" {
		if e.TextHash == h {
			return nil
		}
		if err := out.Edit(ctx, to, e.MessageID, text); err != nil {
			return fmt.Errorf("edit chunk %d: %w", i, err)
		}
		e.TextHash = h
		if err := r.st.PutSend(context.WithoutCancel(ctx), e); err != nil {
			return err
		}
		l.entries[i] = e
		return nil
	}
	// An entry without a message id is a send whose outcome was never recorded (a crash or a
	// timeout between send and ack): the platform gave no id to edit, so it is sent again,
	// marked Unsure so an adapter that can find or dedupe the first attempt does (SendKey).
	unsure := ok
	e = store.SendEntry{TurnID: l.tid, Chunk: i, TextHash: h}
	if err := r.st.PutSend(ctx, e); err != nil {
		return err
	}
	noticed := i >= 0 && l.entries[-1].MessageID != ""
	id, err := out.Send(WithSendKey(ctx, SendKey{Turn: l.tid, Chunk: i, Unsure: unsure, Noticed: noticed}), to, text)
	if err != nil {
		return fmt.Errorf("send chunk %d: %w", i, err)
	}
	e.MessageID = id
	if err := r.st.PutSend(context.WithoutCancel(ctx), e); err != nil {
		return err
	}
	l.entries[i] = e
	return nil
}

// deliver brings the chat's copy of a reply to text: every chunk of Split(text) sent once,
// edited to its final text (l: the reply's ledger).
func (r *Router) deliver(ctx context.Context, out Outbound, ev Event, text string, l *ledger) error {
	for i, c := range Split(text, out.Limits().MaxChars) {
		if err := r.put(ctx, out, ev.Address, l, i, c); err != nil {
			return err
		}
	}
	return nil
}

// markPrefix starts a notice's ledger message id when the notice is a mark on the user's own
// message (Marker): "mark:" and that message's id.
const markPrefix = "mark:"

// deliverNote tells ev's user a one-off notice (its ledger chunk -1: once, ever): a mark on
// their message where the platform can mark one (Marker), else the text as a message.
func (r *Router) deliverNote(ctx context.Context, ev Event, text string) error {
	out := r.outbound(ev.Platform)
	if out == nil {
		return nil
	}
	l, err := r.loadLedger(ctx, turnID(ev))
	if err != nil {
		return err
	}
	if e, ok := l.entries[-1]; ok && e.MessageID != "" {
		return nil
	}
	if m, ok := out.(Marker); ok && ev.MessageID != "" {
		err := m.MarkQueued(ctx, ev.Address, ev.MessageID)
		if err == nil {
			e := store.SendEntry{TurnID: l.tid, Chunk: -1, TextHash: textHash(text), MessageID: markPrefix + ev.MessageID}
			return r.st.PutSend(context.WithoutCancel(ctx), e)
		}
		if ctx.Err() != nil {
			return err
		}
		r.log.Warn("platform: queued mark failed; a notice instead", "platform", ev.Platform, "err", err)
	}
	return r.put(ctx, out, ev.Address, l, -1, text)
}

// unmarkQueued takes the queued mark off ev's message once its reply is delivered, as counted
// background work: the lane's next turn does not wait for it (best effort: a mark left on
// costs nothing but its look).
func (r *Router) unmarkQueued(out Outbound, ev Event, l *ledger) {
	m, ok := out.(Marker)
	id, marked := strings.CutPrefix(l.entries[-1].MessageID, markPrefix)
	if !ok || !marked {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return
	}
	r.goWork(func() {
		if err := m.UnmarkQueued(r.work, ev.Address, id); err != nil {
			r.log.Warn("platform: take the queued mark off", "platform", ev.Platform, "err", err)
		}
	})
}

// stream edits a reply into the chat while the turn runs, at most every Limits.EditEvery.
type stream struct {
	r    *Router
	ctx  context.Context
	out  Outbound
	ev   Event
	lim  Limits
	l    *ledger
	wake chan struct{}
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	text    strings.Builder
	flushed bool
}

func (r *Router) newStream(ctx context.Context, out Outbound, ev Event) *stream {
	s := &stream{r: r, ctx: ctx, out: out, ev: ev, lim: out.Limits(), wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
	if s.lim.EditEvery <= 0 {
		close(s.done)
		return s
	}
	l, err := r.loadLedger(ctx, turnID(ev))
	if err != nil {
		r.log.Warn("platform: load send ledger", "err", err)
		close(s.done)
		s.lim.EditEvery = 0
		return s
	}
	s.l = l
	go s.loop()
	return s
}

func (s *stream) delta(d provider.Delta) {
	if d.Content == "" || s.lim.EditEvery <= 0 {
		return
	}
	s.mu.Lock()
	if s.text.Len() == 0 {
		s.r.mark(s.ev, "first_delta")
	}
	s.text.WriteString(d.Content)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop flushes the text so far after each wake, then waits out the cadence. Partial text
// only ever grows, so the chunks Split cuts stay where they were.
func (s *stream) loop() {
	defer close(s.done)
	var last time.Time
	for {
		select {
		case <-s.quit:
			return
		case <-s.wake:
		}
		if !last.IsZero() {
			if wait := s.lim.EditEvery - time.Since(last); wait > 0 {
				if s.r.cfg.Sleep(s.ctx, wait) != nil {
					return
				}
			}
		}
		select {
		case <-s.quit:
			return // the final delivery takes over
		default:
		}
		s.mu.Lock()
		text := s.text.String()
		s.mu.Unlock()
		if strings.TrimSpace(text) == "" {
			continue
		}
		if !s.flushed {
			s.flushed = true
			s.r.mark(s.ev, "flush")
		}
		for i, c := range Split(text, s.lim.MaxChars) {
			if err := s.r.put(s.ctx, s.out, s.ev.Address, s.l, i, c); err != nil {
				s.r.log.Warn("platform: stream edit", "platform", s.ev.Platform, "err", err)
				break
			}
		}
		last = time.Now()
	}
}

// stop ends streaming and waits for a running edit.
func (s *stream) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}
