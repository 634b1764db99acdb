package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/anthropic"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/provider/openai"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// CacheConfig sizes the prompt-cache benchmark.
type CacheConfig struct {
	Turns int    // 0: 300
	Dir   string // scratch directory for the SQLite files ("" : $BENCH_TMPDIR or the temp dir)
	// Providers to run, in order ("openai", "anthropic", "responses"); nil: all three.
	Providers []string
	// Scenarios to run ("steady", "pause-5m", "pause-1h", "mcp-tools"); nil: all.
	Scenarios []string
	// Control runs, in the place of spool's agent, one that renders the time into its system
	// prompt every turn: a bad result the benchmark must report (targets missed, exit 1).
	Control bool
	Log     io.Writer // progress lines; nil: none
}

// Scenarios of the cache benchmark.
const (
	// ScenarioSteady: a turn every 73 seconds; spool, the naive and the rebuild agents.
	ScenarioSteady = "steady"
	// ScenarioPause5m: every 20th turn comes after a 6-minute pause (longer than the 5-minute
	// lifetime); Anthropic asks for the 1-hour TTL (cache_ttl: 1h).
	ScenarioPause5m = "pause-5m"
	// ScenarioPause1h: every 40th turn comes after a 61-minute pause (longer than any lifetime).
	ScenarioPause1h = "pause-1h"
	// ScenarioMCPTools: a turn every 73 s, and every 50th turn an MCP server ("docs") changes
	// its tool list between turns (a tool added or its schema changed), as a live server does.
	ScenarioMCPTools = "mcp-tools"
)

// CacheScenarios are every scenario, in report order.
var CacheScenarios = []string{ScenarioSteady, ScenarioPause5m, ScenarioPause1h, ScenarioMCPTools}

// CacheProviders are the provider cache models: OpenAI Chat Completions and Anthropic Messages
// accounting, and the OpenAI Responses API (stateless, reasoning items replayed; its cache holds
// what the model generated, so a replayed answer is read back from it).
var CacheProviders = []string{"openai", "anthropic", "responses", StyleResponsesCompact}

// StyleResponsesCompact is the Responses API with compression.engine provider: every
// compaction is the provider's own (POST /responses/compact), its window replayed on the
// summary row.
const StyleResponsesCompact = "responses-compact"

// CacheTarget is the efficiency spool must reach against the ideal ceiling.
const CacheTarget = 0.99

// CacheReport is `spool bench cache`'s JSON.
type CacheReport struct {
	Benchmark string            `json:"benchmark"`
	Turns     int               `json:"turns"`
	Workload  string            `json:"workload"`
	Rules     map[string]string `json:"ceiling_rules"`
	// Scenarios[scenario][provider] are the figures of one provider cache model in one scenario.
	Scenarios map[string]map[string]*CacheProviderReport `json:"scenarios"`
	// TargetsMet: spool's efficiency is at least CacheTarget in every scenario and provider.
	TargetsMet    bool     `json:"targets_met"`
	TargetsMissed []string `json:"targets_missed,omitempty"`
	Elapsed       float64  `json:"elapsed_seconds"`
}

// CacheProviderReport is one provider cache model's figures in one scenario: spool's agent and,
// in the steady scenario, side by side on the same script, a naive agent that renders the
// current time into its system prompt every turn and one that renders it again at every
// compaction.
type CacheProviderReport struct {
	Model    string `json:"model"`
	CacheTTL string `json:"cache_ttl"`
	// Lifetime is how long an unused prefix stays cached for the ideal agent too.
	Lifetime string    `json:"lifetime"`
	Spool    CacheRun  `json:"spool"`
	Naive    *CacheRun `json:"naive,omitempty"`
	Rebuild  *CacheRun `json:"rebuild,omitempty"`
	// NoReplay (Responses API, steady scenario) is spool's session sent without the reasoning
	// items of earlier answers: the cost of dropping reasoning replay.
	NoReplay *CacheRun `json:"no_replay,omitempty"`
	// Control marks a control run: "spool" is then an agent that renders the time into its
	// system prompt every turn, which must miss the target.
	Control bool `json:"control,omitempty"`
}

