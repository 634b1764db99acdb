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

// Compress implements Engine.
func (c *Compressor) Compress(ctx context.Context, req Request) (Plan, error) {
	st := req.State
	if st == nil {
		st = &State{}
	}
	if req.Force {
		st.CooldownUntil, st.CooldownClass = time.Time{}, ""
	}
	var res Resolution
	if req.Threshold != nil {
		res = *req.Threshold
	} else {
		r, err := Resolve(c.Config, req.Model)
		if err != nil {
			return Plan{}, fmt.Errorf("compress session %s: %w", req.SessionID, err)
		}
		res = r
	}
	orig := req.Messages
	n := len(orig)
	sys := 0
	if n > 0 && orig[0].Role == store.RoleSystem {
		sys = 1
	}
	hasPrev := st.CompressionCount > 0
	for i := sys; i < n && !hasPrev; i++ {
		hasPrev = isSummary(orig[i])
	}
	headN := sys
	if !hasPrev {
		headN += max(c.Config.ProtectFirstN, 0)
	}
	if n <= headN+4 {
		st.IneffectiveCount++
		return Plan{}, ErrNothingToCompress
	}

	est := c.estimator()
	work := append([]store.Message(nil), orig...)
	tok := make([]int, n)
	before := 0
	for i, m := range work {
		tok[i] = est.Message(m)
		before += tok[i]
	}
	protectLastN := c.Config.ProtectLastN
	if protectLastN <= 0 {
		protectLastN = DefaultProtectLastN
	}
	// Each message is decoded and scanned at most once, by whichever phase needs it first.
	hist := newHistory(orig)
	pruneHistory(work, hist, tok, res.TailBudget, protectLastN, req.SessionID)
	for i, m := range work {
		tok[i] = est.Message(m)
	}

	start := alignForward(work, headN)
	end := findTailCut(work, tok, start, tailParams{
		Budget: res.TailBudget, Soft: res.TailSoftCeiling,
		ProtectLastN: protectLastN, MinTailUsers: c.Config.minTailUsers(),
	})
	// A summary must never survive in the tail next to the new one.
	for i := n - 1; i >= end; i-- {
		if isSummary(work[i]) {
			end = alignForward(work, i+1)
			break
		}
	}
	if start >= end || end > n {
		st.IneffectiveCount++
		return Plan{}, ErrNothingToCompress
	}

	// Iterative re-compaction: the newest summary in the middle is updated, not restarted.
	turnsStart, previous := start, ""
	var carrier *parsedSummary
	for i := end - 1; i >= start; i-- {
		if isSummary(orig[i]) {
			if p, ok := parseSummary(orig[i].Content); ok {
				previous, carrier = p.Body, &p
				turnsStart = i + 1
			}
			break
		}
	}
	turnsOrig := orig[turnsStart:end]
	turnsPruned := work[turnsStart:end]
	if carrier != nil {
		// Text that shared a message with the old summary is a turn of its own.
		var carried []store.Message
		id := orig[turnsStart-1].ID
		if carrier.Prior != "" {
			carried = append(carried, store.Message{Role: orig[turnsStart-1].Role, Content: carrier.Prior, ID: id})
		}
		if carrier.Trailing != "" {
			carried = append(carried, store.Message{Role: store.RoleUser, Content: carrier.Trailing, ID: id})
		}
		turnsOrig = append(carried, turnsOrig...)
		turnsPruned = append(append([]store.Message(nil), carried...), turnsPruned...)
	}

	scans := hist.scanRange(start, end)
	var ledger Ledger
	ledger.merge(ledgerEntries(orig[start:end], scans))
	ledger.bound()

	focus, auto := req.Focus, false
	if focus == "" {
		focus, auto = autoFocus(orig), true
	}
	content := 0
	for i := turnsStart; i < end; i++ {
		content += tok[i]
	}
	prevNoLedger := removeSection(previous, LedgerHeading)
	budget := summaryBudget(content, res.MaxSummaryTokens)
	in := promptInput{
		Previous:      prevNoLedger,
		Focus:         focus,
		AutoFocus:     auto,
		Budget:        budget,
		MemoryContext: req.MemoryContext,
		Now:           c.now(),
	}
	in.Turns = serializeTurns(turnsPruned, c.summaryInputCap(req.Model, budget, len(buildPrompt(in))))
	prompt := buildPrompt(in)

	plan := Plan{SessionID: req.SessionID, TokensBefore: before, Compacted: end - start}
	raw, model, notices, err := c.summarize(ctx, prompt, req.Model.Name)
	plan.Notices = append(plan.Notices, notices...)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Plan{}, fmt.Errorf("compress session %s: %w", req.SessionID, ctxErr)
	}
	var body string
	if err != nil {
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
			return Plan{}, &AbortError{Class: class, Cooldown: cool, Err: err}
		}
		plan.Fallback, plan.FailureClass = true, class
		plan.Notices = append(plan.Notices, fmt.Sprintf("The summary model failed (%s: %v); a basic summary was built mechanically and automatic compaction pauses for %s.", class, err, cool))
		turnScans := append(scanMessages(turnsOrig[:len(turnsOrig)-(end-turnsStart)]), scans[turnsStart-start:]...)
		body = fallbackSummary(turnsOrig, turnScans, prevNoLedger)
	} else {
		plan.SummaryModel = model
		body = postProcess(raw, turnsOrig)
	}
	// The budget is only asked for in the prompt; a summary far over it is cut back here, or
	// re-compaction would carry it forward and grow it every time.
	body, plan.SummaryItemsTrimmed = boundSummary(strings.TrimSpace(body), budget, est, req.SessionID)
	body += "\n\n" + ledger.render(req.SessionID, c.askBudget())
	plan.Summary, plan.Ledger = body, ledger

	out, origins := c.assemble(work, orig, start, end, summaryContent(body), req.SessionID)
	plan.Messages, plan.Origins = out, origins
	plan.NeedsSystemNote = sys == 0
	for _, m := range orig {
		plan.Watermark = max(plan.Watermark, m.ID)
	}
	plan.TailCount = verbatimTail(out, origins, orig)
	plan.TokensAfter = EstimateTokens(est, out)

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

