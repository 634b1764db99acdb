package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/recall"
	"github.com/spoolhq/spool/store"
)

// Store is what the Router uses of store.Backend.
type Store interface {
	recall.Store
	CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error)
	EndSession(ctx context.Context, id, reason string) error
	ReopenSession(ctx context.Context, id string) error
	DeleteSession(ctx context.Context, id string) error
	ResumeTarget(ctx context.Context, id string) (string, error)
	SetTitle(ctx context.Context, id, title string, opts ...store.WriteOption) error
	UndoLastExchange(ctx context.Context, sessionID string, f store.Fence) (int, error)
	Requests(ctx context.Context, id string, limit int) ([]store.RequestRecord, error)
	GetRoute(ctx context.Context, key string) (store.Route, error)
	PutRoute(ctx context.Context, r store.Route) error
	ClaimRoute(ctx context.Context, r store.Route) (store.Route, bool, error)
	RecordInbound(ctx context.Context, e store.InboundEvent) (store.InboundEvent, bool, error)
	ClaimInbound(ctx context.Context, platform, eventID, holder string, ttl time.Duration) (store.InboundEvent, bool, error)
	UpdateInbound(ctx context.Context, u store.InboundUpdate) error
	UnfinishedInbound(ctx context.Context, platform string, limit int) ([]store.InboundEvent, error)
	PutSend(ctx context.Context, e store.SendEntry) error
	Sends(ctx context.Context, turnID string) ([]store.SendEntry, error)
}

var _ Store = store.Backend(nil)

// Turns runs turns and session operations with the gateway's slots (a *gateway.Gateway).
type Turns interface {
	TurnSession(ctx context.Context, st gateway.SessionTurn, sink gateway.Sink) (gateway.Reply, error)
	CompactSession(ctx context.Context, sessionID, focus string) (agent.Result, error)
	// EditHistory runs a history edit outside a turn under the session's slot and its
	// conversation's lease (fn's writes fenced by f); *gateway.BusyError while another
	// process's turn holds it.
	EditHistory(ctx context.Context, sessionID string, fn func(ctx context.Context, f store.Fence) error) error
	Interrupt(sessionID string) bool
}