// CacheRun is one agent's figures.
type CacheRun struct {
	Requests int `json:"requests"`
	// PromptTokens counts every prompt token of the agent's model calls, cached ones included.
	PromptTokens     int64 `json:"prompt_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// CeilingTokens sums idealCeiling over the calls: what an ideal agent could have had cached.
	CeilingTokens int64   `json:"ceiling_tokens"`
	Efficiency    float64 `json:"efficiency"`
	CachedShare   float64 `json:"cached_share"`
	Compactions   int     `json:"compactions"`
	// ProviderCompactions counts the compactions the provider wrote (POST /responses/compact).
	ProviderCompactions int `json:"provider_compactions,omitempty"`
	// AfterPause counts the calls that came after a pause longer than the lifetime (their
	// ceiling is 0).
	AfterPause  int     `json:"calls_after_long_pause"`
	CacheBreaks Breaks  `json:"cache_breaks"`
	CostUSD     float64 `json:"cost_usd"`
}

// Breaks counts the cache breaks spool's forensics recorded, by reason.
type Breaks struct {
	Count   int            `json:"count"`
	Reasons map[string]int `json:"reasons"`
	// Details counts the breaks whose record names what changed (the MCP server whose tool
	// list changed, the models of a fallback switch), by that detail.
	Details map[string]int `json:"details,omitempty"`
}

// cacheRules documents the ceiling exactly as idealCeiling computes it.
var cacheRules = map[string]string{
	"ceiling": "call 1: 0. Any later call: what an ideal agent could have had cached: everything already sent in the same " +
		"order (the previous call's whole prompt: tools, system prompt, messages), or right after a compaction the " +
		"tools, the system prompt and the messages before the first one the compaction had to change (the head it kept " +
		"in place). Tools and system prompt count whole as long as their inputs did not change, which here is always " +
		"(project rules, platform and tools are constant; spool's own note at its first compaction counts against it); " +
		"never less than the prefix the agent really sent again byte for byte; 0 after a pause longer than the lifetime",
	"openai":     "the ceiling rounded down to whole 128-token blocks, 0 below 1024 tokens; lifetime 5 minutes without use",
	"anthropic":  "the ceiling as is (an ideal agent puts its breakpoints where they pay), 0 below 1024 tokens; lifetime the cache_ttl asked (5m, or 1h in the pause scenarios)",
	"efficiency": "cached tokens / ceiling tokens, summed over the agent's model calls (summary calls are not counted)",
	"responses": "the ceiling of an ideal agent that replays every answer's output items (reasoning included) byte for byte: " +
		"the previous call's prompt plus the previous answer, counted with the reasoning items, rounded down to whole 128-token " +
		"blocks, 0 below 1024 tokens; the Responses API's cache holds what the model generated, so a byte-identical replay reads " +
		"it back; no-replay is measured against the same ceiling",
	"responses-compact": "as responses; the compaction is the provider's (compression.engine provider): after one the ideal agent " +
		"keeps the head, and the window the provider returned counts where the agent replays it",
	"mcp-tools": "a changed tool list comes first in the request and changes every byte after it: the ceiling of that call is 0",
	"naive":     "the naive agent appends the current time to the system prompt every turn",
	"rebuild":   "the rebuild agent heads its system prompt with the time of its last build and builds it again at every compaction",
}

// RunCache runs the scripted tool-heavy session through spool's agent against provider/fake
// served over real HTTP by an httptest server, through the real provider/openai and
// provider/anthropic adapters, in every scenario: in the steady one as spool sends it and
// through the naive and rebuild rewrites, with pauses longer than the cache lifetime as spool
// sends it. Each run has its own fake (cold cache) on a simulated clock, its own SQLite store,
// and compaction enabled with a small window so the session compacts several times. It returns
// the report; efficiency is cached ÷ ideal ceiling (see cacheRules).
func RunCache(ctx context.Context, cfg CacheConfig) (*CacheReport, error) {
	if cfg.Turns <= 0 {
		cfg.Turns = 300
	}
	if len(cfg.Providers) == 0 {
		cfg.Providers = CacheProviders
	}
	if len(cfg.Scenarios) == 0 {
		cfg.Scenarios = CacheScenarios
	}
	for _, style := range cfg.Providers {
		if !slices.Contains(CacheProviders, style) {
			return nil, fmt.Errorf("bench cache: unknown provider cache model %q (want %s)", style, strings.Join(CacheProviders, ", "))
		}
	}
	for _, sc := range cfg.Scenarios {
		if !slices.Contains(CacheScenarios, sc) {
			return nil, fmt.Errorf("bench cache: unknown scenario %q (want %s)", sc, strings.Join(CacheScenarios, ", "))
		}
	}
	scratch, err := scratchDir(cfg.Dir, "spool-bench-cache-")
	if err != nil {
		return nil, fmt.Errorf("bench cache: %w", err)
	}
	defer os.RemoveAll(scratch)
	start := time.Now()
	rep := &CacheReport{
		Benchmark: "cache", Turns: cfg.Turns, Rules: cacheRules, Scenarios: map[string]map[string]*CacheProviderReport{},
		Workload: fmt.Sprintf("%d scripted turns: 4 of 5 call tools (1-3 calls: read_file, search_files, terminal; "+
			"results of 0.3-3 KB), 1 of 5 is a plain question; 6 KB of project rules in the system prompt; 32,000-token window, compaction trigger 24,000 tokens; "+
			"a turn every 73 s (steady), every 20th after 6 min (pause-5m), every 40th after 61 min (pause-1h), "+
			"an MCP server's tool list changed every 50 turns (mcp-tools)", cfg.Turns),
	}
	for _, sc := range cfg.Scenarios {
		rep.Scenarios[sc] = map[string]*CacheProviderReport{}
		for _, style := range cfg.Providers {
			agents := []string{agentSpool}
			switch {
			case sc == ScenarioSteady && style == "responses":
				agents = append(agents, agentNoReplay)
			case sc == ScenarioSteady:
				agents = append(agents, agentNaive, agentRebuild)
			}
			ttl, lifetime := 5*time.Minute, 5*time.Minute
			if style == "anthropic" && (sc == ScenarioPause5m || sc == ScenarioPause1h) {
				ttl, lifetime = time.Hour, time.Hour
			}
			pr := &CacheProviderReport{CacheTTL: ttl.String(), Lifetime: lifetime.String(), Control: cfg.Control}
			for _, ag := range agents {
				path := filepath.Join(scratch, fmt.Sprintf("%s-%s-%s.db", sc, style, ag))
				run := ag
				if cfg.Control && ag == agentSpool {
					run = agentNaive
				}
				r, model, err := runCacheSession(ctx, cacheRunSpec{style: style, agent: run, scenario: sc, turns: cfg.Turns, ttl: ttl, lifetime: lifetime}, path, cfg.Log)
				if err != nil {
					return nil, err
				}
				pr.Model = model
				switch ag {
				case agentSpool:
					pr.Spool = r
				case agentNaive:
					pr.Naive = &r
				case agentRebuild:
					pr.Rebuild = &r
				case agentNoReplay:
					pr.NoReplay = &r
				}
			}
			rep.Scenarios[sc][style] = pr
			if pr.Spool.Efficiency < CacheTarget {
				what := ""
				if cfg.Control {
					what = " (control)"
				}
				rep.TargetsMissed = append(rep.TargetsMissed, fmt.Sprintf("%s, %s%s: efficiency %.4f < %.2f", sc, style, what, pr.Spool.Efficiency, CacheTarget))
			}
		}
	}
	rep.TargetsMet = len(rep.TargetsMissed) == 0
	rep.Elapsed = time.Since(start).Seconds()
	return rep, nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(int64(float64(a)/float64(b)*1e6)) / 1e6
}

type cacheRunSpec struct {
	style, agent, scenario string
	turns                  int
	ttl, lifetime          time.Duration
}

// gap is the simulated time before turn i.
func (s cacheRunSpec) gap(i int) time.Duration {
	switch {
	case s.scenario == ScenarioPause5m && i%20 == 19:
		return 6 * time.Minute
	case s.scenario == ScenarioPause1h && i%40 == 39:
		return 61 * time.Minute
	}
	return 73 * time.Second
}

func runCacheSession(ctx context.Context, spec cacheRunSpec, dbPath string, log io.Writer) (CacheRun, string, error) {
	fig := CacheRun{CacheBreaks: Breaks{Reasons: map[string]int{}, Details: map[string]int{}}}
	clock := &simClock{t: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
	model := fake.New(fake.Config{Now: clock.Now})
	srv := httptest.NewServer(model.Handler())
	defer srv.Close()
	var raw provider.Client
	var err error
	name := "gpt-4o"
	switch spec.style {
	case "openai":
		raw, err = openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "bench"})
	case "responses", StyleResponsesCompact:
		name = "gpt-5-mini"
		raw, err = openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "bench", API: openai.APIResponses})
	default:
		name = "claude-sonnet-4-5"
		raw, err = anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "bench", CacheTTL: spec.ttl})
	}
	if err != nil {
		return fig, name, err
	}
	db, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return fig, name, fmt.Errorf("bench cache: %w", err)
	}
	defer db.Close()
	m := &meter{next: raw, agent: spec.agent, clock: clock}
	tools := &benchTools{}
	cc := compress.DefaultConfig()
	cc.ThresholdTokens = 24_000
	comp := agent.NewCompressor(cc, compress.ClientSummarizer{Client: raw}, clock.Now)
	var engine compress.Engine = comp
	if spec.style == StyleResponsesCompact {
		cc.Engine = agent.ProviderEngineName
		engine = agent.NewProviderEngine(comp, raw.(provider.Compactor), name)
	}
	ag, err := agent.New(agent.Deps{
		Store: db, Client: m, Tools: tools, Compressor: markingEngine{Engine: engine, m: m},
		Config: agent.Config{Model: name, ContextLength: 32_000, Compression: cc, CacheTTL: spec.ttl,
			Prompt: prompt.Env{Platform: "cli", SystemMessage: cacheProjectRules}, Source: "bench"},
		Now: clock.Now,
	})
	if err != nil {
		return fig, name, err
	}
	sid := ""
	label := spec.scenario + " " + spec.style + " " + spec.agent
	for i := range spec.turns {
		clock.advance(spec.gap(i))
		if spec.scenario == ScenarioMCPTools {
			tools.mcpVersion = (i + 1) / 50 // between turns, never within one
		}
		m.setTurn(clock.Now())
		opts := agent.RunOptions{}
		if log != nil {
			opts.OnNotice = func(s string) { fmt.Fprintf(log, "bench cache: %s turn %d: %s\n", label, i, s) }
		}
		res, err := ag.Run(ctx, sid, cacheScript(i), opts)
		if err != nil {
			return fig, name, fmt.Errorf("bench cache (%s): turn %d: %w", label, i, err)
		}
		sid = res.SessionID
		fig.Compactions += res.Compactions
		fig.CostUSD += res.Usage.CostUSD
		for _, b := range res.Breaks {
			fig.CacheBreaks.Count++
			fig.CacheBreaks.Reasons[b.Reason+" at "+b.Layer]++
			if b.Detail != "" {
				fig.CacheBreaks.Details[b.Detail]++
			}
		}
		if log != nil && (i+1)%50 == 0 {
			fmt.Fprintf(log, "bench cache: %s: %d/%d turns\n", label, i+1, spec.turns)
		}
	}
	calls := m.calls
	fig.Requests = len(calls)
	for i, c := range calls {
		fig.PromptTokens += c.usage.InputTokens
		fig.CachedTokens += c.usage.CacheReadTokens
		fig.CacheWriteTokens += c.usage.CacheWriteTokens
		fig.CeilingTokens += idealCeiling(spec.style, calls, i, spec.lifetime)
		if i > 0 && c.at.Sub(calls[i-1].at) > spec.lifetime {
			fig.AfterPause++
		}
	}
	fig.Efficiency, fig.CachedShare = ratio(fig.CachedTokens, fig.CeilingTokens), ratio(fig.CachedTokens, fig.PromptTokens)
	fig.ProviderCompactions = int(model.Stats().Compactions)
	return fig, name, nil
}

// cacheProjectRules is the caller's system message of the benchmark session: project rules
// of about 6 KB, the size real coding agents' instructions run to, so the system prompt weighs
// what it does in practice.
var cacheProjectRules = func() string {
	var b strings.Builder
	b.WriteString("# Project rules\n\n")
	for i := range 48 {
		fmt.Fprintf(&b, "%d. In package pkg/mod%d keep functions short, wrap errors with context, test every branch with a table, and never log secrets or tokens.\n", i+1, i%17)
	}
	return b.String()
}()

// cacheScript is turn i's user message. Four of five turns call tools through provider/fake's
// CALL directives; the fifth asks a plain question.
func cacheScript(i int) string {
	mod := i % 17
	switch i % 5 {
	case 0:
		return fmt.Sprintf("CALL read_file {\"path\":\"pkg/mod%d/file%d.go\"}\nCALL search_files {\"pattern\":\"func Handle%d\"}", mod, i, i)
	case 1:
		return fmt.Sprintf("CALL terminal {\"command\":\"go test ./pkg/mod%d/...\"}", mod)
	case 2:
		return fmt.Sprintf("CALL read_file {\"path\":\"pkg/mod%d/file%d_test.go\"}", mod, i)
	case 3:
		return fmt.Sprintf("CALL search_files {\"pattern\":\"TODO(%d)\"}\nCALL read_file {\"path\":\"docs/notes%d.md\"}\nCALL terminal {\"command\":\"git diff --stat\"}", i, i)
	}
	return fmt.Sprintf("Turn %d: summarize where we are with module %d and what is left to do.", i, mod)
}

// benchTools are deterministic stand-ins for the built-in tools: the same call always returns
// the same text, sized like real output. With mcpVersion > 0 an MCP server "docs" adds its
// tools (mcp__docs__..., sorted with the rest as the registry does), and each version changes
// its list: a tool added on odd versions, a schema changed on even ones.
type benchTools struct {
	mcpVersion int
}

var benchToolNames = []string{"read_file", "search_files", "terminal"}

func (t *benchTools) Definitions() []provider.Tool {
	out := make([]provider.Tool, 0, len(benchToolNames)+3)
	if v := t.mcpVersion; v > 0 {
		out = append(out, provider.Tool{Name: "mcp__docs__fetch", Description: fmt.Sprintf("Fetch a page of the docs (index v%d).", v/2+1),
			Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)})
		for k := 1; k <= (v+1)/2; k++ {
			out = append(out, provider.Tool{Name: fmt.Sprintf("mcp__docs__search_%d", k), Description: "Search docs section " + strconv.Itoa(k) + ".",
				Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)})
		}
	}
	for _, n := range benchToolNames {
		out = append(out, provider.Tool{Name: n, Description: "Benchmark stand-in for " + n + ".",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"pattern":{"type":"string"},"command":{"type":"string"}},"additionalProperties":false}`)})
	}
	return out
}

