package compress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// DefaultEngineName names the built-in compressor.
const DefaultEngineName = "default"

// Compressor is the default Engine: prune → split → summarise → assemble → sanitise.
type Compressor struct {
	Config     Config
	Summarizer Summarizer // nil: every compaction uses the deterministic fallback
	Estimator  Estimator  // nil: CharEstimator
	Now        func() time.Time
}

// New returns the default compressor.
func New(cfg Config, s Summarizer) *Compressor {
	return &Compressor{Config: cfg, Summarizer: s}
}

var _ Engine = (*Compressor)(nil)

// Name implements Engine.
func (c *Compressor) Name() string { return DefaultEngineName }

func (c *Compressor) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

func (c *Compressor) estimator() Estimator {
	if c.Estimator == nil {
		return CharEstimator{}
	}
	return c.Estimator
}

// Gate returns the preflight gate sharing this compressor's configuration and clock.
func (c *Compressor) Gate() Gate { return Gate{Config: c.Config, Now: c.Now} }

// Select implements Engine: the stored history as is, repaired only where a provider would
// reject it (the repair is deterministic, so the bytes stay stable between requests).
func (c *Compressor) Select(ctx context.Context, req Request) ([]store.Message, error) {
	if Validate(req.Messages) == "" {
		return append([]store.Message(nil), req.Messages...), nil
	}
	return Sanitize(req.Messages), nil
}

var errEmptySummary = errors.New("summary model returned an empty summary")

// Compress implements Engine, in phases: resolve the budgets, split the history
// (splitHistory), ask for a summary (summarizeMiddle), climb the ladder until a rung reaches the
// target (ladder), then update the bookkeeping.
func (c *Compressor) Compress(ctx context.Context, req Request) (Plan, error) {
	st := req.State
	if st == nil {
		st = &State{}
	}
	if req.Force {
		st.CooldownUntil, st.CooldownClass = time.Time{}, ""
	}
	res, err := c.resolve(req)
	if err != nil {
		return Plan{}, err
	}
	b := NewBudgets(c.Config, res, req.FixedTokens)
	sp, err := c.splitHistory(req, st, b)
	if err != nil {
		st.IneffectiveCount++
		return Plan{}, err
	}
	sum, err := c.summarizeMiddle(ctx, req, st, sp, b)
	if err != nil {
		return Plan{}, err
	}
	k, err := c.ladder(req, sp, sum, b)
	if err != nil {
		st.IneffectiveCount++
		return Plan{}, err
	}
	plan := Plan{
		SessionID: req.SessionID, Messages: k.msgs, Origins: k.origins,
		Summary: k.body, Ledger: k.ledger, SummaryModel: sum.model, Fallback: sum.fallback,
		SummaryItemsTrimmed: k.trimmed, FailureClass: sum.class, Compacted: k.end - sp.start,
		TokensBefore: sp.before, TokensAfter: k.tokens, TargetTokens: b.Target, FixedTokens: b.Fixed,
		Rung: k.rung, NeedsSystemNote: sp.sys == 0, Notices: sum.notices,
	}
	if k.rung == RungPointer {
		plan.Notices = append(plan.Notices, fmt.Sprintf("The context window is too small for a summary: %d older messages were archived with a pointer only (session_search finds them).", plan.Compacted))
	}
	for _, m := range req.Messages {
		plan.Watermark = max(plan.Watermark, m.ID)
	}
	plan.TailCount = verbatimTail(plan.Messages, plan.Origins, req.Messages)

	st.CompressionCount++
	st.VerifyCompaction, st.AwaitingRealUsage = true, true
	st.AnchorPrompt, st.AnchorEstimate = 0, 0
	st.OverflowBypassUsed = false
	if plan.Fallback {
		st.FallbackStreak++
	} else {
		st.FallbackStreak, st.TimeoutStrikes = 0, 0
		st.CooldownUntil, st.CooldownClass, st.LastFailure = time.Time{}, "", ""
	}
	plan.State = *st
	return plan, nil
}