// Config is the Router's behaviour. Zero fields take defaults.
type Config struct {
	// Principal owns the sessions the router creates (their user_id); "" is gateway.Local.
	Principal string
	// Policies are the key policies per platform (DefaultPolicy when absent).
	Policies map[string]Policy
	// Busy is the policy per platform for a message arriving during a running turn of its key:
	// gateway.BusyQueue (default) or gateway.BusyInterrupt.
	Busy map[string]gateway.Busy
	// Model is recorded on new sessions.
	Model string
	// Window is the model's context length in tokens (0: agent.DefaultContextLength), for
	// hygiene and /status.
	Window int
	// HygieneAt is the share of Window above which a session is compacted before its turn
	// (0: compress.GatewayHygieneRatio, 0.85; negative: off, as when compression is disabled).
	// The size is the session's usage anchor when the agent recorded one, else the estimate
	// (compress.GatewayHygiene).
	HygieneAt float64
	// Holder names this process in inbox claims (default: a fresh store holder).
	Holder string
	// ClaimTTL bounds how long an event stays claimed by a process that died (0: 15 minutes;
	// it should exceed serve.turn_timeout).
	ClaimTTL time.Duration
	// RecoverEvery is how often unfinished inbox events (another process's that died, a send
	// that failed) are looked for (0: 10s; negative: only at start).
	RecoverEvery time.Duration
	// DrainTimeout bounds the wait for running lanes after Serve's ctx ended (0: 30s).
	DrainTimeout time.Duration
	// Sleep waits between two edits of a streamed reply (default: a timer); tests inject one.
	Sleep func(ctx context.Context, d time.Duration) error
	// Mark, when set, hears the steps of an event on its way to its reply's first message
	// (benchmarks: where the latency goes): "recorded" (Handle's inbox write is done),
	// "started" (its lane took it), "prepared" (claimed, session resolved, hygiene checked,
	// state running recorded), "first_delta" (the model's first text arrived), "flush" (the
	// reply's first send or edit begins). It must return at once.
	Mark func(ev Event, step string)
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = agent.DefaultContextLength
	}
	if c.Holder == "" {
		c.Holder = store.NewHolder().String()
	}
	if c.ClaimTTL <= 0 {
		c.ClaimTTL = 15 * time.Minute
	}
	if c.RecoverEvery == 0 {
		c.RecoverEvery = 10 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.Sleep == nil {
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return c
}

// RouterDeps are a Router's collaborators.
type RouterDeps struct {
	Store  Store
	Turns  Turns
	Log    *slog.Logger
	Config Config
}

// Router turns platform events into turns of their chats' sessions. Safe for concurrent use.
type Router struct {
	st   Store
	gw   Turns
	log  *slog.Logger
	cfg  Config
	cmds map[string]CommandFunc

	mu       sync.Mutex
	out      map[string]Outbound
	lanes    map[string]*lane
	inflight map[string]bool      // platform/event ids queued or running here
	held     map[string]Event     // events this router claimed and has not finished
	fresh    map[string]time.Time // events Handle recorded here (claimed until then + ClaimTTL), not yet started
	streak   map[string]int       // hygiene failures per key
	work     context.Context      // lanes' context: ends DrainTimeout after Serve's
	stopWork context.CancelFunc
	lanesWG  sync.WaitGroup
	closing  bool
	active   int           // background work running (lanes, notices, stop/status)
	idle     chan struct{} // closed when active drops to 0
}

// lane is one key's queue: one turn at a time, in arrival order.
type lane struct {
	key     string
	queue   []Event
	running *Event
	session string // the session of the running turn
}

// NewRouter returns a router; Serve (or Attach) connects adapters.
func NewRouter(d RouterDeps) (*Router, error) {
	if d.Store == nil || d.Turns == nil {
		return nil, errors.New("platform: a store and a gateway are required")
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	r := &Router{st: d.Store, gw: d.Turns, log: d.Log, cfg: d.Config.withDefaults(),
		cmds: map[string]CommandFunc{}, out: map[string]Outbound{}, lanes: map[string]*lane{},
		inflight: map[string]bool{}, held: map[string]Event{}, fresh: map[string]time.Time{}, streak: map[string]int{}, idle: make(chan struct{})}
	close(r.idle)
	r.work, r.stopWork = context.WithCancel(context.Background())
	return r, nil
}

// Attach registers an adapter's outbound side for its platform (Serve does it).
func (r *Router) Attach(a Adapter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out[a.Platform()] = a
}

// Serve attaches the adapters, re-drives unanswered inbox events, runs every adapter's intake
// and rescans the inbox every Config.RecoverEvery, until ctx ends; then it waits for the
// running lanes (up to Config.DrainTimeout) and returns. An adapter whose Run fails ends Serve
// with its error.
func (r *Router) Serve(ctx context.Context, adapters ...Adapter) error {
	for _, a := range adapters {
		r.Attach(a)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, a := range adapters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(ctx, r); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("%s adapter: %w", a.Platform(), err))
			}
		}()
	}
	r.Recover(ctx)
	if r.cfg.RecoverEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(r.cfg.RecoverEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					r.Recover(ctx)
				}
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.lanesWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(r.cfg.DrainTimeout):
		r.stopWork()
		<-done
	}
	r.stopWork()
	r.releaseHeld()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// Recover schedules the unfinished inbox events of every attached platform that are not