func (*benchTools) Call(_ context.Context, _ string, c store.ToolCall) (string, bool) {
	var args map[string]string
	_ = json.Unmarshal([]byte(c.Function.Arguments), &args)
	key := args["path"] + args["pattern"] + args["command"]
	h := 0
	for _, r := range key {
		h = h*31 + int(r)
	}
	if h < 0 {
		h = -h
	}
	var b strings.Builder
	switch c.Function.Name {
	case "read_file":
		n := 20 + h%60
		for l := 1; l <= n; l++ {
			fmt.Fprintf(&b, "%4d\tfunc step%d_%d(ctx context.Context) error { return run(ctx, %q) }\n", l, h%1000, l, key)
		}
	case "search_files":
		n := 4 + h%12
		for l := 1; l <= n; l++ {
			fmt.Fprintf(&b, "pkg/mod%d/file%d.go:%d: %s\n", (h+l)%17, l, 10*l+h%9, key)
		}
	case "terminal":
		n := 5 + h%15
		for l := 1; l <= n; l++ {
			fmt.Fprintf(&b, "ok  \tgithub.com/example/project/pkg/mod%d\t0.%03ds\n", (h+l)%17, (h*l)%1000)
		}
	default:
		return "Error: unknown tool " + c.Function.Name, true
	}
	return b.String(), false
}

