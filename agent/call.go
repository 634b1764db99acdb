package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/wire"
)

// writeBudget bounds a bookkeeping write that must land even after the turn was interrupted.
const writeBudget = 10 * time.Second

// call sends one request, streaming when the caller asked, and records its accounting. On
// failure the text streamed so far is kept in r.partial for callFailed.
func (r *run) call(ctx context.Context, req provider.Request, est int) (provider.Response, error) {
	var streamed strings.Builder
	var onDelta func(provider.Delta)
	r.delivered = false
	if r.opts.OnDelta != nil {
		onDelta = func(d provider.Delta) {
			r.delivered = r.delivered || d.Content != "" || d.Reasoning != ""
			streamed.WriteString(d.Content)
			r.opts.OnDelta(d)
		}
	}
	t0 := time.Now()
	resp, err := r.m.client.Chat(ctx, req, onDelta)
	latency := max(time.Since(t0), time.Microsecond) // stored in µs; zero would read as unmeasured
	r.res.Calls++
	if err != nil {
		if ctx.Err() != nil && streamed.Len() > 0 {
			r.keepPartial(streamed.String())
		}
		return provider.Response{}, err
	}
	if ctx.Err() != nil {
		// The answer arrived as the turn was interrupted: it was said, so it stays.
		r.res.Interrupted = true
	}
	r.a.answered(ctx, r.mi)
	r.res.Model, r.res.Fallback = req.Model, r.m.name
	r.a.gate().AfterResponse(&r.state, r.m.threshold.Tokens, int(resp.Usage.InputTokens), int(resp.Usage.OutputTokens), est)
	r.stateDirty = true
	r.record(ctx, req, resp, latency)
	return resp, nil
}

// keepPartial stores the text a stream delivered before an interrupt: the user saw it.
func (r *run) keepPartial(text string) {
	r.add(store.Message{Role: store.RoleAssistant, Content: text, FinishReason: "interrupted", Timestamp: r.a.now()})
}

// callFailed explains a failed model call. Everything stored so far stays; the session is
// usable as soon as the provider is.
func (r *run) callFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		r.res.Interrupted = true
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return fmt.Errorf("model call interrupted: %w", cause)
		}
		return fmt.Errorf("model call interrupted: %w", ctx.Err())
	}
	advice := "send again when the provider is back"
	switch provider.ClassOf(err) {
	case provider.ClassAuth:
		advice = "check the API key, then send again"
	case provider.ClassQuota:
		advice = "check the provider account's credit, then send again"
	case provider.ClassBadRequest, provider.ClassContextLength:
		advice = "the provider refused the request"
	}
	return fmt.Errorf("model call failed (your message is saved in session %s; %s): %w", r.sess.ID, advice, err)
}

// memo is what the forensics remember of a session's last model call.
type memo struct {
	fp     wire.Fingerprint
	at     time.Time // as recorded (microsecond precision, UTC)
	cached int64
	// model and fallback are who answered (fallback "" for the main model).
	model, fallback string
	// tools are the definitions it offered, to name what changed in a tools break.
	tools []provider.Tool
	// derived marks a fingerprint rebuilt from the store after a restart (see doc.go).
	derived bool
}

// record stores one call's usage, cost and, when fewer cached tokens were read than by the
// previous call, the cache break that explains it.
func (r *run) record(ctx context.Context, req provider.Request, resp provider.Response, latency time.Duration) {
	now := r.a.now().UTC().Truncate(time.Microsecond)
	fp := wire.FingerprintOf(req, r.prompt.Tiers())
	pu := resp.Usage
	u := store.Usage{
		InputTokens: pu.InputTokens, OutputTokens: pu.OutputTokens, CacheReadTokens: pu.CacheReadTokens,
		CacheWriteTokens: pu.CacheWriteTokens, ReasoningTokens: pu.ReasoningTokens, APICalls: 1,
	}
	model := cmp.Or(resp.Model, req.Model)
	u.CostUSD, _ = provider.EstimateCost(model, pu)
	var brk *store.CacheBreak
	if p := r.prev; p != nil && pu.CacheReadTokens < p.cached {
		b := wire.Explain(p.fp, fp, wire.Hints{
			Compacted: r.compacted, Resumed: p.derived, Elapsed: now.Sub(p.at), TTL: r.a.cfg.CacheTTL,
		})
		brk = breakOf(b, p.cached-pu.CacheReadTokens)
		switch {
		case b.Layer == wire.LayerModel && (p.fallback != "" || r.m.name != ""):
			brk.Reason, brk.Detail = string(wire.ReasonFallback), r.switchDetail(p.model, p.fallback)
		case b.Layer == wire.LayerTools && p.tools != nil:
			brk.Detail = toolsDetail(p.tools, req.Tools)
		}
		r.res.Breaks = append(r.res.Breaks, *brk)
	}
	r.res.Usage = r.res.Usage.Add(u)
	rec := store.RequestRecord{At: now, Model: model, Task: "turn", Usage: u, Break: brk, Latency: latency, Fallback: r.m.name}
	if r.t != nil {
		// Stored by the turn's next flush, in the transaction of the answer this call made and
		// fenced by the lease: a turn that lost its lease records nothing.
		r.t.Record(rec)
	} else {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeBudget)
		defer cancel()
		if err := r.a.st.RecordRequest(wctx, r.sess.ID, rec); err != nil {
			r.notice(fmt.Sprintf("usage of this call was not recorded: %v", err))
		}
	}
	r.prev = &memo{fp: fp, at: now, cached: pu.CacheReadTokens, model: req.Model, fallback: r.m.name, tools: req.Tools}
	r.compacted, r.why = false, ""
	r.a.remember(r.sess.ID, r.prev)
}