func (c *Compressor) resolve(req Request) (Resolution, error) {
	r := Resolution{}
	if req.Threshold != nil {
		r = *req.Threshold
	} else {
		var err error
		if r, err = Resolve(c.Config, req.Model); err != nil {
			return Resolution{}, fmt.Errorf("compress session %s: %w", req.SessionID, err)
		}
	}
	if req.RefusedTokens > 0 {
		// The provider proved its window smaller than configured: size everything for that.
		m := req.Model
		m.ContextLength, m.MaxTokens = req.RefusedTokens, 0
		if small, err := Resolve(c.Config, m); err == nil && small.Tokens < r.Tokens {
			r = small
		}
	}
	return r, nil
}

// summarizeMiddle asks the summary model for the middle's summary, or decides on the
// deterministic fallback: while a summary cooldown runs (unless forced), or when the model
// fails in a way that falls back. A failure that must leave the history untouched returns
// *AbortError.
func (c *Compressor) summarizeMiddle(ctx context.Context, req Request, st *State, sp *split, b Budgets) (summaryResult, error) {
	var out summaryResult
	if !req.Force && !st.CooldownUntil.IsZero() && c.now().Before(st.CooldownUntil) {
		// Only a provider-proven overflow gets here during a cooldown: the summary model is
		// not asked again, the compaction is mechanical.
		out.fallback, out.class = true, st.CooldownClass
		return out, nil
	}
	est := c.estimator()
	md := sp.middleTo(sp.end, est)
	focus, auto := req.Focus, false
	if focus == "" {
		focus, auto = autoFocus(sp.orig), true
	}
	budget := summaryBudgetFor(md.content, b.Summary)
	in := promptInput{
		Previous:      sp.previous,
		Focus:         focus,
		AutoFocus:     auto,
		Budget:        budget,
		MemoryContext: req.MemoryContext,
		Now:           c.now(),
	}
	in.Turns = serializeTurns(md.pruned, c.summaryInputCap(req.Model, budget, len(buildPrompt(in))))
	raw, model, notices, err := c.summarize(ctx, buildPrompt(in), req.Model.Name, st)
	out.notices = notices
	if ctxErr := ctx.Err(); ctxErr != nil {
		return out, fmt.Errorf("compress session %s: %w", req.SessionID, ctxErr)
	}
	if err == nil {
		out.model, out.body = model, strings.TrimSpace(postProcess(raw, md.orig))
		return out, nil
	}
	class := Classify(err)
	if errors.Is(err, errEmptySummary) {
		class = FailEmpty
	}
	if class == FailTimeout {
		st.TimeoutStrikes++
	}
	cool := max(class.cooldown(st.TimeoutStrikes), c.Config.ContextTimeout)
	st.CooldownUntil, st.CooldownClass, st.LastFailure = c.now().Add(cool), class, err.Error()
	if class.Aborts() || c.Config.AbortOnSummaryFailure {
		return out, &AbortError{Class: class, Cooldown: cool, Err: err}
	}
	out.fallback, out.class = true, class
	out.notices = append(out.notices, fmt.Sprintf("The summary model failed (%s: %v); a basic summary was built mechanically and automatic compaction pauses for %s.", class, err, cool))
	return out, nil
}

// summaryInputCap is how many characters of serialized history the summary call may carry:
// SummaryInputCap, or less when the model asked first (the summary model, else the main one) has
// a window too small for that next to the rest of the prompt (frame chars) and the answer
// (budget tokens). A small local summarizer then gets the history's head and tail instead of
// failing on every compaction. The window comes from the config, else the known-model table;
// an unknown window leaves the cap alone.
func (c *Compressor) summaryInputCap(main Model, budget, frame int) int {
	window := main.ContextLength
	if sm := c.Config.SummaryModel; sm != "" && sm != main.Name {
		window = c.Config.SummaryContextLength
		if window <= 0 {
			window, _ = provider.LookupContextWindow(sm)
		}
	}
	if window <= 0 {
		return SummaryInputCap
	}
	// Four characters a token is the estimate used everywhere here; a fifth is kept in reserve
	// for text that tokenizes worse (code, CJK).
	fit := (window-budget)*4*4/5 - frame
	return max(min(fit, SummaryInputCap), minSummaryInput)
}

