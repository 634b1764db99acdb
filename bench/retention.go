package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// RetentionHarness labels the retention report.
const RetentionHarness = "spool bench retention (issue 3)"

// Summarizer modes of the retention benchmark.
const (
	ModeFake     = "fake"
	ModeFallback = "fallback"
)

// Retention targets (issue 3).
const (
	RetentionMinCompactions = 5
	RetentionMaxOverheadMs  = 10.0
)

// RetentionConfig sizes RunRetention. Zero fields take the defaults of the full run.
type RetentionConfig struct {
	Seed uint64 // default 20260428
	// Turns is the session length in user turns (default 400).
	Turns int
	// TriggerTokens, when set, is compression.threshold_tokens (a cap on the trigger); by default
	// the compression defaults apply: 0.50 raised to 0.75 under 512K windows, capped at 256,000.
	TriggerTokens int
	// Model and ContextLength are the main model (default gpt-4o, 128,000 tokens: the trigger
	// is then 96,000).
	Model         string
	ContextLength int
	// OverheadMessages and OverheadRuns size the separate overhead case: Compress on the first
	// OverheadMessages messages of the session, OverheadRuns times (defaults 1,000 and 30).
	OverheadMessages int
	OverheadRuns     int
	// Dir is where the scratch directory is made; default $BENCH_TMPDIR, else the temp dir.
	Dir string
	// Log receives progress lines; nil discards.
	Log io.Writer
}

func (c RetentionConfig) withDefaults() RetentionConfig {
	if c.Seed == 0 {
		c.Seed = 20260428
	}
	if c.Turns <= 0 {
		c.Turns = 400
	}
	if c.Model == "" {
		c.Model = "gpt-4o"
	}
	if c.ContextLength <= 0 {
		c.ContextLength = 128_000
	}
	if c.OverheadMessages <= 0 {
		c.OverheadMessages = 1000
	}
	if c.OverheadRuns <= 0 {
		c.OverheadRuns = 30
	}
	return c
}

// RetentionReport is the JSON printed by `spool bench retention`.
type RetentionReport struct {
	Harness string                    `json:"harness"`
	Config  RetentionConfigInfo       `json:"config"`
	Modes   map[string]*RetentionMode `json:"modes"`
	// VerifyOK: every mode ran RetentionMinCompactions or more compactions, lost no fact and no
	// user ask, and left no orphan tool pair. A false VerifyOK makes RunRetention fail.
	VerifyOK bool `json:"verify_ok"`
	// TargetsMet adds the timing target, the 1,000-message overhead p99 under
	// RetentionMaxOverheadMs; a missed timing target is reported, not an error.
	TargetsMet    bool     `json:"targets_met"`
	TargetsMissed []string `json:"targets_missed,omitempty"`
	TotalRuntimeS float64  `json:"total_runtime_s"`
}

// RetentionConfigInfo records what was run.
type RetentionConfigInfo struct {
	Seed             uint64 `json:"seed"`
	Turns            int    `json:"turns"`
	Messages         int    `json:"messages"`
	Model            string `json:"model"`
	TriggerTokens    int    `json:"trigger_tokens"`
	ContextLength    int    `json:"context_length"`
	TailMode         string `json:"tail_mode"`
	TailBudget       int    `json:"tail_budget_tokens"`
	OverheadMessages int    `json:"overhead_messages"`
	OverheadRuns     int    `json:"overhead_runs"`
	Store            string `json:"store"`
	GoVersion        string `json:"go_version"`
}

