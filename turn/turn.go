package turn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/spoolhq/spool/store"
)

// Store is what a turn uses of a backend: the turn lease (store.Leaser) and compaction's writes
// and lock (store.Compactor). A backend that also implements store.LeaseWatcher wakes waiters at
// once when a lease is released.
type Store interface {
	store.Leaser
	store.Compactor
}

// Defaults of Options (the reference's turn lease figures).
const (
	DefaultTTL        = 300 * time.Second
	DefaultRenewEvery = 60 * time.Second
	DefaultWait       = 30 * time.Minute
	DefaultPoll       = time.Second
	DefaultNotice     = 15 * time.Second
)

// endBudget bounds End's final flush and release, which run even when the caller's context is
// already cancelled (an interrupted turn still persists what it produced and frees the lease).
const endBudget = 15 * time.Second

// Options configure a turn. Zero fields take the defaults; tests shorten them.
type Options struct {
	// TTL is how long the lease (and a compaction's lock) outlives its last renewal.
	TTL time.Duration
	// RenewEvery is the renewal period; it must be shorter than TTL. Default: a fifth of the
	// TTL, at most DefaultRenewEvery.
	RenewEvery time.Duration
	// Wait bounds how long Begin waits for another holder (ErrWaitTimeout after it).
	Wait time.Duration
	// Poll is the retry period while waiting when no wake-up arrives; each wait is jittered by
	// ±20% so waiters do not retry in lockstep.
	Poll time.Duration
	// Notice is how often OnWait is called while waiting.
	Notice time.Duration
	// OnWait, when set, is called as soon as Begin finds the lease held and then every Notice
	// while it waits, with the time waited so far and the current holder, so a UI can say at
	// once why nothing happens. It
	// runs on a goroutine of Begin's, never after Begin returns, and should return quickly.
	OnWait func(waited time.Duration, holder string)
	// Start, when it has messages, is stored with the lease, in the same write (store.BeginTurn),
	// if the session's active history is still the one it describes; Turn.Started says whether
	// it was. Otherwise the lease is taken alone and the caller adds its messages as usual.
	Start store.TurnStart
	// Holder identifies this turn. It must be unique per turn: the store lets a holder re-acquire
	// its own lease, so two turns sharing a holder would not exclude each other. Default:
	// store.NewHolder().String(), with a fresh nonce for every Begin.
	Holder string
}