// SummaryModelPause is how long compactions stay on the main model after the summary model
// failed and the main model wrote the summary instead: no retry of the failing model, no
// repeated notice, until it has passed. A failure that will not heal by waiting (summaryBroken)
// keeps compactions on the main model until the summary model's configuration changes.
const SummaryModelPause = 10 * time.Minute

// summaryBroken reports whether the summary model's failure err will not heal by waiting: the
// provider refused its key (auth) or does not serve the model (model not found).
func summaryBroken(err error) bool {
	switch provider.ClassOf(err) {
	case provider.ClassAuth, provider.ClassModelNotFound:
		return true
	}
	return false
}

// summarize calls the summary model, and the main model once when the summary model fails.
// After such a fallback the summary model is skipped for SummaryModelPause, or for as long as
// its configuration stays the same when it failed for good (st records either).
func (c *Compressor) summarize(ctx context.Context, prompt, mainModel string, st *State) (text, model string, notices []string, err error) {
	if c.Summarizer == nil {
		return "", "", nil, ErrNoSummarizer
	}
	models := []string{mainModel}
	sm, smConfig := c.Config.SummaryModel, c.Config.summaryModelConfig()
	if st.SummaryModelBroken != "" && st.SummaryModelBroken != smConfig {
		st.SummaryModelBroken = "" // the configuration changed: the summary model gets a new try
	}
	if sm != "" && sm != mainModel && st.SummaryModelBroken == "" {
		if st.SummaryModelPausedUntil.IsZero() || !c.now().Before(st.SummaryModelPausedUntil) {
			models = []string{sm, mainModel}
		}
	}
	var smErr error
	for i, m := range models {
		out, callErr := c.Summarizer.Summarize(ctx, m, prompt)
		if ctx.Err() != nil {
			return "", "", notices, ctx.Err()
		}
		if callErr == nil && strings.TrimSpace(stripThink(out)) == "" {
			callErr = errEmptySummary
		}
		if callErr == nil {
			switch {
			case m == sm:
				st.SummaryModelPausedUntil = time.Time{}
			case smErr != nil && summaryBroken(smErr):
				notices = append(notices, fmt.Sprintf("Summary model %s failed (%s: %v); the main model %s wrote the summary and writes them until auxiliary.compression changes.", sm, provider.ClassOf(smErr), smErr, m))
			case smErr != nil:
				st.SummaryModelPausedUntil = c.now().Add(SummaryModelPause)
				notices = append(notices, fmt.Sprintf("Summary model %s failed (%s: %v); the main model %s wrote the summary and writes them for the next %s.", sm, Classify(smErr), smErr, m, SummaryModelPause))
			}
			return out, m, notices, nil
		}
		err = callErr
		if i+1 < len(models) {
			smErr = callErr
			if summaryBroken(smErr) {
				st.SummaryModelBroken, st.SummaryModelPausedUntil = smConfig, time.Time{}
			}
		}
	}
	if smErr != nil {
		notices = append(notices, fmt.Sprintf("Summary model %s failed (%s: %v), and so did the main model %s.", sm, Classify(smErr), smErr, mainModel))
	}
	return "", "", notices, err
}

