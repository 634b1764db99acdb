package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
)

// RetentionHarness labels the retention report.
const RetentionHarness = "spool bench retention"

// Retention targets.
const (
	// RetentionMinPresentPct is the share of facts that must stay in the request itself at
	// windows of RetentionPresentFromWindow tokens and more.
	RetentionMinPresentPct     = 90.0
	RetentionPresentFromWindow = 32_768
	RetentionMaxOverheadMs     = 10.0
)

// DefaultRetentionWindows are the context windows of the full run: 4K, 8K, 32K, 128K and 1M.
var DefaultRetentionWindows = []int{4_096, 8_192, 32_768, 131_072, 1_048_576}

// RetentionEngines are every engine the benchmark knows, in report order.
var RetentionEngines = []string{ModeFake, ModeFallback, ControlTailOnly, ControlBlankSummary}

// RetentionConfig sizes RunRetention. Zero fields take the defaults of the full run.
type RetentionConfig struct {
	Seed uint64 // default 20260428
	// Turns is the session length in user turns (default 500).
	Turns int
	// Windows are the main model's context windows to run (default DefaultRetentionWindows).
	Windows []int
	// Engines to run at every window (default RetentionEngines: both summarizer modes and the
	// two controls).
	Engines []string
	// OverheadMessages and OverheadRuns size the separate overhead case: Compress on the first
	// OverheadMessages messages of the session at a 128K window, OverheadRuns times (defaults
	// 1,000 and 30; OverheadRuns < 0 skips the case).
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
		c.Turns = 500
	}
	if len(c.Windows) == 0 {
		c.Windows = DefaultRetentionWindows
	}
	if len(c.Engines) == 0 {
		c.Engines = RetentionEngines
	}
	if c.OverheadMessages <= 0 {
		c.OverheadMessages = 1000
	}
	if c.OverheadRuns == 0 {
		c.OverheadRuns = 30
	}
	return c
}

// RetentionReport is the JSON printed by `spool bench retention`.
type RetentionReport struct {
	Harness string              `json:"harness"`
	Config  RetentionConfigInfo `json:"config"`
	// Windows are the results per context window, smallest first.
	Windows  []RetentionWindow  `json:"windows"`
	Overhead *RetentionOverhead `json:"overhead,omitempty"`
	// VerifyOK: every target below except the timing one was met; false makes RunRetention
	// fail (exit 1).
	VerifyOK bool `json:"verify_ok"`
	// TargetsMet adds the timing target (the 1,000-message overhead p50 under
	// RetentionMaxOverheadMs), which is reported, never an error.
	TargetsMet    bool     `json:"targets_met"`
	TargetsMissed []string `json:"targets_missed,omitempty"`
	TotalRuntimeS float64  `json:"total_runtime_s"`
}

// RetentionConfigInfo records what was run and how it was scored.
type RetentionConfigInfo struct {
	Seed      uint64            `json:"seed"`
	Turns     int               `json:"turns"`
	Messages  int               `json:"messages"`
	Windows   []int             `json:"windows"`
	Engines   []string          `json:"engines"`
	Store     string            `json:"store"`
	GoVersion string            `json:"go_version"`
	Rules     map[string]string `json:"rules"`
}

var retentionRules = map[string]string{
	"session": "every turn runs through spool's agent (lease, preflight gate, compaction committed in place on a real SQLite " +
		"file, wire request) against a scripted model that plays the generated turn and refuses prompts over the window " +
		"(provider/fake's tokenizer) and orphan tool pairs, as providers do",
	"present": "the fact's text is, verbatim, in the request the model reads next (the first request of a probe turn " +
		"after the session that the model answered): system prompt, message texts, tool call arguments",
	"recoverable": "not present, but the request holds a [mN] pointer (or N in a pointer list [mA,B,...]) to a message holding the text and " +
		"session_search(session_id, around_message_id=N) (package recall) anchors on such a message, or the request " +
		"holds the fact's key (an identifier, never the sentence) and session_search(query=key, " +
		"role_filter=user,assistant,tool; user for asks) returns a message holding the text among its top 3 results",
	"lost": "neither present nor recoverable",
	"constraints": "every correction or constraint the user said (never, always, don't, use X not Y, instead of, stop, " +
		"make sure, ...), each sentence once, scored as a fact with role_filter=user; kept = present or recoverable",
	"target_tokens": "the compaction trigger: a context above it after a compaction compacts again on the next call",
	"targets": "per window, fake and fallback engines: 0 failed turns, active tokens after every compaction at or under " +
		"the target, no orphan tool pair, 100% of facts and of corrections and constraints present or recoverable, " +
		"present >= 90% from 32K on; the control engines must lose facts and constraints",
}

