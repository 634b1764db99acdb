package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/turn"
)

// Store is what the gateway uses of store.Backend.
type Store interface {
	turn.Store // the turn lease and compaction, for edits of a history outside a turn
	GetSession(ctx context.Context, id string) (store.Session, error)
	CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error)
	ResumeTarget(ctx context.Context, id string) (string, error)
	Conversation(ctx context.Context, sessionID string, v store.View) ([]store.Message, error)
	AppendBatch(ctx context.Context, sessionID string, ms []store.Message, opts ...store.WriteOption) ([]int64, error)
	PutRoute(ctx context.Context, r store.Route) error
	GetRoute(ctx context.Context, key string) (store.Route, error)
	ClaimIdempotencyKey(ctx context.Context, c store.IdempotencyClaim) (store.IdempotencyEntry, bool, error)
	CompleteIdempotencyKey(ctx context.Context, scope, key string, status int, response []byte) error
	ReleaseIdempotencyKey(ctx context.Context, scope, key string) error
	ConversationPage(ctx context.Context, sessionID string, q store.PageQuery) ([]store.Message, error)
	DeleteSession(ctx context.Context, id string) error
	HideMessage(ctx context.Context, sessionID string, id int64, f store.Fence, opts ...store.WriteOption) (int, error)
	Chain(ctx context.Context, id string) ([]store.Session, error)
	store.APIResponses
}

// Runner runs one turn (an *agent.Agent).
type Runner interface {
	Run(ctx context.Context, sessionID, input string, opts agent.RunOptions) (agent.Result, error)
}

// Compactor runs a manual compaction (an *agent.Agent); a Runner that is one serves
// Gateway.Compact.
type Compactor interface {
	Compact(ctx context.Context, sessionID, focus string, opts agent.RunOptions) (agent.Result, error)
}

// Busy is a request's policy for a session whose turn is running.
type Busy string

// Busy policies (X-Spool-Busy).
const (
	BusyWait      Busy = ""
	BusyReject    Busy = "reject"
	BusyQueue     Busy = "queue"
	BusyInterrupt Busy = "interrupt"
)

// ParseBusy reads an X-Spool-Busy value.
func ParseBusy(s string) (Busy, error) {
	switch b := Busy(s); b {
	case BusyWait, "wait":
		return BusyWait, nil
	case BusyReject, BusyQueue, BusyInterrupt:
		return b, nil
	}
	return "", badRequest("X-Spool-Busy", "X-Spool-Busy %q is not one of reject, queue, interrupt, wait", s)
}

// Config is the gateway's behaviour. Zero fields take defaults.
type Config struct {
	// Model is the default model's name (what "spool" means); recorded on new sessions.
	Model string
	// BusyWait is how long a request waits for a busy session before *BusyError (0: at once).
	BusyWait time.Duration
	// RetryAfter is what a *BusyError asks the client to wait (default 1s).
	RetryAfter time.Duration
	// MaxConcurrent bounds the running requests of one principal (0: 8).
	MaxConcurrent int
	// TurnTimeout bounds one turn (0: 10 minutes).
	TurnTimeout time.Duration
	// IdempotencyTTL is how long an idempotent outcome is replayed (0: 24h).
	IdempotencyTTL time.Duration
	// Tools names, per principal, which of the runner's own tools (session_search, memory)
	// its turns may use; a principal not listed gets none.
	Tools map[string][]string
	// Home is $SPOOL_HOME: a principal's prompt reads its memories from PrincipalHome.
	Home string
}

func (c Config) withDefaults() Config {
	if c.RetryAfter <= 0 {
		c.RetryAfter = time.Second
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 8
	}
	if c.TurnTimeout <= 0 {
		c.TurnTimeout = 10 * time.Minute
	}
	if c.IdempotencyTTL <= 0 {
		c.IdempotencyTTL = 24 * time.Hour
	}
	return c
}