func (o Options) withDefaults() (Options, error) {
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"TTL", &o.TTL, DefaultTTL}, {"RenewEvery", &o.RenewEvery, max(min(DefaultRenewEvery, o.TTL/5), time.Millisecond)}, {"Wait", &o.Wait, DefaultWait},
		{"Poll", &o.Poll, DefaultPoll}, {"Notice", &o.Notice, DefaultNotice},
	} {
		if *f.v < 0 {
			return o, store.Invalid("turn."+f.name, "negative duration %s", *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if o.RenewEvery >= o.TTL {
		return o, store.Invalid("turn.RenewEvery", "%s must be shorter than the TTL %s", o.RenewEvery, o.TTL)
	}
	if o.Holder == "" {
		o.Holder = store.NewHolder().String()
	}
	return o, nil
}

// Turn holds a conversation's lease for one turn. Its methods are safe for concurrent use.
type Turn struct {
	st      Store
	session string
	o       Options

	ctx    context.Context
	cancel context.CancelCauseFunc

	// The renewer is a timer, not a goroutine (a turn waiting on a slow model holds none of its
	// own for it): each firing renews once and re-arms it, until stopRenewing.
	renewCtx  context.Context
	stopRenew context.CancelFunc
	renewMu   sync.Mutex
	renewOff  bool
	renewT    *time.Timer
	renewing  sync.WaitGroup // a firing in progress

	mu     sync.Mutex
	lease  store.Lease
	lost   *LeaseLostError
	queue  []store.Message // everything Added; queue[:cursor] is persisted
	cursor int
	ids    []int64
	ended  bool
	// started: Options.Start was stored with the lease (queue[:len(Start.Messages)]).
	started bool
	// records and patch ride on the next flush (Record, Patch).
	records []store.RequestRecord
	patch   *store.SessionPatch

	flushMu sync.Mutex // one flush at a time, so the cursor never hands a message out twice
	// failed: the last flush failed and its caller was told (guarded by flushMu); End does not
	// report the same unpersisted messages a second time.
	failed bool

	endOnce sync.Once
	endErr  error
}

// Begin waits for the turn lease of sessionID's conversation and returns the running turn. It
// waits for a wake-up or a jittered poll while another holder owns the lease, and gives up
// after o.Wait with a *WaitTimeoutError, or when ctx ends. A database that stays locked is not
// another holder: the store's write waits its own budget and Begin returns its
// *store.WriteTimeoutError at once (a short busy spell is retried at once, within o.Wait). The caller must End the turn (or use Run), and must
// reload the history after Begin returns: another turn may have committed while we waited.
func Begin(ctx context.Context, st Store, sessionID string, o Options) (*Turn, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	l, ids, err := acquire(ctx, st, sessionID, o)
	if err != nil {
		return nil, err
	}
	t := &Turn{st: st, session: sessionID, o: o, lease: l}
	if len(ids) > 0 {
		// Stored with the lease: persisted from the start.
		t.queue = append([]store.Message(nil), o.Start.Messages...)
		t.cursor, t.ids, t.started = len(t.queue), ids, true
	}
	t.ctx, t.cancel = context.WithCancelCause(ctx)
	// The renewer outlives a cancelled caller context on purpose: the lease must stay ours until
	// End has flushed and released it.
	t.renewCtx, t.stopRenew = context.WithCancel(context.WithoutCancel(ctx))
	t.renewMu.Lock()
	t.renewT = time.AfterFunc(o.RenewEvery, t.renewTick)
	t.renewMu.Unlock()
	return t, nil
}

func acquire(ctx context.Context, st Store, sessionID string, o Options) (store.Lease, []int64, error) {
	start := time.Now()
	deadline := start.Add(o.Wait)
	var watch store.LeaseWatch
	var notices *noticer
	defer func() {
		if notices != nil {
			notices.stop()
		}
		if watch != nil {
			_ = watch.Close()
		}
	}()
	watcher, canWatch := st.(store.LeaseWatcher)
	for {
		if err := ctx.Err(); err != nil {
			return store.Lease{}, nil, fmt.Errorf("wait for the turn lease of %s: %w", sessionID, context.Cause(ctx))
		}
		var l store.Lease
		var ids []int64
		var err error
		if len(o.Start.Messages) > 0 {
			l, ids, err = st.BeginTurn(ctx, sessionID, o.Holder, o.TTL, o.Start)
		} else {
			l, err = st.AcquireLease(ctx, sessionID, o.Holder, o.TTL)
		}
		if err == nil {
			return l, ids, nil
		}
		var held *store.LeaseHeldError
		switch {
		case errors.As(err, &held):
		case errors.Is(err, store.ErrWriteTimeout):
			// The database itself is stuck (a writer holding its lock, a row another
			// transaction holds): the store waited its whole write budget and said so. That is
			// no holder to wait for; waiting on for o.Wait would be a silent half hour.
			return store.Lease{}, nil, err
		case errors.Is(err, store.ErrBusy):
			// A locked database is not another holder: try again at once, within the bound.
			if time.Now().After(deadline) {
				return store.Lease{}, nil, fmt.Errorf("wait for the turn lease of %s: %w", sessionID, err)
			}
			continue
		case ctx.Err() != nil:
			return store.Lease{}, nil, fmt.Errorf("wait for the turn lease of %s: %w", sessionID, context.Cause(ctx))
		default:
			return store.Lease{}, nil, err
		}
		now := time.Now()
		if !now.Before(deadline) {
			return store.Lease{}, nil, &WaitTimeoutError{SessionID: sessionID, Holder: held.Holder, Waited: now.Sub(start)}
		}
		if watch == nil && canWatch {
			// Watch first, then try again before sleeping: a release between the failed attempt
			// and the watch's start would otherwise be missed until the next poll.
			if w, werr := watcher.WatchLease(held.ConversationID); werr == nil {
				watch = w
				continue
			}
			canWatch = false // polling still works
		}
		if o.OnWait != nil {
			if notices == nil {
				notices = startNotices(start, o.Notice, o.OnWait, held.Holder)
			}
			notices.setHolder(held.Holder)
		}
		// Any return of the watch is worth an attempt: a wake-up, or the (jittered) poll, or
		// the holder's expiry: a crashed holder on another host releases nothing and sends no
		// wake-up, so waiting for the next poll after its lease ran out would add up to a poll.
		wait := min(jitter(o.Poll), deadline.Sub(now))
		if d := time.Until(held.ExpiresAt) + 10*time.Millisecond; d > 0 {
			wait = min(wait, d)
		}
		if err := sleep(ctx, watch, wait); err != nil {
			return store.Lease{}, nil, fmt.Errorf("wait for the turn lease of %s: %w", sessionID, context.Cause(ctx))
		}
	}
}

// noticer calls OnWait every Notice from its own goroutine, so notices never shorten the
// watch's wait (a wake-up arriving at the end of a short wait could otherwise be taken for a
// timeout and lost until the next poll).
type noticer struct {
	mu     sync.Mutex
	holder string
	quit   chan struct{}
	done   chan struct{}
}

func startNotices(start time.Time, every time.Duration, fn func(time.Duration, string), holder string) *noticer {
	n := &noticer{quit: make(chan struct{}), done: make(chan struct{}), holder: holder}
	go func() {
		defer close(n.done)
		// The first notice comes at once, so a waiting user knows why nothing happens.
		fn(time.Since(start), holder)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-n.quit:
				return
			case now := <-tick.C:
				n.mu.Lock()
				holder := n.holder
				n.mu.Unlock()
				fn(now.Sub(start), holder)
			}
		}
	}()
	return n
}