func (c *Compressor) askBudget() int {
	if c.Config.tailMode() == TailLegacy {
		return 0
	}
	if c.Config.UserAsksBudget > 0 {
		return c.Config.UserAsksBudget
	}
	return DefaultConfig().UserAsksBudget
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

// summarize calls the summary model, and the main model once when the summary model fails.
func (c *Compressor) summarize(ctx context.Context, prompt, mainModel string) (text, model string, notices []string, err error) {
	if c.Summarizer == nil {
		return "", "", nil, ErrNoSummarizer
	}
	models := []string{mainModel}
	if sm := c.Config.SummaryModel; sm != "" && sm != mainModel {
		models = []string{sm, mainModel}
	}
	for i, m := range models {
		out, callErr := c.Summarizer.Summarize(ctx, m, prompt)
		if ctx.Err() != nil {
			return "", "", notices, ctx.Err()
		}
		if callErr == nil && strings.TrimSpace(stripThink(out)) == "" {
			callErr = errEmptySummary
		}
		if callErr == nil {
			return out, m, notices, nil
		}
		err = callErr
		if i+1 < len(models) {
			notices = append(notices, fmt.Sprintf("Summary model %s failed (%s: %v); retried on the main model %s.", m, Classify(callErr), callErr, models[i+1]))
		}
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
			// Summary first, the user's words after the end marker: they stay the message to answer.
			m.Content = summary + "\n\n" + m.Content
		} else {
			m.Content = PriorContextOpen + "\n" + m.Content + "\n\n" + PriorContextClose + "\n\n" + summary
		}
		m.APIContent, m.Summary = "", true
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