// breakOf is the store's form of a wire break.
func breakOf(b wire.Break, lost int64) *store.CacheBreak {
	cb := &store.CacheBreak{Reason: string(b.Reason), LostTokens: lost}
	switch b.Layer {
	case wire.LayerNone:
		cb.Layer = "none"
	case wire.LayerSystem:
		cb.Layer = "system"
		if b.Tier >= 0 {
			cb.Layer = fmt.Sprintf("system.%d", b.Tier)
			cb.Index = b.Tier
		}
	case wire.LayerMessage:
		cb.Layer, cb.Index = "messages", b.Index
	default:
		cb.Layer = string(b.Layer)
	}
	return cb
}

func (a *Agent) remember(sessionID string, m *memo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.memos[sessionID] = m
}

// previousCall finds the session's last model call for the forensics of this turn's first call:
// this process's memory when it is still the newest recorded call, otherwise a fingerprint
// derived from the store (a restart, or another process ran turns meanwhile).
func (a *Agent) previousCall(ctx context.Context, r *run) (*memo, error) {
	// The newest record is nearly always the last turn's call: one row read instead of eight
	// (each on a page of its own). Otherwise the newest turn call among the last eight.
	var last *store.RequestRecord
	for _, limit := range []int{1, 8} {
		recs, err := a.st.Requests(ctx, r.sess.ID, limit)
		if err != nil {
			return nil, fmt.Errorf("load request history of %s: %w", r.sess.ID, err)
		}
		for i := range recs {
			if recs[i].Task == "" || recs[i].Task == "turn" {
				last = &recs[i]
				break
			}
		}
		if last != nil || len(recs) < limit {
			break
		}
	}
	if last == nil {
		return nil, nil
	}
	a.mu.Lock()
	m := a.memos[r.sess.ID]
	a.mu.Unlock()
	if m != nil && m.at.Equal(last.At) && m.cached == last.Usage.CacheReadTokens {
		return m, nil
	}
	// The last request a previous process sent ended right before its final answer: the
	// history before this turn without its trailing assistant message.
	k := -1
	for i := r.base - 1; i >= 0; i-- {
		if r.history[i].Role == store.RoleAssistant {
			k = i
			break
		}
	}
	if k < 0 {
		return nil, nil
	}
	saved := r.history
	r.history = r.history[:k]
	req, _, err := r.request(ctx)
	r.history = saved
	if err != nil {
		return nil, nil // forensics only: an unbuildable old prefix just means no comparison
	}
	// The model it was sent to: the main model's or a fallback's configured name (the recorded
	// model is the provider's answer, which may carry a dated suffix).
	req.Model = a.models[0].id
	for _, m := range a.models[1:] {
		if m.name == last.Fallback {
			req.Model = m.id
		}
	}
	return &memo{fp: wire.FingerprintOf(req, r.prompt.Tiers()), at: last.At, cached: last.Usage.CacheReadTokens,
		model: req.Model, fallback: last.Fallback, derived: true}, nil
}

// toolsDetail names whose tools changed between two tool lists: each MCP server (tools named
// mcp__<server>__<tool>) whose list or schemas changed, and the built-in tools, with counts,
// like "tools of MCP server docs changed (1 added, 0 removed, 1 changed)".
func toolsDetail(prev, cur []provider.Tool) string {
	type delta struct{ added, removed, changed int }
	owner := func(name string) string {
		if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
			if server, _, ok := strings.Cut(rest, "__"); ok {
				return "MCP server " + server
			}
		}
		return "built-in tools"
	}
	old := map[string]provider.Tool{}
	for _, t := range prev {
		old[t.Name] = t
	}
	by := map[string]*delta{}
	var order []string
	get := func(o string) *delta {
		if by[o] == nil {
			by[o] = &delta{}
			order = append(order, o)
		}
		return by[o]
	}
	seen := map[string]bool{}
	for _, t := range cur {
		seen[t.Name] = true
		o, had := old[t.Name]
		switch {
		case !had:
			get(owner(t.Name)).added++
		case o.Description != t.Description || string(o.Parameters) != string(t.Parameters):
			get(owner(t.Name)).changed++
		}
	}
	for _, t := range prev {
		if !seen[t.Name] {
			get(owner(t.Name)).removed++
		}
	}
	if len(order) == 0 {
		return "tools reordered"
	}
	slices.Sort(order)
	parts := make([]string, len(order))
	for i, o := range order {
		d := by[o]
		what := "tools of " + o
		if o == "built-in tools" {
			what = o
		}
		parts[i] = fmt.Sprintf("%s changed (%d added, %d removed, %d changed)", what, d.added, d.removed, d.changed)
	}
	return strings.Join(parts, "; ")
}