// queued here: another process's that died (once its claim expired), or this one's from
// before a restart. A claim held by a live process is left to it.
func (r *Router) Recover(ctx context.Context) {
	r.mu.Lock()
	platforms := make([]string, 0, len(r.out))
	for p := range r.out {
		platforms = append(platforms, p)
	}
	r.mu.Unlock()
	now := time.Now()
	for _, p := range platforms {
		evs, err := r.st.UnfinishedInbound(ctx, p, 0)
		if err != nil {
			r.log.Warn("platform: list unfinished events", "platform", p, "err", err)
			continue
		}
		for _, in := range evs {
			if in.Holder != "" && in.Holder != r.cfg.Holder && in.ClaimedUntil.After(now) && !store.HolderProvablyDead(in.Holder) {
				continue
			}
			var ev Event
			if err := json.Unmarshal(in.Payload, &ev); err != nil || ev.EventID == "" {
				r.log.Warn("platform: unreadable inbox event", "platform", p, "event", in.EventID)
				continue
			}
			r.enqueue(in.SessionKey, ev, true)
		}
	}
}

// Handle implements Handler: it records ev in the inbox and queues its turn on its key's lane.
// An event that cannot be keyed (bad ids) is logged and dropped: a redelivery would not fix it.
func (r *Router) Handle(ctx context.Context, ev Event) error {
	r.mu.Lock()
	_, attached := r.out[ev.Platform]
	r.mu.Unlock()
	if !attached {
		return fmt.Errorf("platform %q has no attached adapter", ev.Platform)
	}
	if ev.EventID == "" {
		return errors.New("an event needs an event id (the platform's, for deduplication)")
	}
	key, err := r.policy(ev.Platform).Key(ev.Address)
	if err != nil {
		r.log.Warn("platform: event dropped", "platform", ev.Platform, "event", ev.EventID, "err", err)
		return nil
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	recorded := time.Now()
	_, fresh, err := r.st.RecordInbound(ctx, store.InboundEvent{Platform: ev.Platform, EventID: ev.EventID, SessionKey: key,
		Payload: payload, Holder: r.cfg.Holder, ClaimedUntil: recorded.Add(r.cfg.ClaimTTL), ReceivedAt: ev.At})
	if err != nil {
		return err
	}
	if !fresh {
		return nil // a redelivery: the first delivery's turn answers it
	}
	r.mark(ev, "recorded")
	r.log.Debug("platform: recorded", "platform", ev.Platform, "event", ev.EventID)
	r.mu.Lock()
	r.fresh[inflightID(ev)] = recorded
	r.mu.Unlock()
	r.hold(ev)
	r.enqueue(key, ev, false)
	return nil
}

func (r *Router) mark(ev Event, step string) {
	if r.cfg.Mark != nil {
		r.cfg.Mark(ev, step)
	}
}

func (r *Router) policy(platform string) Policy {
	if p, ok := r.cfg.Policies[platform]; ok {
		return p
	}
	return DefaultPolicy
}

func (r *Router) busy(platform string) gateway.Busy {
	if b := r.cfg.Busy[platform]; b == gateway.BusyInterrupt {
		return b
	}
	return gateway.BusyQueue
}

func inflightID(ev Event) string { return ev.Platform + "/" + ev.EventID }

// enqueue puts ev on its key's lane, starting the lane's worker when idle. A message for a
// busy lane is queued (the user is told) or interrupts the running turn. /stop and /status
// are answered at once, beside a running turn.
func (r *Router) enqueue(key string, ev Event, recovered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing || r.inflight[inflightID(ev)] {
		return
	}
	r.inflight[inflightID(ev)] = true
	if c, ok := parseCommand(ev.Text); ok && (c.name == "stop" || c.name == "status") {
		r.goWork(func() {
			r.process(r.work, key, ev)
			r.forget(ev)
		})
		return
	}
	l := r.lanes[key]
	if l == nil {
		l = &lane{key: key, queue: []Event{ev}}
		r.lanes[key] = l
		r.goWork(func() { r.drive(l) })
		return
	}
	l.queue = append(l.queue, ev)
	if l.running == nil || recovered {
		return
	}
	if r.busy(ev.Platform) == gateway.BusyInterrupt {
		if l.session != "" {
			go r.gw.Interrupt(l.session)
		}
		return
	}
	// Tell the user it was queued (a ledger entry of its own: chunk -1 of its turn).
	ahead := len(l.queue)
	r.goWork(func() {
		note := "⏳ Queued: I'm still on your previous message; this one comes next."
		if ahead > 1 {
			note = fmt.Sprintf("⏳ Queued (%d ahead): I'll answer in order.", ahead)
		}
		if err := r.deliverNote(r.work, ev, note); err != nil {
			r.log.Warn("platform: queued notice", "platform", ev.Platform, "err", err)
		}
	})
}

// goWork runs fn as counted background work; r.mu is held.
func (r *Router) goWork(fn func()) {
	if r.active == 0 {
		r.idle = make(chan struct{})
	}
	r.active++
	r.lanesWG.Add(1)
	go func() {
		defer r.lanesWG.Done()
		defer func() {
			r.mu.Lock()
			if r.active--; r.active == 0 {
				close(r.idle)
			}
			r.mu.Unlock()
		}()
		fn()
	}()
}

// drive runs a lane's events one at a time until its queue is empty.
func (r *Router) drive(l *lane) {
	for {
		r.mu.Lock()
		if len(l.queue) == 0 || r.work.Err() != nil || r.closing {
			delete(r.lanes, l.key)
			for _, ev := range l.queue {
				delete(r.inflight, inflightID(ev))
			}
			r.mu.Unlock()
			return
		}
		ev := l.queue[0]
		l.queue = l.queue[1:]
		l.running, l.session = &ev, ""
		r.mu.Unlock()
		r.process(r.work, l.key, ev)
		r.forget(ev)
		r.mu.Lock()
		l.running, l.session = nil, ""
		r.mu.Unlock()
	}
}

func (r *Router) forget(ev Event) {
	r.mu.Lock()
	delete(r.inflight, inflightID(ev))
	delete(r.fresh, inflightID(ev))
	r.mu.Unlock()
}

// ownFresh reports whether Handle recorded ev here and its claim (from the recording) still
// has most of its ClaimTTL left: then it is pending and ours, and claiming it again would
// only repeat a store write on the way to the reply.
func (r *Router) ownFresh(ev Event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.fresh[inflightID(ev)]
	delete(r.fresh, inflightID(ev))
	return ok && time.Since(at) < r.cfg.ClaimTTL/2
}

func (r *Router) setRunning(key, session string) {
	r.mu.Lock()
	if l := r.lanes[key]; l != nil {
		l.session = session
	}
	r.mu.Unlock()
}

// runningSession is the session of the key's running turn ("" when none runs here).
func (r *Router) runningSession(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.lanes[key]; l != nil {
		return l.session
	}
	return ""
}

// Idle waits until the router has no work queued or running (tests, drains).
func (r *Router) Idle(ctx context.Context) error {
	r.mu.Lock()
	ch := r.idle
	r.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Router) hold(ev Event) {
	r.mu.Lock()
	r.held[inflightID(ev)] = ev
	r.mu.Unlock()
}

func (r *Router) unhold(ev Event) {
	r.mu.Lock()
	delete(r.held, inflightID(ev))
	r.mu.Unlock()
}

// releaseHeld gives up the claims of the events this router did not finish, so the next
// process (or another replica) takes them at once instead of after Config.ClaimTTL.
func (r *Router) releaseHeld() {
	r.mu.Lock()
	evs := make([]Event, 0, len(r.held))
	for _, ev := range r.held {
		evs = append(evs, ev)
	}
	r.held = map[string]Event{}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ev := range evs {
		err := r.st.UpdateInbound(ctx, store.InboundUpdate{Platform: ev.Platform, EventID: ev.EventID, Holder: r.cfg.Holder, Release: true})
		if err != nil && !errors.Is(err, store.ErrLeaseLost) {
			r.log.Warn("platform: release an unfinished event", "platform", ev.Platform, "event", ev.EventID, "err", err)
		}
	}
}
