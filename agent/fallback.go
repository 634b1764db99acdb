package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// Fallback is a model a turn moves to when the model it is on fails with a class that will not
// clear by retrying (provider.Class.Fallback: overloaded or server errors after the client's
// retries, rate limits it gave up on, quota, model not found, an unreachable endpoint). A bad
// API key (auth) never falls back: it is a mistake the user must see, not an outage.
//
// The fallback's request is built again from the canonical history through preflight for the
// fallback's own window, adapter and pricing: a fallback with a smaller window compacts the
// history first. The old request is never resent to another provider.
type Fallback struct {
	// Name identifies the fallback in notices, request records and forensics.
	Name   string
	Client provider.Client
	Model  string
	// Provider names the endpoint for the threshold rules; "" means Client.Name().
	Provider string
	// ContextLength is the fallback's window in tokens (DefaultContextLength when zero).
	ContextLength int
	// MaxTokens is its output reservation (Config.MaxTokens when zero).
	MaxTokens int
}

// model is one model a turn can call: the main one or a fallback.
type model struct {
	name      string // the fallback's name; "" for the main model
	client    provider.Client
	id        string // the model name sent on the wire
	provider  string
	window    int
	maxTokens int
	threshold compress.Resolution
	engine    compress.Engine
}

func (m *model) compressModel() compress.Model {
	return compress.Model{Name: m.id, Provider: m.provider, ContextLength: m.window, MaxTokens: m.maxTokens}
}

// label names m for the user: "the main model gpt-4o" or "fallback mini (gpt-4o-mini)".
func (m *model) label() string {
	if m.name == "" {
		return "the main model " + m.id
	}
	return fmt.Sprintf("fallback %s (%s)", m.name, m.id)
}

// fallbackModel checks fallback i and makes its model, with the summarizer its default
// compressor uses: the fallback itself, and a configured summary model where it lives (its own
// client, else the main one).
func fallbackModel(i int, f Fallback, d Deps, cfg Config) (*model, compress.Summarizer, error) {
	switch {
	case strings.TrimSpace(f.Name) == "":
		return nil, nil, fmt.Errorf("agent: fallback %d has no name", i)
	case f.Client == nil:
		return nil, nil, fmt.Errorf("agent: fallback %s has no client", f.Name)
	case f.Model == "":
		return nil, nil, fmt.Errorf("agent: fallback %s has no model", f.Name)
	}
	for _, g := range d.Fallbacks[:i] {
		if g.Name == f.Name {
			return nil, nil, fmt.Errorf("agent: two fallbacks are named %s", f.Name)
		}
	}
	m := &model{
		name: f.Name, client: f.Client, id: f.Model, provider: cmp.Or(f.Provider, f.Client.Name()),
		window: cmp.Or(f.ContextLength, DefaultContextLength), maxTokens: cmp.Or(f.MaxTokens, cfg.MaxTokens),
	}
	sum := compress.ClientSummarizer{Client: f.Client}
	if sm := cfg.Compression.SummaryModel; sm != "" {
		sum.Aux, sum.AuxModel = cmp.Or(d.SummaryClient, d.Client), sm
	}
	return m, sum, nil
}

// firstModel is the model a turn starts on: the first, in order, that is not cooling down after
// a failure (the main model unless it failed less than FallbackCooldown ago); the main model
// when every one is. Cooldowns kept in the store (another process's failures) are read first.
func (a *Agent) firstModel(ctx context.Context) int {
	a.cool.load(ctx)
	now := a.now()
	a.cool.mu.Lock()
	defer a.cool.mu.Unlock()
	for i := range a.models {
		if !now.Before(a.cool.until[i]) {
			return i
		}
	}
	return 0
}

// Cooldowns are, per model, the time until which new turns pass it over. An agent and its
// sub-agents (delegations) share one; agents over the same models (spool serve's runner and
// queue) share one through Deps.Cooldowns, so a failure seen by one is known to the other.
// When the agent's store keeps cooldowns (store.Cooldowns: both backends), they are written
// there too and read at the start of every turn, so a `spool run` honours a cooldown another
// process started; the store is then the truth (a model another process saw answer is clear).
type Cooldowns struct {
	mu    sync.Mutex
	until []time.Time
	// persist and keys (one per model) are set by the first agent that uses the cooldowns.
	persist store.Cooldowns
	keys    []string
}

// NewCooldowns returns cooldowns to share between agents configured with the same models.
func NewCooldowns() *Cooldowns { return &Cooldowns{} }