// RetentionWindow is one context window's results.
type RetentionWindow struct {
	ContextLength int                      `json:"context_length"`
	Engines       map[string]*RetentionRun `json:"engines"`
}

// RetentionRun is the result of one engine at one window.
type RetentionRun struct {
	Turns int `json:"turns"`
	// TurnsFailed counts the turns whose agent.Run returned an error; FailedTurnErrors groups
	// them by message (numbers as N).
	TurnsFailed      int            `json:"turns_failed"`
	FirstFailedTurn  *int           `json:"first_failed_turn,omitempty"`
	FailedTurnErrors map[string]int `json:"failed_turn_errors,omitempty"`
	ProbeError       string         `json:"probe_error,omitempty"`
	// ProbeRefused: the model refused every request of the probe turn; the facts are scored
	// on the first one, which the model never read.
	ProbeRefused      bool           `json:"probe_refused,omitempty"`
	Requests          int            `json:"requests"`
	RequestsRefused   map[string]int `json:"requests_refused"`
	Compactions       int            `json:"compactions"`
	FallbackSummaries int            `json:"fallback_summaries"`
	TriggerTokens     int            `json:"trigger_tokens"`
	// TargetTokens is the median of the compactions' own targets (compress.Plan.TargetTokens:
	// the whole-request size each had to reach); each compaction is checked against its own.
	TargetTokens int `json:"target_tokens"`
	// ActiveTokensAfter* are the size of the first request after each compaction, in the agent's
	// estimate (tokens.EstimateRequest, the units of the trigger and the target);
	// ProviderTokensAfterMax is the largest in the provider's count.
	ActiveTokensAfterP50   int `json:"active_tokens_after_compaction_p50"`
	ActiveTokensAfterMax   int `json:"active_tokens_after_compaction_max"`
	ActiveTokensOverTarget int `json:"compactions_over_target"`
	ProviderTokensAfterMax int `json:"provider_tokens_after_compaction_max"`
	ProbeRequestTokens     int `json:"probe_request_tokens"`

	FactsTotal              int          `json:"facts_total"`
	FactsPresent            int          `json:"facts_present"`
	FactsRecoverable        int          `json:"facts_recoverable"`
	PresentPct              float64      `json:"present_pct"`
	RecoverablePct          float64      `json:"recoverable_pct"`
	PresentOrRecoverablePct float64      `json:"present_or_recoverable_pct"`
	FactsLost               []FactResult `json:"facts_lost"`
	// LostByPhase and LostByPlace count the lost facts by when and where they were planted.
	LostByPhase map[string]int `json:"lost_by_phase"`
	LostByPlace map[string]int `json:"lost_by_place"`
	// Facts is every planted fact with its status.
	Facts               []FactResult `json:"facts"`
	UserAsksTotal       int          `json:"user_asks_total"`
	UserAsksPresent     int          `json:"user_asks_present"`
	UserAsksRecoverable int          `json:"user_asks_recoverable"`
	UserAsksLost        int          `json:"user_asks_lost"`
	// UserAsksLostTurns are the turns (0-based) whose ask was lost.
	UserAsksLostTurns []int `json:"user_asks_lost_turns,omitempty"`
	// Constraints* score the user's corrections and constraints apart (each sentence once, as
	// first said; present or recoverable as a fact is): the asks that bind the rest of the
	// session.
	ConstraintsTotal       int          `json:"constraints_total"`
	ConstraintsPresent     int          `json:"constraints_present"`
	ConstraintsRecoverable int          `json:"constraints_recoverable"`
	ConstraintsKeptPct     float64      `json:"constraints_kept_pct"`
	ConstraintsLost        []FactResult `json:"constraints_lost"`
	// OrphanToolPairs counts tool results without their call and calls without their result in
	// every request sent (each such request is refused).
	OrphanToolPairs int `json:"orphan_tool_pairs"`
	SearchCalls     int `json:"search_calls"`

	predicted int // turns predicted to end right before a compaction
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
	// Via is how a recoverable fact was found: "pointer" or "key".
	Via string `json:"via,omitempty"`
}

// RetentionOverhead is Compress's time outside the model call on the first OverheadMessages
// messages of the session (a history never compacted), per summarizer mode.
type RetentionOverhead struct {
	Messages int                           `json:"messages"`
	Tokens   int                           `json:"tokens"`
	Runs     int                           `json:"runs"`
	Modes    map[string]RetentionOverheadM `json:"modes"`
}