// RetentionMode is the result of one summarizer mode.
type RetentionMode struct {
	Compactions      int          `json:"compactions"`
	FactsTotal       int          `json:"facts_total"`
	FactsPresent     int          `json:"facts_present"`
	FactsRecoverable int          `json:"facts_recoverable"`
	FactsLost        []FactResult `json:"facts_lost"`
	// Facts is every planted fact with its status: present, recoverable or lost.
	Facts               []FactResult `json:"facts"`
	UserAsksTotal       int          `json:"user_asks_total"`
	UserAsksPresent     int          `json:"user_asks_present"`
	UserAsksRecoverable int          `json:"user_asks_recoverable"`
	UserAsksLost        int          `json:"user_asks_lost"`
	// LostUserAsks are the turns (0-based) whose ask was lost.
	LostUserAsks []int `json:"lost_user_asks,omitempty"`
	// OrphanToolPairs counts, in the final active history, tool results without their call right
	// before them and calls without a result; ...AfterCompactions sums the same count over the
	// active history right after every compaction.
	OrphanToolPairs                 int `json:"orphan_tool_pairs"`
	OrphanToolPairsAfterCompactions int `json:"orphan_tool_pairs_after_compactions"`
	FallbackSummaries               int `json:"fallback_summaries"`
	// Overhead is Compress's wall time minus the time spent inside the summarizer, per compaction
	// of the session.
	OverheadP50 float64 `json:"overhead_ms_p50"`
	OverheadP99 float64 `json:"overhead_ms_p99"`
	// Overhead1000 is the same on the first OverheadMessages messages, OverheadRuns times.
	Overhead1000Tokens int     `json:"overhead_1000_tokens"`
	Overhead1000P50    float64 `json:"overhead_1000_ms_p50"`
	Overhead1000P99    float64 `json:"overhead_1000_ms_p99"`
	// CommitP50/P99 time store.ArchiveAndCompact of each plan (not part of the overhead).
	CommitP50 float64 `json:"commit_ms_p50"`
	CommitP99 float64 `json:"commit_ms_p99"`
	// SearchCalls is how many store.Search calls the recoverability checks made (one per fact
	// or ask that was not present).
	SearchCalls       int `json:"search_calls"`
	FinalActive       int `json:"final_active_messages"`
	FinalActiveTokens int `json:"final_active_tokens"`
	FinalSummaryChars int `json:"final_summary_chars"`
	// TokensBefore/After are the estimates around each compaction.
	TokensBefore []int `json:"tokens_before"`
	TokensAfter  []int `json:"tokens_after"`
}

// Fact statuses.
const (
	StatusPresent     = "present"
	StatusRecoverable = "recoverable"
	StatusLost        = "lost"
)

// FactResult is one planted fact and what became of it.
type FactResult struct {
	Fact
	Status string `json:"status"`
}

// RunRetention runs the retention benchmark and writes its JSON report to stdout. When a fact or
// ask is lost, a tool pair is orphaned or too few compactions ran, it still writes the report,
// then returns an error wrapping ErrVerify.
func RunRetention(ctx context.Context, cfg RetentionConfig, stdout io.Writer) error {
	rep, err := Retention(ctx, cfg)
	if rep == nil {
		return err
	}
	return writeReport(stdout, rep, err)
}

