package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
	"github.com/spoolhq/spool/turn"
	"github.com/spoolhq/spool/wire"
)

// run is the state of one turn.
type run struct {
	a    *Agent
	t    *turn.Turn
	opts RunOptions
	res  *Result

	sess    store.Session
	history []store.Message // active history, this turn's messages appended
	base    int             // len(history) when the turn started
	// start, when set, was stored with the lease (store.BeginTurn), made for the active history
	// seen (read before the lease, proven current by the store when it took it).
	start, seen []store.Message
	prompt      prompt.Prompt
	tools       []provider.Tool

	state      compress.State
	stateDirty bool

	// m is the model the turn calls (index mi of the agent's models): the first not cooling
	// down, then the next one after each failure that falls back (fallback.go).
	m         *model
	mi        int
	tried     map[int]bool // models this turn gave up on
	delivered bool         // the failed call had streamed text to the user
	why       string       // the failure that moved the turn to m, for the forensics

	prev      *memo           // the session's previous model call, for cache forensics
	compacted bool            // a compaction ran since prev
	refused   int             // estimate of the request the provider last refused as too long (0: none)
	said      map[string]bool // notices already given this turn
	client    map[string]bool // names of the caller's tools (RunOptions.ClientTools)
}

// Run runs one turn of sessionID with the user's input and returns what it did. An empty
// sessionID starts a new session; a session continued by compression rotation runs on its live
// tip (Result.SessionID says which). On error, Result still describes what was done, and
// everything said before the error is stored.
func (a *Agent) Run(ctx context.Context, sessionID, input string, opts RunOptions) (Result, error) {
	if len(opts.ToolResults) > 0 {
		if input != "" {
			return Result{SessionID: sessionID}, &ToolResultError{Reason: "tool results come without a user message in the same turn"}
		}
		if sessionID == "" {
			return Result{}, &ToolResultError{Reason: "tool results need the session that made the calls"}
		}
	} else if strings.TrimSpace(input) == "" {
		return Result{SessionID: sessionID}, ErrEmptyInput
	}
	if tok := tokens.EstimateText(input); tok > a.cfg.ContextLength/2 {
		return Result{SessionID: sessionID}, &InputTooLargeError{Bytes: len(input), Tokens: tok, MaxTokens: a.cfg.ContextLength / 2, Model: a.cfg.Model}
	}
	var first *store.Message
	var seen, start []store.Message // the turn's opening messages and the history they were made for
	if sessionID == "" && len(opts.Prelude) > 0 {
		s, err := a.CreateSession(ctx, store.NewSession{})
		if err != nil {
			return Result{}, err
		}
		sessionID = s.ID
		seen, start = a.opening(ctx, sessionID, input, opts)
	} else if sessionID == "" {
		// A new session is created with its user message in one transaction, so a store that
		// fails the first write (a damaged file, a full disk) is left without an empty session.
		user := userMessage(input, opts, a.now())
		s, err := a.CreateSession(ctx, store.NewSession{Messages: []store.Message{user}})
		if err != nil {
			return Result{}, err
		}
		sessionID, first = s.ID, &user
	} else {
		tip, err := a.st.ResumeTarget(ctx, sessionID)
		if err != nil {
			return Result{SessionID: sessionID}, fmt.Errorf("find session %s: %w", sessionID, err)
		}
		sessionID = tip
		seen, start = a.opening(ctx, sessionID, input, opts)
	}
	res := Result{SessionID: sessionID}
	lo := a.cfg.Lease
	lo.OnWait = opts.OnWait
	if start != nil {
		lo.Start = store.StartOf(seen, start)
	}
	err := turn.Run(ctx, a.st, sessionID, lo, func(tctx context.Context, t *turn.Turn) error {
		r := &run{a: a, t: t, opts: opts, res: &res}
		if t.Started() {
			r.seen, r.start = seen, start
		}
		r.mi = a.firstModel(tctx)
		r.m = a.models[r.mi]
		return r.do(tctx, input, first)
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		res.Interrupted = true
	}
	return res, err
}

// opening reads the session's active history before the lease and makes the messages the turn
// would store first on it: the caller's prelude, a result for each call left unanswered, the
// user's message (what do adds when the history is loaded under the lease). They are stored
// with the lease when the history is still this one when the lease is taken (store.BeginTurn),
// which saves the turn a write; otherwise do makes them again from the history it loads. Nil
// when the turn does not open that way (tool results) or the read failed (do reports it).
func (a *Agent) opening(ctx context.Context, sessionID, input string, opts RunOptions) (seen, start []store.Message) {
	if len(opts.ToolResults) > 0 {
		return nil, nil
	}
	h, err := a.st.Conversation(ctx, sessionID, store.ViewActive)
	if err != nil {
		return nil, nil
	}
	start = a.openers(h, input, opts)
	for i := range start {
		start[i].SessionID = sessionID
	}
	return h, start
}

// openers are the messages a turn on history opens with when it answers no tool results: the
// caller's prelude, a result for each call left unanswered, the user's message.
func (a *Agent) openers(history []store.Message, input string, opts RunOptions) []store.Message {
	var out []store.Message
	for _, m := range opts.Prelude {
		m.ID = 0
		out = append(out, m)
	}
	for _, c := range pending(append(slices.Clip(history), out...)) {
		out = append(out, store.Message{Role: store.RoleTool, Content: UnansweredResult, ToolCallID: c.ID, ToolName: c.Function.Name, Timestamp: a.now()})
	}
	return append(out, userMessage(input, opts, a.now()))
}

// userMessage is the stored form of a turn's input. The wire text is composed once and stored
// with the message, so every later request of the session replays exactly these bytes.
func userMessage(input string, opts RunOptions, now time.Time) store.Message {
	return store.Message{Role: store.RoleUser, Content: input, Timestamp: now,
		APIContent: wire.Sidecar(input, wire.Compose(input, opts.Context))}
}

// do runs the turn on the loaded session. first is the user message a new session was created
// with (already stored, the last row loaded); nil adds and stores one now.
func (r *run) do(ctx context.Context, input string, first *store.Message) error {
	return r.loaded(ctx, func() error {
		if err := r.open(input, first); err != nil {
			return err
		}
		if r.opts.OnStart != nil {
			r.opts.OnStart(r.sess.ID)
		}
		if err := r.t.Flush(ctx); err != nil {
			return err
		}
		if err := r.loop(ctx); err != nil {
			return err
		}
		r.autoTitle(ctx)
		return nil
	})
}

// open adds the turn's opening messages to the history: the ones stored with the lease, or the
// prelude, the answers to open calls and the user's message (first, when a new session was
// created with it), queued for the next flush.
func (r *run) open(input string, first *store.Message) error {
	if r.start != nil {
		// Stored with the lease, made for the history loaded (r.seen): as if added now.
		for _, m := range r.start {
			m.SessionID = r.sess.ID
			r.history = append(r.history, m)
			r.res.Messages = append(r.res.Messages, m)
		}
		return nil
	}
	addPrelude := func() {
		for _, m := range r.opts.Prelude {
			m.ID = 0
			r.add(m)
		}
	}
	switch {
	case len(r.opts.ToolResults) > 0:
		// Checked before anything is queued: a refused answer stores nothing.
		if err := checkResults(append(slices.Clip(r.history), r.opts.Prelude...), r.opts.ToolResults); err != nil {
			return err
		}
		addPrelude()
		r.answer(r.opts.ToolResults)
	case first != nil && r.base > 0:
		addPrelude()
		// Loaded with the session, but this turn's: it is new to the provider's cache and
		// part of what the turn did.
		r.base--
		r.res.Messages = append(r.res.Messages, r.history[r.base])
	default:
		for _, m := range r.a.openers(r.history, input, r.opts) {
			r.add(m)
		}
	}
	return nil
}

// loaded loads the session, runs fn and then saves the compaction state, whatever fn returned.
func (r *run) loaded(ctx context.Context, fn func() error) (err error) {
	if err := r.load(ctx); err != nil {
		return err
	}
	defer func() {
		if perr := r.saveState(ctx); perr != nil && err == nil {
			err = perr
		}
	}()
	return fn()
}

// loop calls the model until it answers without tool calls, at most MaxIterations times.
func (r *run) loop(ctx context.Context) error {
	attempts, overflow, force := 0, false, r.opts.ForceCompact
	for calls := 0; calls < r.a.cfg.MaxIterations; {
		req, est, err := r.request(ctx)
		if err != nil {
			return err
		}
		compact, err := r.preflight(ctx, est, attempts, overflow, force)
		if err != nil {
			return err
		}
		if compact {
			attempts++
			if err := r.compact(ctx, force); err != nil {
				return err
			}
			overflow, force = false, false
			if req, est, err = r.request(ctx); err != nil {
				return err
			}
		}
		calls++
		resp, err := r.call(ctx, req, est)
		if err != nil {
			if provider.ClassOf(err) == provider.ClassContextLength && ctx.Err() == nil && r.m.engine != nil {
				// The provider proved the prompt too long: the gate compacts (or fails closed
				// once the turn's attempts are spent) before the call is tried again, sized for
				// a window no bigger than what was refused.
				overflow = true
				r.refused = est
				calls--
				continue
			}
			if r.fallBack(ctx, err) {
				// The next model's request is built again from the history at the top of
				// the loop, through preflight for its own window.
				calls--
				overflow, r.refused = false, 0
				continue
			}
			return r.callFailed(ctx, err)
		}
		asst := store.Message{
			Role: store.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls,
			Reasoning: resp.Reasoning, ReasoningDetails: resp.ReasoningDetails,
			FinishReason: resp.FinishReason, Timestamp: r.a.now(),
		}
		if asst.Content == "" && len(asst.ToolCalls) == 0 && resp.Reasoning != "" {
			// A reasoning-only stop replays its text on the wire, so the next request carries it.
			asst.APIContent = resp.Reasoning
		}
		r.add(asst)
		if len(resp.ToolCalls) == 0 {
			// The turn's last message: it is stored by the turn's last flush (turn.End), in one
			// transaction with this call's usage, the compaction state and the lease's release.
			r.res.Reply = resp.Content
			if r.res.Reply == "" {
				r.res.Reply = asst.APIContent
			}
			r.res.FinishReason = resp.FinishReason
			return nil
		}
		own, client := r.split(resp.ToolCalls)
		if len(own) > 0 {
			// Stored before the tools run: a slow or crashing tool does not lose the calls.
			if err := r.t.Flush(ctx); err != nil {
				return err
			}
			if err := r.runTools(ctx, own); err != nil {
				return err
			}
		}
		if len(client) > 0 {
			// The caller runs these: the turn ends here and the next one brings their results.
			r.res.Reply, r.res.FinishReason, r.res.PendingCalls = resp.Content, "tool_calls", client
			return nil
		}
	}
	return fmt.Errorf("%w: no final answer after %d model calls (each answered with tool calls); the tool results are stored, send another message to continue", ErrIterationLimit, r.a.cfg.MaxIterations)
}

// add queues m for the next flush and appends it to the working history.
func (r *run) add(m store.Message) {
	m.SessionID = r.sess.ID
	r.t.Add(m)
	r.history = append(r.history, m)
	r.res.Messages = append(r.res.Messages, m)
}

// load reads the session as it is now (another turn may have committed while we waited).
func (r *run) load(ctx context.Context) error {
	sid := r.t.SessionID()
	s, err := r.a.st.GetSession(ctx, sid)
	if err != nil {
		return fmt.Errorf("load session %s: %w", sid, err)
	}
	r.sess = s
	if s.Ended() && s.EndReason == store.EndCompression {
		return fmt.Errorf("session %s was continued by compression: %w", sid, store.ErrSessionClosed)
	}
	if r.start != nil {
		// The store proved, when it took the lease, that the history was still r.seen (its newest
		// active message and count; ids only grow), so it is not read again.
		r.history = r.seen
	} else if r.history, err = r.a.st.Conversation(ctx, sid, store.ViewActive); err != nil {
		return fmt.Errorf("load history of %s: %w", sid, err)
	}
	r.base = len(r.history)
	if r.state, err = compress.StateFromModelConfig(s.ModelConfig); err != nil {
		r.notice(fmt.Sprintf("compaction state of %s is unreadable and starts over: %v", sid, err))
		r.state = compress.State{}
	}
	if r.tools, err = r.offered(); err != nil {
		return err
	}
	if r.prompt, err = prompt.Load(ctx, r.a.st, r.promptEnv()); err != nil {
		return err
	}
	r.prev, err = r.a.previousCall(ctx, r)
	return err
}

// notice tells the user s, once per turn: a retried step does not repeat itself.
func (r *run) notice(s string) {
	if r.opts.OnNotice == nil || s == "" || r.said[s] {
		return
	}
	if r.said == nil {
		r.said = map[string]bool{}
	}
	r.said[s] = true
	r.opts.OnNotice(s)
}

// request builds the next model request from the working history, and estimates its size.
func (r *run) request(ctx context.Context) (provider.Request, int, error) {
	msgs := r.history
	if r.m.engine != nil {
		sel, err := r.m.engine.Select(ctx, compress.Request{SessionID: r.sess.ID, Messages: r.history, Model: r.m.compressModel()})
		if err != nil {
			return provider.Request{}, 0, fmt.Errorf("select messages of %s: %w", r.sess.ID, err)
		}
		msgs = sel
	} else if compress.Validate(msgs) != "" {
		// A history a provider would refuse (a call left without its result by a crash) is
		// repaired on the way out, deterministically, so the bytes stay stable.
		msgs = compress.Sanitize(msgs)
	}
	// The current user message already carries its composed wire text (sidecar), so nothing is
	// injected here: every request of the turn replays the same bytes.
	b, err := wire.Build(msgs, wire.TurnContext{})
	if err != nil {
		return provider.Request{}, 0, fmt.Errorf("build request of %s: %w", r.sess.ID, err)
	}
	req := provider.Request{
		Model: r.m.id, System: r.prompt.Text(), Messages: b.Messages, Tools: r.tools,
		MaxTokens: r.m.maxTokens, Temperature: -1,
	}
	if r.opts.MaxTokens > 0 {
		req.MaxTokens = r.opts.MaxTokens
	}
	return req, tokens.EstimateRequest(req), nil
}
