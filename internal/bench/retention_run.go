package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/recall"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/tokens"
)

// Engines of the retention benchmark: the default compressor with provider/fake's summarizer,
// the default compressor with the deterministic fallback only (every summary call fails), and
// two control engines that must lose facts.
const (
	ModeFake     = "fake"
	ModeFallback = "fallback"
	// ControlTailOnly keeps only the verbatim tail: no head, no summary, no ledger.
	ControlTailOnly = "control-tail-only"
	// ControlBlankSummary is the default compressor with the summary (and its ledger) blanked
	// before the commit.
	ControlBlankSummary = "control-blank-summary"
)

// Names of the control engines.
const (
	tailOnlyEngineName     = "bench-tail-only"
	blankSummaryEngineName = "bench-blank-summary"
)

// blankedSummary replaces a control engine's summary text.
const blankedSummary = "[CONTEXT COMPACTION] Earlier turns were compacted; no summary was kept (benchmark control engine)."

// tailOnlyEngine plans like the default compressor, then commits only the verbatim tail.
type tailOnlyEngine struct{ *compress.Compressor }

func (e tailOnlyEngine) Name() string { return tailOnlyEngineName }

func (e tailOnlyEngine) Compress(ctx context.Context, req compress.Request) (compress.Plan, error) {
	p, err := e.Compressor.Compress(ctx, req)
	if err != nil {
		return p, err
	}
	keep := p.TailCount
	if keep == 0 { // the summary was merged into the only tail message: keep it, blanked
		keep = 1
		blank(&p, len(p.Messages)-1)
	}
	cut := len(p.Messages) - keep
	p.Messages, p.Origins = slices.Clone(p.Messages[cut:]), slices.Clone(p.Origins[cut:])
	p.Summary, p.Ledger = "", compress.Ledger{}
	return p, nil
}

// blankSummaryEngine plans like the default compressor and blanks the summary before the commit.
type blankSummaryEngine struct{ *compress.Compressor }

func (e blankSummaryEngine) Name() string { return blankSummaryEngineName }

func (e blankSummaryEngine) Compress(ctx context.Context, req compress.Request) (compress.Plan, error) {
	p, err := e.Compressor.Compress(ctx, req)
	if err != nil {
		return p, err
	}
	for i := range p.Messages {
		if p.Messages[i].Summary {
			blank(&p, i)
		}
	}
	p.Summary, p.Ledger = "", compress.Ledger{}
	return p, nil
}

// blank removes the summary body from plan message i (a standalone summary or one merged into a
// tail message).
func blank(p *compress.Plan, i int) {
	m := &p.Messages[i]
	if p.Summary != "" && strings.Contains(m.Content, p.Summary) {
		m.Content = strings.Replace(m.Content, p.Summary, blankedSummary, 1)
		return
	}
	if m.Summary && p.Origins[i] == 0 {
		m.Content = blankedSummary
	}
}

// scriptModel is the main model of the retention run: it answers every call with the next
// assistant message of the generated turn, and refuses what a real provider refuses: a prompt
// over the window (context_length, counted with provider/fake's tokenizer) and a tool result or
// call without its partner (bad_request). It records each request it was sent.
type scriptModel struct {
	window int

	mu       sync.Mutex
	turn     []store.Message
	results  map[string]string // call id -> scripted tool output of the current turn
	first    *provider.Request // the first request of the current turn
	accepted *provider.Request // the first request of the current turn the model answered
	requests int
	lastSize int // prompt tokens of the last request
	refused  map[string]int
	orphans  int
	// afterCompaction is set by the engine wrapper with the compaction's target; the next
	// request's size is recorded against it.
	afterCompaction bool
	target          int
	activeAfter     []int // the agent's estimate (tokens.EstimateRequest), the units of the target
	targets         []int // the target of the same compaction
	providerAfter   []int // the provider's count
}

func (m *scriptModel) Name() string { return "bench-script" }

// setTurn makes msgs (user message first) the turn the model plays.
func (m *scriptModel) setTurn(msgs []store.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turn, m.first, m.accepted = msgs, nil, nil
	m.results = map[string]string{}
	for _, x := range msgs {
		if x.Role == store.RoleTool {
			m.results[x.ToolCallID] = x.Content
		}
	}
}