// Retention runs the benchmark: the generated session through the real compressor, committed
// with ArchiveAndCompact on a real SQLite file, once per summarizer mode. A non-nil report with
// ErrVerify means the run completed but retention failed (see RetentionReport.VerifyOK).
func Retention(ctx context.Context, cfg RetentionConfig) (*RetentionReport, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	dir, err := scratchDir(cfg.Dir, "spool-retention-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	sess := generateRetentionSession(cfg.Seed, cfg.Turns)
	nmsg := 0
	for _, t := range sess.turns {
		nmsg += len(t)
	}
	probe, err := newRetentionRun(cfg, sess, ModeFake, logw)
	if err != nil {
		return nil, err
	}
	res := probe.res
	rep := &RetentionReport{
		Harness: RetentionHarness,
		Config: RetentionConfigInfo{
			Seed: cfg.Seed, Turns: cfg.Turns, Messages: nmsg, Model: cfg.Model, TriggerTokens: res.Tokens,
			ContextLength: cfg.ContextLength, TailMode: res.TailMode, TailBudget: res.TailBudget,
			OverheadMessages: cfg.OverheadMessages, OverheadRuns: cfg.OverheadRuns,
			Store: "sqlite (" + driverLabel + ")", GoVersion: runtime.Version(),
		},
		Modes: map[string]*RetentionMode{},
	}
	for _, mode := range []string{ModeFake, ModeFallback} {
		fmt.Fprintf(logw, "retention: %s summarizer, %d turns, %d messages, trigger %d tokens\n", mode, cfg.Turns, nmsg, res.Tokens)
		r, err := newRetentionRun(cfg, sess, mode, logw)
		if err != nil {
			return nil, err
		}
		m, err := r.run(ctx, filepath.Join(dir, mode+".db"))
		if err != nil {
			return nil, fmt.Errorf("retention %s: %w", mode, err)
		}
		rep.Modes[mode] = m
		fmt.Fprintf(logw, "retention: %s: %d compactions, facts %d present %d recoverable %d lost, asks %d lost, orphans %d, overhead p50 %.3f ms, %d-message p99 %.3f ms\n",
			mode, m.Compactions, m.FactsPresent, m.FactsRecoverable, len(m.FactsLost), m.UserAsksLost, m.OrphanToolPairs, m.OverheadP50, cfg.OverheadMessages, m.Overhead1000P99)
	}
	var failed []string
	for _, mode := range []string{ModeFake, ModeFallback} {
		m := rep.Modes[mode]
		if m.Compactions < RetentionMinCompactions {
			failed = append(failed, fmt.Sprintf("%s: %d compactions < %d", mode, m.Compactions, RetentionMinCompactions))
		}
		if len(m.FactsLost) > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d facts lost", mode, len(m.FactsLost)))
		}
		if m.UserAsksLost > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d user asks lost", mode, m.UserAsksLost))
		}
		if n := m.OrphanToolPairs + m.OrphanToolPairsAfterCompactions; n > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d orphan tool pairs", mode, n))
		}
	}
	rep.VerifyOK = len(failed) == 0
	rep.TargetsMissed = append(rep.TargetsMissed, failed...)
	for _, mode := range []string{ModeFake, ModeFallback} {
		if m := rep.Modes[mode]; m.Overhead1000P99 >= RetentionMaxOverheadMs {
			rep.TargetsMissed = append(rep.TargetsMissed, fmt.Sprintf("%s: %d-message overhead p99 %.3f ms >= %.0f ms", mode, cfg.OverheadMessages, m.Overhead1000P99, RetentionMaxOverheadMs))
		}
	}
	rep.TargetsMet = len(rep.TargetsMissed) == 0
	rep.TotalRuntimeS = round3(time.Since(start).Seconds())
	if !rep.VerifyOK {
		return rep, fmt.Errorf("%w: %s", ErrVerify, strings.Join(failed, "; "))
	}
	return rep, nil
}

// retentionCompressConfig is the compressor configuration of the run: the defaults (lean tail)
// with threshold_tokens set to the trigger.
func retentionCompressConfig(cfg RetentionConfig) compress.Config {
	c := compress.DefaultConfig()
	if cfg.TriggerTokens > 0 {
		c.ThresholdTokens = cfg.TriggerTokens
	}
	return c
}

func newRetentionRun(cfg RetentionConfig, sess retentionSession, mode string, log io.Writer) (*retentionRun, error) {
	r := &retentionRun{cfg: cfg, ccfg: retentionCompressConfig(cfg), sess: sess, mode: mode, log: log}
	r.model = compress.Model{Name: cfg.Model, ContextLength: cfg.ContextLength}
	res, err := compress.Resolve(r.ccfg, r.model)
	if err != nil {
		return nil, err
	}
	r.res = res
	return r, nil
}

type retentionRun struct {
	cfg   RetentionConfig
	ccfg  compress.Config
	model compress.Model
	res   compress.Resolution
	sess  retentionSession
	mode  string
	log   io.Writer
}

// timedSummarizer measures the time spent in the summary model, to take it out of the overhead.
type timedSummarizer struct {
	inner compress.Summarizer
	spent time.Duration
}

func (t *timedSummarizer) Summarize(ctx context.Context, model, prompt string) (string, error) {
	start := time.Now()
	out, err := t.inner.Summarize(ctx, model, prompt)
	t.spent += time.Since(start)
	return out, err
}

// errForcedFailure is a summary failure of class "other": the compressor inserts its
// deterministic fallback summary instead of aborting.
var errForcedFailure = errors.New("bench: summary model failure forced by the fallback mode")