// WriteCacheText prints the report for people.
func WriteCacheText(w io.Writer, r *CacheReport) {
	fmt.Fprintf(w, "prompt-cache benchmark: %s\n", r.Workload)
	line := func(name string, c *CacheRun) {
		if c == nil {
			return
		}
		fmt.Fprintf(w, "  %-7s %d of %d prompt tokens cached (%.1f%%), ideal ceiling %d: efficiency %.3f%%; %d calls, %d compactions, %d after a long pause, %d cache breaks %v, $%.2f\n",
			name, c.CachedTokens, c.PromptTokens, 100*c.CachedShare, c.CeilingTokens, 100*c.Efficiency, c.Requests, c.Compactions, c.AfterPause, c.CacheBreaks.Count, c.CacheBreaks.Reasons, c.CostUSD)
		if c.ProviderCompactions > 0 {
			fmt.Fprintf(w, "          %d compactions written by the provider (POST /responses/compact)\n", c.ProviderCompactions)
		}
		for _, d := range slices.Sorted(maps.Keys(c.CacheBreaks.Details)) {
			fmt.Fprintf(w, "          %d× %s\n", c.CacheBreaks.Details[d], d)
		}
	}
	for _, sc := range CacheScenarios {
		provs, ok := r.Scenarios[sc]
		if !ok {
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(provs)) {
			p := provs[n]
			fmt.Fprintf(w, "\n%s, %s (%s, cache_ttl %s)\n", sc, n, p.Model, p.CacheTTL)
			line(agentSpool, &p.Spool)
			line(agentNaive, p.Naive)
			line(agentRebuild, p.Rebuild)
			line(agentNoReplay, p.NoReplay)
			if p.Control {
				fmt.Fprintln(w, "  (control: \"spool\" above is an agent that renders the time into its prompt every turn)")
			}
		}
	}
	if len(r.TargetsMissed) > 0 {
		fmt.Fprintf(w, "\ntargets missed: %s\n", strings.Join(r.TargetsMissed, "; "))
	}
	fmt.Fprintf(w, "\n%.1fs\n", r.Elapsed)
}