func (m *scriptModel) Chat(_ context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	if m.first == nil {
		r := req
		m.first = &r
	}
	n := fake.PromptTokens(req)
	m.lastSize = n
	if m.afterCompaction {
		m.afterCompaction = false
		m.activeAfter = append(m.activeAfter, tokens.EstimateRequest(req))
		m.targets = append(m.targets, m.target)
		m.providerAfter = append(m.providerAfter, n)
	}
	if o := orphanToolPairs(wireAsStore(req.Messages)); o > 0 {
		m.orphans += o
		m.refused["orphan tool pair"]++
		return provider.Response{}, &provider.Error{Class: provider.ClassBadRequest, Provider: m.Name(), StatusCode: 400,
			Message: fmt.Sprintf("%d tool calls or results without their partner", o)}
	}
	if n > m.window {
		m.refused["over the window"]++
		return provider.Response{}, &provider.Error{Class: provider.ClassContextLength, Provider: m.Name(), StatusCode: 400,
			Message: fmt.Sprintf("prompt is %d tokens, the model's window is %d", n, m.window)}
	}
	next, err := m.next(req.Messages)
	if err != nil {
		m.refused["off script"]++
		return provider.Response{}, &provider.Error{Class: provider.ClassBadRequest, Provider: m.Name(), Message: err.Error()}
	}
	if m.accepted == nil {
		r := req
		m.accepted = &r
	}
	finish := "stop"
	if len(next.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	return provider.Response{Model: req.Model, Content: next.Content, ToolCalls: next.ToolCalls, FinishReason: finish,
		Usage: provider.Usage{InputTokens: int64(n), OutputTokens: int64(fake.CountTokens(next.Content))}}, nil
}

// next is the scripted answer to a request: the turn's first assistant message after the user
// message, the one after the assistant message whose calls the trailing tool results answer.
func (m *scriptModel) next(msgs []provider.Message) (store.Message, error) {
	if len(msgs) == 0 {
		return store.Message{}, errors.New("no messages")
	}
	last := msgs[len(msgs)-1]
	from := 0
	if last.Role == store.RoleTool {
		from = -1
		for i, x := range m.turn {
			for _, tc := range x.ToolCalls {
				if tc.ID == last.ToolCallID {
					from = i + 1
				}
			}
		}
		if from < 0 {
			return store.Message{}, fmt.Errorf("tool result %s answers no call of this turn", last.ToolCallID)
		}
	} else if last.Role != store.RoleUser {
		return store.Message{}, fmt.Errorf("last message is %s", last.Role)
	}
	for _, x := range m.turn[from:] {
		if x.Role == store.RoleAssistant {
			return x, nil
		}
	}
	return store.Message{}, errors.New("the turn has no assistant message left")
}

func wireAsStore(ms []provider.Message) []store.Message {
	out := make([]store.Message, len(ms))
	for i, x := range ms {
		out[i] = store.Message{Role: x.Role, Content: x.Content, ToolCalls: x.ToolCalls, ToolCallID: x.ToolCallID}
	}
	return out
}

// scriptTools serve the scripted tool outputs of the current turn.
type scriptTools struct{ m *scriptModel }

var retentionToolNames = []string{"read_file", "write_file", "terminal", "session_search"}

func (scriptTools) Definitions() []provider.Tool {
	out := make([]provider.Tool, 0, len(retentionToolNames))
	for _, n := range retentionToolNames {
		out = append(out, provider.Tool{Name: n, Description: "Benchmark stand-in for " + n + ".",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"command":{"type":"string"},"query":{"type":"string"}}}`)})
	}
	return out
}

func (t scriptTools) Call(_ context.Context, _ string, c store.ToolCall) (string, bool) {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if out, ok := t.m.results[c.ID]; ok {
		return out, false
	}
	return "Error: no scripted result for " + c.ID, true
}

// watchEngine tells the model when a compaction was planned (the next request is the active
// context after it) and counts fallback summaries.
type watchEngine struct {
	compress.Engine
	m         *scriptModel
	fallbacks *int
	plans     *int
	trigger   int
}

func (e *watchEngine) Compress(ctx context.Context, req compress.Request) (compress.Plan, error) {
	p, err := e.Engine.Compress(ctx, req)
	if err == nil {
		*e.plans++
		if p.Fallback {
			*e.fallbacks++
		}
		e.m.mu.Lock()
		e.m.afterCompaction = true
		// The plan's own target (what this compaction had to reach), else the trigger.
		e.m.target = cmp.Or(p.TargetTokens, e.trigger)
		e.m.mu.Unlock()
	}
	return p, err
}

// stepClock is the agent's clock: five seconds a reading, so cooldowns pass as in a real session.
func stepClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(5 * time.Second)
		return t
	}
}

// errForcedFailure is a summary failure of class "other": the compressor inserts its
// deterministic fallback summary instead of aborting.
var errForcedFailure = errors.New("bench: summary model failure forced by the fallback mode")

// probeTurn is the turn after the session whose first request is scored: what the model sees
// next.
var probeTurn = []store.Message{
	{Role: store.RoleUser, Content: "Status check: where do we stand?"},
	{Role: store.RoleAssistant, Content: "Status noted.", FinishReason: "stop"},
}

// runWindow runs the session of sess through spool's agent at one window with one engine, on a
// fresh SQLite file, and scores it.
func runWindow(ctx context.Context, sess retentionSession, window int, engine, dbPath string, log io.Writer) (*RetentionRun, error) {
	db, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()

	model := &scriptModel{window: window, refused: map[string]int{}}
	ccfg := compress.DefaultConfig()
	var sum compress.Summarizer = compress.ClientSummarizer{Client: fake.New(fake.Config{ContextWindow: window})}
	if engine == ModeFallback {
		sum = compress.SummarizerFunc(func(context.Context, string, string) (string, error) { return "", errForcedFailure })
	}
	clock := stepClock()
	// The compressor the agent itself would build (its clock, its token estimate); the
	// controls wrap the same one.
	base := agent.NewCompressor(ccfg, sum, clock)
	var eng compress.Engine = base
	switch engine {
	case ControlTailOnly:
		eng = tailOnlyEngine{base}
	case ControlBlankSummary:
		eng = blankSummaryEngine{base}
	}
	out := &RetentionRun{Turns: len(sess.turns), FailedTurnErrors: map[string]int{}}
	watch := &watchEngine{Engine: eng, m: model, fallbacks: &out.FallbackSummaries, plans: &out.Compactions}
	ag, err := agent.New(agent.Deps{
		Store: db, Client: model, Tools: scriptTools{model},
		Compressor: watch,
		Config: agent.Config{Model: "bench-model", Provider: "fake", ContextLength: window, Compression: ccfg,
			Prompt: prompt.Env{Platform: "cli"}, Source: "bench"},
		Now: clock,
	})
	if err != nil {
		return nil, err
	}
	out.TriggerTokens = ag.Threshold().Tokens
	watch.trigger = out.TriggerTokens

	sid := ""
	pre := 0 // pre-compaction facts planted so far
	facts := slices.Clone(sess.facts)
	lastTokens := 0
	for t, turn := range sess.turns {
		// A turn that will push the context over the trigger is the one right before a
		// compaction: plant the next pre-compaction fact in it (at the first three such turns,
		// then at every fourth).
		if pre < len(sess.pre) && lastTokens > 0 && lastTokens+turnTokens(turn) >= out.TriggerTokens {
			out.predicted++
			if out.predicted <= 3 || out.predicted%4 == 0 {
				f := sess.pre[pre]
				f.Turn = t
				facts = append(facts, f)
				turn = plantPreCompaction(turn, f)
				pre++
			}
		}
		model.setTurn(turn)
		res, err := ag.Run(ctx, sid, turn[0].Content, agent.RunOptions{})
		if res.SessionID != "" {
			sid = res.SessionID
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out.TurnsFailed++
			if out.FirstFailedTurn == nil {
				ft := t
				out.FirstFailedTurn = &ft
			}
			out.FailedTurnErrors[clipError(err)]++
		}
		model.mu.Lock()
		lastTokens = model.lastSize
		model.mu.Unlock()
		if log != nil && (t+1)%100 == 0 {
			fmt.Fprintf(log, "retention: %d tokens, %s: %d/%d turns, %d compactions, %d failed\n", window, engine, t+1, len(sess.turns), out.Compactions, out.TurnsFailed)
		}
	}
	model.setTurn(probeTurn)
	if _, err := ag.Run(ctx, sid, probeTurn[0].Content, agent.RunOptions{}); err != nil {
		out.ProbeError = clipError(err)
	}
	model.mu.Lock()
	// What the model sees next: the probe turn's first request it answered; when it answered
	// none (every request over the window), the first one it was sent, flagged.
	probe := model.accepted
	if probe == nil {
		probe, out.ProbeRefused = model.first, true
	}
	out.Requests, out.OrphanToolPairs, out.RequestsRefused = model.requests, model.orphans, model.refused
	after, targets := slices.Clone(model.activeAfter), slices.Clone(model.targets)
	for _, n := range model.providerAfter {
		out.ProviderTokensAfterMax = max(out.ProviderTokensAfterMax, n)
	}
	model.mu.Unlock()
	for i, n := range after {
		out.ActiveTokensAfterMax = max(out.ActiveTokensAfterMax, n)
		if n > targets[i] {
			out.ActiveTokensOverTarget++
		}
	}
	out.ActiveTokensAfterP50 = medianInt(after)
	out.TargetTokens = medianInt(targets)
	if probe == nil {
		return nil, fmt.Errorf("the probe turn sent no request (%s)", out.ProbeError)
	}
	out.ProbeRequestTokens = fake.PromptTokens(*probe)
	if d := os.Getenv("BENCH_RETENTION_DUMP"); d != "" {
		// A debugging aid: the probe request as the model reads it, one file per run.
		_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("probe-%d-%s.txt", window, engine)), []byte(requestText(*probe)), 0o600)
	}
	if err := scoreRetention(ctx, db, sid, *probe, facts, sess.asks, sess.constraints, out); err != nil {
		return nil, err
	}
	return out, nil
}

func turnTokens(turn []store.Message) int {
	n := 0
	for _, m := range turn {
		n += fake.CountTokens(m.Content)
		for _, tc := range m.ToolCalls {
			n += fake.CountTokens(tc.Function.Name + tc.Function.Arguments)
		}
	}
	return n
}

func medianInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Ints(s)
	return s[(len(s)-1)/2]
}

var digitsRe = regexp.MustCompile(`[0-9]+`)

// clipError is an error's first line, numbers replaced by N so failures of one kind group.
func clipError(err error) string {
	s := strings.SplitN(err.Error(), "\n", 2)[0]
	s = digitsRe.ReplaceAllString(s, "N")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// pointerRe finds the ledger's message pointers: "[m12]", or a list "[m12,40,513]" that points
// at m12, m40 and m513 (the ledger's pointer lines; its header says how to read one). Nothing
// else counts: no ranges, no bare "m12", no spaces in a list (TestPointerParserRefuses).
var pointerRe = regexp.MustCompile(`\[m(\d+(?:,\d+)*)\]`)

// pointerIDs are the message ids the pointers in text name, each once, in order.
func pointerIDs(text string) []int64 {
	var out []int64
	for _, p := range pointerRe.FindAllStringSubmatch(text, -1) {
		for _, d := range strings.Split(p[1], ",") {
			if id, err := strconv.ParseInt(d, 10, 64); err == nil && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// requestText is everything the model reads in req: system prompt, message texts, tool call
// arguments.
func requestText(req provider.Request) string {
	var b strings.Builder
	b.WriteString(req.System)
	for _, m := range req.Messages {
		b.WriteByte('\n')
		b.WriteString(m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteByte('\n')
			b.WriteString(tc.Function.Arguments)
		}
	}
	return b.String()
}

// scoreRetention classifies every fact and ask against the probe request (what the model sees
// next): present when its text is in it; recoverable when the request holds a [mN] pointer to a
// message holding the text and session_search(session_id, around_message_id=N) returns that
// message as its anchor, or holds the fact's key and session_search(query=key) returns a
// message holding the text among its top 3 results; lost otherwise.
func scoreRetention(ctx context.Context, db store.Backend, sid string, probe provider.Request, facts []Fact, asks []UserAsk, constraints []Fact, out *RetentionRun) error {
	text := requestText(probe)
	all, err := db.Conversation(ctx, sid, store.ViewAll)
	if err != nil {
		return err
	}
	byID := make(map[int64]string, len(all))
	for _, m := range all {
		s := m.Content
		for _, tc := range m.ToolCalls {
			s += "\n" + tc.Function.Arguments
		}
		byID[m.ID] = s
	}
	pointers := pointerIDs(text)
	search := func(args map[string]any) ([]byte, error) {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		out.SearchCalls++
		return recall.Run(ctx, db, sid, raw), nil
	}
	status := func(want, key, roles string) (string, string, error) {
		if strings.Contains(text, want) {
			return StatusPresent, "", nil
		}
		for _, id := range pointers {
			if !strings.Contains(byID[id], want) {
				continue
			}
			raw, err := search(map[string]any{"session_id": sid, "around_message_id": id})
			if err != nil {
				return "", "", err
			}
			var s recall.Scrolled
			if json.Unmarshal(raw, &s) == nil && s.Success {
				for _, m := range s.Messages {
					if m.Anchor && strings.Contains(byID[m.ID], want) {
						return StatusRecoverable, "pointer", nil
					}
				}
			}
			break // one session_search per way of recovering
		}
		if key != "" && strings.Contains(text, key) {
			raw, err := search(map[string]any{"query": key, "role_filter": roles})
			if err != nil {
				return "", "", err
			}
			var d recall.Discovery
			if json.Unmarshal(raw, &d) == nil && d.Success {
				for i, r := range d.Results {
					if i < 3 && strings.Contains(byID[r.MatchMessageID], want) {
						return StatusRecoverable, "key", nil
					}
				}
			}
		}
		return StatusLost, "", nil
	}
	out.FactsTotal = len(facts)
	out.FactsLost = []FactResult{}
	out.LostByPhase, out.LostByPlace = map[string]int{}, map[string]int{}
	for _, f := range facts {
		st, via, err := status(f.Text, f.Key, "user,assistant,tool")
		if err != nil {
			return err
		}
		fr := FactResult{Fact: f, Status: st, Via: via}
		out.Facts = append(out.Facts, fr)
		switch st {
		case StatusPresent:
			out.FactsPresent++
		case StatusRecoverable:
			out.FactsRecoverable++
		default:
			out.FactsLost = append(out.FactsLost, fr)
			out.LostByPhase[f.Phase]++
			out.LostByPlace[f.Where]++
		}
	}
	out.PresentPct = pct1(out.FactsPresent, out.FactsTotal)
	out.RecoverablePct = pct1(out.FactsRecoverable, out.FactsTotal)
	out.PresentOrRecoverablePct = pct1(out.FactsPresent+out.FactsRecoverable, out.FactsTotal)
	out.ConstraintsTotal = len(constraints)
	out.ConstraintsLost = []FactResult{}
	for _, f := range constraints {
		st, via, err := status(f.Text, f.Key, "user")
		if err != nil {
			return err
		}
		switch st {
		case StatusPresent:
			out.ConstraintsPresent++
		case StatusRecoverable:
			out.ConstraintsRecoverable++
		default:
			out.ConstraintsLost = append(out.ConstraintsLost, FactResult{Fact: f, Status: st, Via: via})
		}
	}
	out.ConstraintsKeptPct = pct1(out.ConstraintsPresent+out.ConstraintsRecoverable, out.ConstraintsTotal)
	out.UserAsksTotal = len(asks)
	for _, a := range asks {
		st, _, err := status(a.Sentence, a.Key, "user")
		if err != nil {
			return err
		}
		switch st {
		case StatusPresent:
			out.UserAsksPresent++
		case StatusRecoverable:
			out.UserAsksRecoverable++
		default:
			out.UserAsksLost++
			out.UserAsksLostTurns = append(out.UserAsksLostTurns, a.Turn)
		}
	}
	return nil
}

func pct1(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(int(1000*float64(a)/float64(b)+0.5)) / 10
}