func (r *retentionRun) summarizer() compress.Summarizer {
	if r.mode == ModeFake {
		return compress.ClientSummarizer{Client: fake.New(fake.Config{ContextWindow: 10_000_000})}
	}
	return compress.SummarizerFunc(func(context.Context, string, string) (string, error) {
		return "", errForcedFailure
	})
}

// clock is a fixed-step clock, so summaries (their dates) do not depend on when the run happens.
func fixedClock() func() time.Time {
	t := time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func (r *retentionRun) run(ctx context.Context, path string) (*RetentionMode, error) {
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	sid := "retention-" + r.mode
	if _, err := db.CreateSession(ctx, store.NewSession{ID: sid, Source: "bench", Model: r.model.Name, StartedAt: time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)}); err != nil {
		return nil, err
	}
	ts := &timedSummarizer{inner: r.summarizer()}
	comp := compress.New(r.ccfg, ts)
	comp.Now = fixedClock()
	est := compress.CharEstimator{}
	out := &RetentionMode{}

	var state compress.State
	var active []store.Message
	tokens := 0
	var overhead, commit []time.Duration
	for t, turn := range r.sess.turns {
		ids, err := db.AppendBatch(ctx, sid, turn)
		if err != nil {
			return nil, fmt.Errorf("append turn %d: %w", t, err)
		}
		for i, m := range turn {
			m.ID, m.SessionID, m.Active = ids[i], sid, true
			active = append(active, m)
			tokens += est.Message(m)
		}
		if tokens < r.res.Tokens {
			continue
		}
		res := r.res
		ts.spent = 0
		begin := time.Now()
		plan, err := comp.Compress(ctx, compress.Request{SessionID: sid, Messages: active, Model: r.model, Threshold: &res, State: &state})
		took := time.Since(begin)
		if err != nil {
			return nil, fmt.Errorf("compaction %d after turn %d: %w", out.Compactions+1, t, err)
		}
		overhead = append(overhead, took-ts.spent)
		begin = time.Now()
		if _, err := db.ArchiveAndCompact(ctx, plan.CompactRequest("")); err != nil {
			return nil, fmt.Errorf("commit compaction %d after turn %d: %w", out.Compactions+1, t, err)
		}
		commit = append(commit, time.Since(begin))
		out.Compactions++
		if plan.Fallback {
			out.FallbackSummaries++
		}
		if active, err = db.Conversation(ctx, sid, store.ViewActive); err != nil {
			return nil, err
		}
		tokens = compress.EstimateTokens(est, active)
		out.TokensBefore = append(out.TokensBefore, plan.TokensBefore)
		out.TokensAfter = append(out.TokensAfter, tokens)
		out.OrphanToolPairsAfterCompactions += orphanToolPairs(active)
		fmt.Fprintf(r.log, "retention: %s: compaction %d after turn %d: %d -> %d tokens, %d active messages\n", r.mode, out.Compactions, t, plan.TokensBefore, tokens, len(active))
	}
	o := summarize(overhead)
	out.OverheadP50, out.OverheadP99 = o.P50, o.P99
	c := summarize(commit)
	out.CommitP50, out.CommitP99 = c.P50, c.P99
	out.OrphanToolPairs = orphanToolPairs(active)
	out.FinalActive = len(active)
	out.FinalActiveTokens = tokens
	for _, m := range active {
		if m.Summary {
			out.FinalSummaryChars = len(m.Content)
		}
	}

	if err := r.score(ctx, db, active, out); err != nil {
		return nil, err
	}
	if err := r.overhead1000(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// score classifies every fact and every user ask: present in the active context, recoverable
// with one Search call, or lost.
func (r *retentionRun) score(ctx context.Context, db store.Store, active []store.Message, out *RetentionMode) error {
	var b strings.Builder
	for _, m := range active {
		b.WriteString(m.Content)
		b.WriteByte('\n')
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Function.Arguments)
			b.WriteByte('\n')
		}
	}
	activeText := b.String()
	all, err := db.Conversation(ctx, "retention-"+r.mode, store.ViewAll)
	if err != nil {
		return err
	}
	byID := make(map[int64]string, len(all))
	for _, m := range all {
		text := m.Content
		for _, tc := range m.ToolCalls {
			text += "\n" + tc.Function.Arguments
		}
		byID[m.ID] = text
	}
	status := func(text, query string) (string, error) {
		if strings.Contains(activeText, text) {
			return StatusPresent, nil
		}
		out.SearchCalls++
		hits, err := db.Search(ctx, store.SearchQuery{Text: query, NoContext: true})
		if err != nil {
			return "", fmt.Errorf("search %q: %w", query, err)
		}
		for _, h := range hits {
			if strings.Contains(byID[h.MessageID], text) {
				return StatusRecoverable, nil
			}
		}
		return StatusLost, nil
	}
	out.FactsTotal = len(r.sess.facts)
	out.FactsLost = []FactResult{}
	for _, f := range r.sess.facts {
		st, err := status(f.Text, f.Query)
		if err != nil {
			return err
		}
		fr := FactResult{Fact: f, Status: st}
		out.Facts = append(out.Facts, fr)
		switch st {
		case StatusPresent:
			out.FactsPresent++
		case StatusRecoverable:
			out.FactsRecoverable++
		default:
			out.FactsLost = append(out.FactsLost, fr)
		}
	}
	out.UserAsksTotal = len(r.sess.asks)
	for _, a := range r.sess.asks {
		st, err := status(a.Sentence, a.Sentence)
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
			out.LostUserAsks = append(out.LostUserAsks, a.Turn)
		}
	}
	return nil
}