// RetentionOverheadM is one mode's overhead percentiles.
type RetentionOverheadM struct {
	P50 float64 `json:"ms_p50"`
	P99 float64 `json:"ms_p99"`
}

// RunRetention runs the retention benchmark and writes its JSON report to stdout. When a target
// is missed it still writes the report, then returns an error wrapping ErrVerify.
func RunRetention(ctx context.Context, cfg RetentionConfig, stdout io.Writer) error {
	rep, err := Retention(ctx, cfg)
	if rep == nil {
		return err
	}
	return writeReport(stdout, rep, err)
}

// Retention runs the benchmark: the generated session through spool's agent at every window
// with every engine, each on its own SQLite file. A non-nil report with ErrVerify means the run
// completed and a target was missed.
func Retention(ctx context.Context, cfg RetentionConfig) (*RetentionReport, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	for _, e := range cfg.Engines {
		if !slices.Contains(RetentionEngines, e) {
			return nil, fmt.Errorf("unknown retention engine %q (want %s)", e, strings.Join(RetentionEngines, ", "))
		}
	}
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
	windows := slices.Sorted(slices.Values(cfg.Windows))
	rep := &RetentionReport{
		Harness: RetentionHarness,
		Config: RetentionConfigInfo{Seed: cfg.Seed, Turns: cfg.Turns, Messages: nmsg, Windows: windows, Engines: cfg.Engines,
			Store: "sqlite (" + driverLabel + ")", GoVersion: runtime.Version(), Rules: retentionRules},
	}
	var failed []string
	for _, w := range windows {
		win := RetentionWindow{ContextLength: w, Engines: map[string]*RetentionRun{}}
		for _, e := range cfg.Engines {
			fmt.Fprintf(logw, "retention: window %d, %s: %d turns, %d messages\n", w, e, cfg.Turns, nmsg)
			r, err := runWindow(ctx, sess, w, e, filepath.Join(dir, fmt.Sprintf("%d-%s.db", w, e)), logw)
			if err != nil {
				return nil, fmt.Errorf("retention at %d tokens, %s: %w", w, e, err)
			}
			win.Engines[e] = r
			fmt.Fprintf(logw, "retention: window %d, %s: %d compactions, %d failed turns, facts %.1f%% present %.1f%% recoverable %d lost, asks %d lost, orphans %d, after-compaction max %d / target %d (%d over)\n",
				w, e, r.Compactions, r.TurnsFailed, r.PresentPct, r.RecoverablePct, len(r.FactsLost), r.UserAsksLost, r.OrphanToolPairs, r.ActiveTokensAfterMax, r.TargetTokens, r.ActiveTokensOverTarget)
			fmt.Fprintf(logw, "retention: window %d, %s: corrections and constraints kept %d of %d (%.1f%%: %d present, %d recoverable); user asks kept %d of %d (%.1f%%)\n",
				w, e, r.ConstraintsPresent+r.ConstraintsRecoverable, r.ConstraintsTotal, r.ConstraintsKeptPct, r.ConstraintsPresent, r.ConstraintsRecoverable,
				r.UserAsksPresent+r.UserAsksRecoverable, r.UserAsksTotal, pct1(r.UserAsksPresent+r.UserAsksRecoverable, r.UserAsksTotal))
			failed = append(failed, retentionMisses(w, e, r)...)
		}
		rep.Windows = append(rep.Windows, win)
	}
	rep.VerifyOK = len(failed) == 0
	rep.TargetsMissed = append(rep.TargetsMissed, failed...)
	if cfg.OverheadRuns > 0 {
		o, err := retentionOverhead(ctx, sess, cfg.OverheadMessages, cfg.OverheadRuns)
		if err != nil {
			return nil, err
		}
		rep.Overhead = o
		for _, mode := range []string{ModeFake, ModeFallback} {
			if m := o.Modes[mode]; m.P50 >= RetentionMaxOverheadMs {
				rep.TargetsMissed = append(rep.TargetsMissed, fmt.Sprintf("%s: %d-message overhead p50 %.3f ms >= %.0f ms", mode, o.Messages, m.P50, RetentionMaxOverheadMs))
			}
		}
	}
	rep.TargetsMet = len(rep.TargetsMissed) == 0
	rep.TotalRuntimeS = round3(time.Since(start).Seconds())
	if !rep.VerifyOK {
		return rep, fmt.Errorf("%w: %s", ErrVerify, strings.Join(failed, "; "))
	}
	return rep, nil
}