// cooldownKey names model m in the store: which configured model it is and what it calls.
func cooldownKey(m *model) string {
	return cmp.Or(m.name, "main") + "/" + m.provider + "/" + m.id
}

// persistBudget bounds a cooldown read or write: a slow store delays a turn's start by at most
// this, and then the process's own view is used.
const persistBudget = 5 * time.Second

// load replaces the in-process view with the stored cooldowns (nothing when there is no store
// or it cannot be read: the process's own view stands).
func (c *Cooldowns) load(ctx context.Context) {
	c.mu.Lock()
	ps := c.persist
	c.mu.Unlock()
	if ps == nil {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, persistBudget)
	defer cancel()
	stored, err := ps.ModelCooldowns(lctx)
	if err != nil {
		return
	}
	at := make(map[string]time.Time, len(stored))
	for _, s := range stored {
		at[s.Model] = s.Until
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range c.keys {
		c.until[i] = at[k]
	}
}

// save writes model i's cooldown to the store, if there is one.
func (c *Cooldowns) save(ctx context.Context, i int, until time.Time) error {
	if c.persist == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), persistBudget)
	defer cancel()
	return c.persist.SetModelCooldown(wctx, c.keys[i], until)
}

// failed passes model i over for new turns until the cooldown ends.
func (a *Agent) failed(ctx context.Context, i int) error {
	until := a.now().Add(a.cfg.FallbackCooldown)
	a.cool.mu.Lock()
	a.cool.until[i] = until
	a.cool.mu.Unlock()
	return a.cool.save(ctx, i, until)
}

// answered clears model i's cooldown: it works again. The store is written only when there was
// a cooldown to clear (a model that keeps answering costs no write).
func (a *Agent) answered(ctx context.Context, i int) {
	a.cool.mu.Lock()
	was := a.cool.until[i]
	a.cool.until[i] = time.Time{}
	a.cool.mu.Unlock()
	if !was.IsZero() {
		_ = a.cool.save(ctx, i, time.Time{}) // best effort: a stale row only delays the main model by its cooldown
	}
}

// fallBack moves the turn to the next model after the one it is on failed with err, and
// reports whether there is one. It does not when err is not a fallback class, when the turn was
// interrupted, or when streamed text of the failed call already reached the user (an answer
// from another model would follow half an answer). The next model is the first, in order, that
// this turn has not tried, preferring those not cooling down.
func (r *run) fallBack(ctx context.Context, err error) bool {
	if ctx.Err() != nil || r.delivered || !provider.ClassOf(err).Fallback() || len(r.a.models) < 2 {
		return false
	}
	if perr := r.a.failed(ctx, r.mi); perr != nil {
		r.notice(fmt.Sprintf("The cooldown of %s is not stored (%v); other processes will try it again.", r.m.label(), perr))
	}
	if r.tried == nil {
		r.tried = map[int]bool{}
	}
	r.tried[r.mi] = true
	now := r.a.now()
	next := -1
	r.a.cool.mu.Lock()
	for pass := 0; pass < 2 && next < 0; pass++ {
		for i := range r.a.models {
			if !r.tried[i] && (pass == 1 || !now.Before(r.a.cool.until[i])) {
				next = i
				break
			}
		}
	}
	r.a.cool.mu.Unlock()
	if next < 0 {
		return false
	}
	from := r.m
	r.mi, r.m = next, r.a.models[next]
	r.why = fmt.Sprintf("%s failed: %s", from.label(), provider.ClassOf(err))
	r.notice(fmt.Sprintf("%s failed (%s); asking %s.", upperFirst(from.label()), shortErr(err), r.m.label()))
	return true
}

// switchDetail names a model switch for the cache-break record: to a fallback, between
// fallbacks, or back to the main model after the cooldown.
func (r *run) switchDetail(prevModel, prevFallback string) string {
	d := fmt.Sprintf("model %s -> %s", prevModel, r.m.id)
	switch {
	case r.m.name != "" && r.why != "":
		return d + fmt.Sprintf(" (fallback %s; %s)", r.m.name, r.why)
	case r.m.name != "":
		return d + fmt.Sprintf(" (fallback %s; the main model is cooling down after a failure)", r.m.name)
	case prevFallback != "":
		return d + fmt.Sprintf(" (back to the main model from fallback %s after the cooldown)", prevFallback)
	}
	return d
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// shortErr is err's text on one line, cut short for a notice.
func shortErr(err error) string {
	var pe *provider.Error
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Error()
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}