func (n *noticer) setHolder(h string) {
	n.mu.Lock()
	n.holder = h
	n.mu.Unlock()
}

// stop returns once no OnWait call is running or will run.
func (n *noticer) stop() {
	close(n.quit)
	<-n.done
}

// jitter spreads d by ±20%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// sleep waits d, or less when watch reports that the lease may have changed.
func sleep(ctx context.Context, watch store.LeaseWatch, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if watch != nil {
		if err := watch.Wait(ctx, d); err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		// A broken watch degrades to the plain sleep below.
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// renewTick is one firing of the renewer: it renews the lease and re-arms the timer for the
// next one, unless End stopped it meanwhile.
func (t *Turn) renewTick() {
	t.renewMu.Lock()
	if t.renewOff {
		t.renewMu.Unlock()
		return
	}
	t.renewing.Add(1)
	t.renewMu.Unlock()
	defer t.renewing.Done()
	next, again := t.renewOnce(t.renewCtx)
	t.renewMu.Lock()
	if again && !t.renewOff {
		t.renewT.Reset(next)
	}
	t.renewMu.Unlock()
}

// stopRenewing stops the renewer; once it returns no renewal runs or will run.
func (t *Turn) stopRenewing() {
	t.renewMu.Lock()
	t.renewOff = true
	t.renewT.Stop()
	t.renewMu.Unlock()
	t.stopRenew() // interrupts a renewal in progress: End is taking over
	t.renewing.Wait()
}

// renewOnce extends the lease and says when to try next. A proven loss cancels the turn; a
// busy database is retried while the lease has time left; any other failure cancels the turn,
// since we can no longer vouch for the lease.
func (t *Turn) renewOnce(ctx context.Context) (next time.Duration, again bool) {
	l := t.Lease()
	nl, err := t.st.RenewLease(ctx, l, t.o.TTL)
	switch {
	case err == nil:
		t.mu.Lock()
		t.lease = nl
		t.mu.Unlock()
		return t.o.RenewEvery, true
	case ctx.Err() != nil:
		return 0, false // End is stopping us; an interrupted renewal is no loss
	case errors.Is(err, store.ErrLeaseLost):
		t.lose(err, false)
		return 0, false
	case errors.Is(err, store.ErrBusy) && time.Until(l.ExpiresAt) > t.o.RenewEvery/4:
		return t.o.RenewEvery / 4, true
	default:
		t.lose(err, true)
		return 0, false
	}
}

// lose records the loss once and cancels the turn's context with it as the cause.
func (t *Turn) lose(err error, refresh bool) *LeaseLostError {
	t.mu.Lock()
	if t.lost == nil {
		t.lost = &LeaseLostError{ConversationID: t.lease.ConversationID, Generation: t.lease.Generation, Refresh: refresh, Err: err}
	}
	lost := t.lost
	t.mu.Unlock()
	t.cancel(lost)
	return lost
}

// Context is cancelled when the lease is lost (context.Cause is then a *LeaseLostError), when
// the context given to Begin ends, or when the turn ends (cause ErrEnded).
func (t *Turn) Context() context.Context { return t.ctx }

// SessionID is the session the turn writes to (a rotation moves it to the continuation).
func (t *Turn) SessionID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// Started reports whether Options.Start's messages were stored with the lease (they are then
// the first of Persisted). When false, none of them was stored: the history had changed since
// the caller read it, or there were none.
func (t *Turn) Started() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}

// Holder is the turn's holder identity (also its compression-lock holder).
func (t *Turn) Holder() string { return t.o.Holder }

// Lease is the current lease (its expiry moves with each renewal; the generation never does).
func (t *Turn) Lease() store.Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lease
}