// retentionMisses are the targets engine e missed at window w.
func retentionMisses(w int, e string, r *RetentionRun) []string {
	at := fmt.Sprintf("%d tokens, %s", w, e)
	if e == ControlTailOnly || e == ControlBlankSummary {
		// A window the session never filled cannot show a loss; one that compacted must.
		var out []string
		if r.Compactions > 0 && len(r.FactsLost) == 0 {
			out = append(out, at+": the control engine lost no fact in "+fmt.Sprint(r.Compactions)+" compactions (the benchmark cannot see a loss)")
		}
		if r.Compactions > 0 && len(r.ConstraintsLost) == 0 {
			out = append(out, at+": the control engine lost no correction or constraint in "+fmt.Sprint(r.Compactions)+" compactions (the benchmark cannot see a loss)")
		}
		return out
	}
	var out []string
	if r.TurnsFailed > 0 {
		out = append(out, fmt.Sprintf("%s: %d of %d turns failed", at, r.TurnsFailed, r.Turns))
	}
	if r.ActiveTokensOverTarget > 0 {
		out = append(out, fmt.Sprintf("%s: %d of %d compactions left more than their target (median target %d, max after %d)", at, r.ActiveTokensOverTarget, r.Compactions, r.TargetTokens, r.ActiveTokensAfterMax))
	}
	if r.OrphanToolPairs > 0 {
		out = append(out, fmt.Sprintf("%s: %d orphan tool pairs sent", at, r.OrphanToolPairs))
	}
	if len(r.FactsLost) > 0 {
		out = append(out, fmt.Sprintf("%s: %d of %d facts lost", at, len(r.FactsLost), r.FactsTotal))
	}
	if len(r.ConstraintsLost) > 0 {
		out = append(out, fmt.Sprintf("%s: %d of %d corrections and constraints lost", at, len(r.ConstraintsLost), r.ConstraintsTotal))
	}
	if w >= RetentionPresentFromWindow && r.PresentPct < RetentionMinPresentPct {
		out = append(out, fmt.Sprintf("%s: %.1f%% of facts present < %.0f%%", at, r.PresentPct, RetentionMinPresentPct))
	}
	if r.ProbeError != "" {
		out = append(out, fmt.Sprintf("%s: the probe turn failed: %s", at, r.ProbeError))
	}
	return out
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

// fixedClock is a fixed-step clock, so summaries (their dates) do not depend on when the run
// happens.
func fixedClock() func() time.Time {
	t := time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// retentionOverhead times Compress on the first n messages of the session (a history that was
// never compacted) at a 128K window, minus the summarizer's time, runs times per mode.
func retentionOverhead(ctx context.Context, sess retentionSession, n, runs int) (*RetentionOverhead, error) {
	var ms []store.Message
	for _, turn := range sess.turns {
		for _, m := range turn {
			if len(ms) == n {
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
	out := &RetentionOverhead{Messages: len(ms), Tokens: compress.EstimateTokens(nil, ms), Runs: runs, Modes: map[string]RetentionOverheadM{}}
	ccfg := compress.DefaultConfig()
	model := compress.Model{Name: "gpt-4o", ContextLength: 128_000}
	res, err := compress.Resolve(ccfg, model)
	if err != nil {
		return nil, err
	}
	for _, mode := range []string{ModeFake, ModeFallback} {
		var inner compress.Summarizer = compress.ClientSummarizer{Client: fake.New(fake.Config{ContextWindow: 10_000_000})}
		if mode == ModeFallback {
			inner = compress.SummarizerFunc(func(context.Context, string, string) (string, error) { return "", errForcedFailure })
		}
		ts := &timedSummarizer{inner: inner}
		comp := agent.NewCompressor(ccfg, ts, fixedClock())
		var samples []time.Duration
		for range runs {
			r := res
			ts.spent = 0
			begin := time.Now()
			if _, err := comp.Compress(ctx, compress.Request{SessionID: "overhead", Messages: ms, Model: model, Threshold: &r, State: &compress.State{}}); err != nil {
				return nil, fmt.Errorf("overhead case (%d messages, %s): %w", len(ms), mode, err)
			}
			samples = append(samples, time.Since(begin)-ts.spent)
		}
		s := summarize(samples)
		out.Modes[mode] = RetentionOverheadM{P50: s.P50, P99: s.P99}
	}
	return out, nil
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