// assemble builds head + summary + tail and sanitises the result.
func (c *Compressor) assemble(work, orig []store.Message, start, end int, summary, sessionID string) ([]store.Message, []int64) {
	n := len(work)
	type item struct {
		m      store.Message
		origin int64
	}
	items := make([]item, 0, start+1+n-end)
	for i := 0; i < start; i++ {
		m := work[i]
		if i == 0 && m.Role == store.RoleSystem && !strings.Contains(m.Content, SystemNote) {
			m.Content = strings.TrimRight(m.Content, "\n") + "\n\n" + SystemNote
			m.APIContent = ""
		}
		items = append(items, item{m, orig[i].ID})
	}

	lastHead := store.RoleSystem // the system prompt always precedes the history on the wire
	if start > 0 {
		lastHead = work[start-1].Role
	}
	firstTail := store.RoleUser
	if end < n {
		firstTail = work[end].Role
	}
	hasUser := false
	for i := 0; i < n && !hasUser; i++ {
		if i >= start && i < end {
			continue
		}
		_, hasUser = userText(work[i])
	}
	forced := lastHead == store.RoleSystem || !hasUser
	role := store.RoleAssistant
	if forced || lastHead == store.RoleAssistant || lastHead == store.RoleTool {
		role = store.RoleUser
	}
	merge := false
	if end < n && role == firstTail {
		flipped := store.RoleUser
		if role == store.RoleUser {
			flipped = store.RoleAssistant
		}
		if !forced && flipped != lastHead {
			role = flipped
		} else {
			merge = true
		}
	}
	now := c.now()
	tailFrom := end
	if merge {
		m := work[end]
		if isRealUser(m) {
			// Summary first, the user's words after the end marker: they stay the message to
			// answer. Their wire text (recall, per-turn context) follows the summary the same way.
			m.Content = summary + "\n\n" + m.Content
			if m.APIContent != "" {
				m.APIContent = summary + "\n\n" + m.APIContent
			}
		} else {
			m.Content = PriorContextOpen + "\n" + m.Content + "\n\n" + PriorContextClose + "\n\n" + summary
			m.APIContent = ""
		}
		m.Summary = true
		items = append(items, item{m, orig[end].ID})
		tailFrom++
	} else {
		items = append(items, item{store.Message{Role: role, Content: summary, Summary: true, Timestamp: now}, 0})
	}
	lastAssistant := -1
	for i := n - 1; i >= tailFrom; i-- {
		if work[i].Role == store.RoleAssistant {
			lastAssistant = i
			break
		}
	}
	for i := tailFrom; i < n; i++ {
		m := work[i]
		if limit := c.Config.TailAssistantMaxChars; limit > 0 && c.Config.tailMode() == TailLean &&
			m.Role == store.RoleAssistant && i != lastAssistant && len(m.Content) > limit && !isSummary(m) {
			m.Content = headRunes(m.Content, limit) + "\n...[trimmed"
			if orig[i].ID > 0 && sessionID != "" {
				m.Content += "; full text: " + pointer(sessionID, orig[i].ID)
			}
			m.Content += "]"
			m.APIContent = ""
		}
		items = append(items, item{m, orig[i].ID})
	}

	// Sanitise on the items so origins follow their messages.
	msgs := make([]store.Message, len(items))
	for i, it := range items {
		it.m.ID = int64(i + 1) // temporary identity for tracking through Sanitize
		msgs[i] = it.m
	}
	clean := Sanitize(msgs)
	out := make([]store.Message, len(clean))
	origins := make([]int64, len(clean))
	for i, m := range clean {
		if m.ID > 0 {
			origins[i] = items[m.ID-1].origin
		}
		m.ID, m.SessionID, m.Active, m.Compacted = 0, sessionID, true, false
		out[i] = m
	}
	return out, origins
}

// verbatimTail counts trailing output messages that are unchanged copies of the input's last rows.
func verbatimTail(out []store.Message, origins []int64, orig []store.Message) int {
	k := 0
	for k < len(out) && k < len(orig) {
		o, in := out[len(out)-1-k], orig[len(orig)-1-k]
		if origins[len(out)-1-k] != in.ID || in.ID == 0 || !sameMessage(o, in) {
			break
		}
		k++
	}
	return k
}

func sameMessage(a, b store.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.APIContent != b.APIContent || a.ToolCallID != b.ToolCallID ||
		a.ToolName != b.ToolName || a.Reasoning != b.Reasoning || string(a.ReasoningDetails) != string(b.ReasoningDetails) ||
		a.FinishReason != b.FinishReason || a.Summary != b.Summary || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}