// Deps are a gateway's collaborators.
type Deps struct {
	Store Store
	// Runner runs turns whose lease wait is Config.BusyWait; Queue (nil: Runner) runs queued ones
	// with a long lease wait.
	Runner  Runner
	Queue   Runner
	Metrics *Metrics
	Config  Config
	// Log gets the errors no caller can be told of (a store write after a turn's answer went
	// out); nil: none.
	Log *slog.Logger
}

// Gateway resolves requests to sessions and runs their turns. Safe for concurrent use.
type Gateway struct {
	st      Store
	run     Runner
	queue   Runner
	m       *Metrics
	cfg     Config
	log     *slog.Logger
	turnCtx context.Context
	stop    context.CancelCauseFunc

	mu       sync.Mutex
	slots    map[string]*slot
	active   map[string]int // running requests per principal
	draining bool
	turns    sync.WaitGroup
}

// New returns a gateway.
func New(d Deps) (*Gateway, error) {
	if d.Store == nil || d.Runner == nil {
		return nil, errors.New("gateway: a store and a runner are required")
	}
	if d.Queue == nil {
		d.Queue = d.Runner
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics()
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{st: d.Store, run: d.Runner, queue: d.Queue, m: d.Metrics, cfg: d.Config.withDefaults(), log: d.Log,
		slots: map[string]*slot{}, active: map[string]int{}}
	g.turnCtx, g.stop = context.WithCancelCause(context.Background())
	return g, nil
}

// Metrics is the gateway's metrics.
func (g *Gateway) Metrics() *Metrics { return g.m }

// Config is the gateway's configuration with defaults applied.
func (g *Gateway) Config() Config { return g.cfg }

// Message is one message as a client sent it: a user, system or developer message, an
// assistant message (with the tool calls it made, if any), or a tool result ("tool", naming
// the call it answers).
type Message struct {
	Role       string
	Content    string
	ToolCalls  []store.ToolCall
	ToolCallID string
}

// Request is one turn asked for.
type Request struct {
	Principal  string
	SessionID  string // X-Spool-Session-Id
	SessionKey string // X-Spool-Session-Key
	// Messages are the client's messages, system ones included, the new user message last.
	Messages []Message
	Busy     Busy
	// Append says Messages are all new (the Responses API's input): no history matching; the
	// ones before the last are stored before the turn.
	Append bool
	// After, with SessionID, continues from that message (a previous response, AfterResponse):
	// the session's latest response continues it, an older one branches there.
	After         int64
	AfterResponse string
	// Locate fills Reply.MessageID and Reply.UserMessageID after the turn.
	Locate bool
	// ClientTools are the function tools the client declared; a model call of one of them
	// ends the turn with Reply.Result.PendingCalls, and the client's next request answers
	// them with trailing "tool" messages instead of a user message.
	ClientTools []provider.Tool
	// Instructions are this turn's extra instructions (the Responses API's instructions): added
	// to the turn's user message as per-turn context, stored with it as its wire text, never to
	// the frozen system prompt. A turn that only brings tool results has no user message and
	// ignores them.
	Instructions string
	// MaxTokens bounds each model call's output this turn (0: the model's setting).
	MaxTokens int
}

// Sink hears a turn's events. Its functions run on the turn's goroutine; they must not block
// for long (the HTTP layer queues a stream's writes, bounded, and never waits for its client).
type Sink struct {
	// OnStart is called once the turn holds its session's slot and the conversation's lease
	// (also across processes) and its input was accepted, before the model is called (a
	// stream's headers go out then). A busy session, here or in another process, and a bad
	// input fail before it: the caller can still answer with a status (409, 400).
	OnStart func(sessionID string)
	OnDelta func(provider.Delta)
	// OnDone is called when the turn has finished, also after the sink was detached (a client
	// that went away): an idempotent request records its outcome here. It is not guarded.
	OnDone func(Reply, error)
}

// Reply is what a turn did.
type Reply struct {
	SessionID string
	// BranchedFrom is the session a divergent history was branched from ("" otherwise).
	BranchedFrom string
	Result       agent.Result
	// Detached is set when the caller's context ended during the turn: the sink heard nothing
	// more from then on, the turn ran on and stored its reply, Result is empty.
	Detached bool
	// MessageID is the stored id of the turn's final assistant message and UserMessageID that
	// of its user message (with Request.Locate).
	MessageID, UserMessageID int64
}

// Turn resolves the request's session and runs one turn on it, on the caller's goroutine. When
// ctx ends first (the client went away), the sink is detached at once and the turn goes on to
// its end (it runs on the gateway's own context, not ctx); Turn then returns Reply.Detached.
func (g *Gateway) Turn(ctx context.Context, req Request, sink Sink) (Reply, error) {
	release, err := g.admit(req.Principal)
	if err != nil {
		return Reply{}, err
	}
	defer release()
	p, err := g.resolve(ctx, req)
	if err != nil {
		return Reply{}, err
	}
	reply := Reply{SessionID: p.sessionID, BranchedFrom: p.branchedFrom}

	waitStart := time.Now()
	sl, err := g.acquire(ctx, p.sessionID, req.Busy)
	g.m.leaseWait.Observe(time.Since(waitStart).Seconds())
	if err != nil {
		return reply, err
	}
	g.mu.Lock()
	if g.draining {
		g.mu.Unlock()
		g.releaseSlot(p.sessionID, sl)
		return reply, ErrDraining
	}
	g.turns.Add(1)
	g.mu.Unlock()

	tctx, cancel := context.WithTimeoutCause(g.turnCtx, g.cfg.TurnTimeout, fmt.Errorf("turn exceeded serve.turn_timeout %s", g.cfg.TurnTimeout))
	icx, interrupt := context.WithCancelCause(tctx)
	sl.setCancel(interrupt)
	guard := &guarded{s: sink, caller: ctx}
	runner := g.run
	if req.Busy == BusyQueue || req.Busy == BusyInterrupt {
		runner = g.queue
	}
	// The turn runs on the caller's goroutine (an idle stream holds one goroutine for its request
	// and its turn, not two); a caller that goes away only detaches the sink.
	detach := context.AfterFunc(ctx, guard.detach)
	r, err := func() (Reply, error) {
		defer g.turns.Done()
		defer cancel()
		defer g.releaseSlot(p.sessionID, sl)
		start := time.Now()
		res, err := g.runTurn(icx, runner, p, guard)
		err = g.classify(p.sessionID, err)
		g.m.observeTurn(res, err, time.Since(start))
		if err == nil && p.routeKey != "" && res.SessionID != "" && res.SessionID != p.sessionID {
			// The turn continued in a rotated tip: the route follows it. The answer is stored,
			// so the caller is not failed; until the route is written again, requests on the
			// key reach the old session and find the tip from there.
			if err := g.putRoute(context.WithoutCancel(ctx), p.routeKey, res.SessionID); err != nil {
				g.log.Error("spool serve: a session key's route was not moved to the continued session", "session", res.SessionID, "from", p.sessionID, "err", err)
			}
		}
		r := reply
		r.Result = res
		r.SessionID = cmp.Or(res.SessionID, reply.SessionID)
		if req.Locate && err == nil {
			r.MessageID, r.UserMessageID = g.locate(context.WithoutCancel(ctx), r.SessionID)
		}
		if sink.OnDone != nil {
			sink.OnDone(r, err)
		}
		return r, err
	}()
	if !detach() {
		// The caller went away during the turn: it was told nothing, the turn's reply is stored.
		reply.Detached = true
		return reply, nil
	}
	return r, err
}

func (g *Gateway) runTurn(ctx context.Context, r Runner, p plan, guard *guarded) (agent.Result, error) {
	opts := agent.RunOptions{OnDelta: guard.delta, OnStart: guard.start, Prelude: p.prelude, RestrictTools: true,
		AllowTools: g.cfg.Tools[p.principal], ClientTools: p.clientTools, ToolResults: p.results, MaxTokens: p.maxTokens}
	if strings.TrimSpace(p.instructions) != "" {
		opts.Context.Plugin = []string{"[Instructions for this response]\n" + strings.TrimSpace(p.instructions)}
	}
	if g.cfg.Home != "" {
		opts.PromptHome = PrincipalHome(g.cfg.Home, p.principal)
	}
	return r.Run(ctx, p.sessionID, p.input, opts)
}

// locate finds the last assistant and user messages of a session's active history.
func (g *Gateway) locate(ctx context.Context, sessionID string) (asst, user int64) {
	start := time.Now()
	hist, err := g.st.Conversation(ctx, sessionID, store.ViewActive)
	g.observe("conversation", start)
	if err != nil {
		return 0, 0
	}
	for i := len(hist) - 1; i >= 0 && (asst == 0 || user == 0); i-- {
		switch {
		case asst == 0 && hist[i].Role == store.RoleAssistant:
			asst = hist[i].ID
		case user == 0 && hist[i].Role == store.RoleUser && !hist[i].Summary:
			user = hist[i].ID
		}
	}
	return asst, user
}

// classify turns a runner error into the gateway's errors.
func (g *Gateway) classify(sessionID string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, turn.ErrWaitTimeout) {
		return &BusyError{SessionID: sessionID, RetryAfter: g.cfg.RetryAfter}
	}
	if errors.Is(err, agent.ErrCompressionDisabled) {
		return fmt.Errorf("%w: %v", ErrNoCompaction, err)
	}
	if errors.Is(err, agent.ErrToolResult) {
		return badRequest("messages", "%s", err.Error())
	}
	if errors.Is(err, agent.ErrEmptyInput) {
		return badRequest("messages", "the last user message is empty")
	}
	var tooBig *agent.InputTooLargeError
	if errors.As(err, &tooBig) {
		return &BadRequestError{Param: "messages", Reason: tooBig.Error()}
	}
	return err
}