// Fence is the fence of the turn's lease, for the history edits made under it (undo, hide,
// compaction) and, through store.WithFence, for the writes that may be fenced.
func (t *Turn) Fence() store.Fence { return t.Lease().Fence() }

// Lost returns the loss that cancelled the turn, or nil while the lease is ours.
func (t *Turn) Lost() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lost == nil {
		return nil
	}
	return t.lost
}

// End finishes the turn: it stops the renewer, flushes what is not yet persisted (messages,
// request records, the session patch; unless the lease was lost: they are dropped and End
// reports how many messages), releases the lease (in the same transaction as that last flush
// when there is one; releasing a lost lease is harmless) and cancels the turn's context. It runs even when ctx is already
// cancelled, bounded by its own budget. Only the first call does the work; later calls return
// the same result.
func (t *Turn) End(ctx context.Context) error {
	t.endOnce.Do(func() { t.endErr = t.end(ctx) })
	return t.endErr
}

func (t *Turn) end(ctx context.Context) error {
	t.stopRenewing()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endBudget)
	defer cancel()
	var errs []error
	session := t.SessionID()
	released := false
	t.flushMu.Lock()
	if lost := t.Lost(); lost != nil {
		if n := t.Pending(); n > 0 {
			errs = append(errs, fmt.Errorf("end turn on %s: %d messages not persisted: %w", session, n, lost))
		}
	} else {
		// The last flush gives the lease up in its own transaction.
		// Checked before the flush, which sets it: a failure the caller already heard of from
		// Flush is not reported twice.
		told := t.failed
		var err error
		if released, err = t.flushLocked(dctx, true); err != nil && !told {
			errs = append(errs, fmt.Errorf("end turn on %s: %w", session, err))
		}
	}
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
	t.flushMu.Unlock()
	if !released {
		if err := t.st.ReleaseLease(dctx, t.Lease()); err != nil {
			errs = append(errs, fmt.Errorf("end turn on %s: %w", session, err))
		}
	}
	t.cancel(ErrEnded)
	return firstOf(errs...)
}

// firstOf returns nil, the one error, or an error that says the first of errs and keeps every
// one for errors.Is and As. Two failures of one cause (a database gone: the flush, then the
// release) would otherwise make one line of two sentences saying the same thing.
func firstOf(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return &firstError{errs: kept}
}

type firstError struct{ errs []error }

func (e *firstError) Error() string   { return e.errs[0].Error() }
func (e *firstError) Unwrap() []error { return e.errs }

// Run begins a turn, calls fn with the turn's context, and ends the turn on every exit path: a
// return, an error, or a panic (re-raised after the lease is released). When fn fails because
// the lease was lost, the returned error says so (errors.Is(err, store.ErrLeaseLost)). fn must
// reload the history before using it (see Begin).
func Run(ctx context.Context, st Store, sessionID string, o Options, fn func(ctx context.Context, t *Turn) error) (err error) {
	t, err := Begin(ctx, st, sessionID, o)
	if err != nil {
		return err
	}
	defer func() {
		p := recover()
		endErr := t.End(ctx)
		if p != nil {
			panic(p)
		}
		if err != nil && endErr != nil && !errors.Is(endErr, store.ErrLeaseLost) {
			// The end's failure is the work's own cause again (a database gone): one line.
			err = firstOf(err, endErr)
		} else {
			err = errors.Join(err, endErr) // what a lost lease left unsaved is news
		}
	}()
	err = fn(t.Context(), t)
	if lost := t.Lost(); err != nil && lost != nil && !errors.Is(err, store.ErrLeaseLost) {
		err = fmt.Errorf("%w: %w", lost, err)
	}
	return err
}