// overhead1000 times Compress on the first OverheadMessages messages of the session (a history
// that was never compacted), minus the summarizer's time.
func (r *retentionRun) overhead1000(ctx context.Context, out *RetentionMode) error {
	var ms []store.Message
	for _, turn := range r.sess.turns {
		for _, m := range turn {
			if len(ms) == r.cfg.OverheadMessages {
				break
			}
			m.ID, m.SessionID, m.Active = int64(len(ms)+1), "overhead", true
			ms = append(ms, m)
		}
	}
	// A history cut mid-turn must still end on a complete exchange.
	for len(ms) > 0 && (ms[len(ms)-1].Role == store.RoleTool || len(ms[len(ms)-1].ToolCalls) > 0) {
		ms = ms[:len(ms)-1]
	}
	out.Overhead1000Tokens = compress.EstimateTokens(nil, ms)
	ts := &timedSummarizer{inner: r.summarizer()}
	comp := compress.New(r.ccfg, ts)
	comp.Now = fixedClock()
	var samples []time.Duration
	for range r.cfg.OverheadRuns {
		res := r.res
		ts.spent = 0
		begin := time.Now()
		if _, err := comp.Compress(ctx, compress.Request{SessionID: "overhead", Messages: ms, Model: r.model, Threshold: &res, State: &compress.State{}}); err != nil {
			return fmt.Errorf("overhead case (%d messages): %w", len(ms), err)
		}
		samples = append(samples, time.Since(begin)-ts.spent)
	}
	s := summarize(samples)
	out.Overhead1000P50, out.Overhead1000P99 = s.P50, s.P99
	return nil
}

// orphanToolPairs counts what a provider would reject: a tool result not directly preceded (over
// other results only) by the assistant message that called it, and a call whose result does not
// follow it directly.
func orphanToolPairs(ms []store.Message) int {
	n := 0
	for i, m := range ms {
		switch {
		case m.Role == store.RoleAssistant && len(m.ToolCalls) > 0:
			answered := map[string]bool{}
			for j := i + 1; j < len(ms) && ms[j].Role == store.RoleTool; j++ {
				answered[ms[j].ToolCallID] = true
			}
			for _, tc := range m.ToolCalls {
				if !answered[tc.ID] {
					n++
				}
			}
		case m.Role == store.RoleTool:
			k := i - 1
			for k >= 0 && ms[k].Role == store.RoleTool {
				k--
			}
			called := false
			if k >= 0 && ms[k].Role == store.RoleAssistant {
				for _, tc := range ms[k].ToolCalls {
					called = called || tc.ID == m.ToolCallID
				}
			}
			if !called {
				n++
			}
		}
	}
	return n
}