// admit counts a request against its principal's concurrency limit.
func (g *Gateway) admit(principal string) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.draining {
		return nil, ErrDraining
	}
	if g.active[principal] >= g.cfg.MaxConcurrent {
		g.m.limited.Inc()
		return nil, &LimitError{Principal: principal, Limit: g.cfg.MaxConcurrent}
	}
	g.active[principal]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.active[principal]--; g.active[principal] <= 0 {
			delete(g.active, principal)
		}
	}, nil
}

// StopTurns makes the gateway start no new turns and report Draining (so /ready answers 503)
// while the running ones go on; Drain calls it first.
func (g *Gateway) StopTurns() {
	g.mu.Lock()
	g.draining = true
	g.mu.Unlock()
}

// Drain stops new turns and waits for the running ones until ctx ends; then it cancels them
// (each stores what it has) and waits for them to finish.
func (g *Gateway) Drain(ctx context.Context) error {
	g.StopTurns()
	done := make(chan struct{})
	go func() {
		g.turns.Wait()
		close(done)
	}()
	select {
	case <-done:
		g.stop(ErrDraining)
		return nil
	case <-ctx.Done():
		g.stop(fmt.Errorf("%w: drain deadline passed", ErrDraining))
		<-done
		return fmt.Errorf("drain: running turns were cancelled at the deadline: %w", ctx.Err())
	}
}

// Draining reports whether Drain was called.
func (g *Gateway) Draining() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining
}

// guarded forwards events to a sink until it is detached; detach waits for a running call.
type guarded struct {
	mu  sync.Mutex
	off bool
	s   Sink
	// caller is the caller's context: once it ended nothing more reaches the sink, even before
	// detach has run.
	caller context.Context
}

func (g *guarded) live() bool { return !g.off && (g.caller == nil || g.caller.Err() == nil) }

func (g *guarded) start(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live() && g.s.OnStart != nil {
		g.s.OnStart(id)
	}
}

func (g *guarded) delta(d provider.Delta) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live() && g.s.OnDelta != nil {
		g.s.OnDelta(d)
	}
}

func (g *guarded) detach() {
	g.mu.Lock()
	g.off = true
	g.mu.Unlock()
}
