package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
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
	// Providers to run, in order ("openai", "anthropic"); nil: both.
	Providers []string
	Log       io.Writer // progress lines; nil: none
}

// CacheReport is `spool bench cache`'s JSON.
type CacheReport struct {
	Benchmark string                          `json:"benchmark"`
	Turns     int                             `json:"turns"`
	Workload  string                          `json:"workload"`
	Rules     map[string]string               `json:"theoretical_max_rules"`
	Providers map[string]*CacheProviderReport `json:"providers"`
	Elapsed   float64                         `json:"elapsed_seconds"`
}

// CacheProviderReport is one provider cache model's figures: spool's agent and, side by side on
// the same script, a naive agent that renders the current time into its system prompt each turn.
type CacheProviderReport struct {
	Turns    int    `json:"turns"`
	Requests int    `json:"requests"`
	Model    string `json:"model"`
	// PromptTokens counts every prompt token of the agent's model calls, cached ones included.
	PromptTokens               int64   `json:"prompt_tokens"`
	CachedTokens               int64   `json:"cached_tokens"`
	CacheWriteTokens           int64   `json:"cache_write_tokens"`
	TheoreticalMaxCachedTokens int64   `json:"theoretical_max_cached_tokens"`
	Efficiency                 float64 `json:"efficiency"`
	CachedShare                float64 `json:"cached_share"`
	Compactions                int     `json:"compactions"`
	CacheBreaks                Breaks  `json:"cache_breaks"`

	NaivePromptTokens               int64   `json:"naive_prompt_tokens"`
	NaiveCachedTokens               int64   `json:"naive_cached_tokens"`
	NaiveTheoreticalMaxCachedTokens int64   `json:"naive_theoretical_max_cached_tokens"`
	NaiveEfficiency                 float64 `json:"naive_efficiency"`
	NaiveCachedShare                float64 `json:"naive_cached_share"`
	NaiveCacheBreaks                Breaks  `json:"naive_cache_breaks"`
	// CostUSD and NaiveCostUSD price both runs with provider.EstimateCost.
	CostUSD      float64 `json:"cost_usd"`
	NaiveCostUSD float64 `json:"naive_cost_usd"`
}

// Breaks counts the cache breaks spool's forensics recorded, by reason.
type Breaks struct {
	Count   int            `json:"count"`
	Reasons map[string]int `json:"reasons"`
}

// cacheRules documents the theoretical maximum exactly as theoreticalMax computes it.
var cacheRules = map[string]string{
	"openai": "call 1: 0. Any later call: the previous call's prompt_tokens rounded down to whole 128-token " +
		"blocks (OpenAI caches blocks of 128 tokens), 0 below 1024 tokens. Right after a compaction: only the " +
		"prefix the compaction left byte-identical (tools, the system prompt if unchanged, identical leading " +
		"messages), counted by the fake's tokenizer and rounded down the same way.",
	"anthropic": "call 1: 0. Any later call: the previous call's whole prompt (its last cache_control " +
		"breakpoint ends it), 0 below 1024 tokens. Right after a compaction: the longest prefix ending at one of " +
		"the previous call's breakpoints (system prompt, last three messages) that the compaction left " +
		"byte-identical.",
	"naive": "the naive run's maximum is computed by the same rules on the requests as the agent built them, " +
		"before the naive rewrite adds the time to the system prompt: what it could have had.",
}

// RunCache runs the scripted tool-heavy session through spool's agent against provider/fake
// served over real HTTP by an httptest server, through the real provider/openai and
// provider/anthropic adapters, once as spool sends it and once through a naive rewrite that puts
// the current time into the system prompt every turn. Each run has its own fake (cold cache),
// its own SQLite store, and compaction enabled with a small window so the session compacts
// several times. It returns the report; efficiency is cached ÷ theoretical maximum, summed over
// the agent's model calls (summary calls are not counted).
func RunCache(ctx context.Context, cfg CacheConfig) (*CacheReport, error) {
	if cfg.Turns <= 0 {
		cfg.Turns = 300
	}
	if len(cfg.Providers) == 0 {
		cfg.Providers = []string{"openai", "anthropic"}
	}
	scratch, err := scratchDir(cfg.Dir, "spool-bench-cache-")
	if err != nil {
		return nil, fmt.Errorf("bench cache: %w", err)
	}
	defer os.RemoveAll(scratch)
	start := time.Now()
	rep := &CacheReport{
		Benchmark: "cache", Turns: cfg.Turns, Rules: cacheRules, Providers: map[string]*CacheProviderReport{},
		Workload: fmt.Sprintf("%d scripted turns: 4 of 5 call tools (1-3 calls: read_file, search_files, terminal; "+
			"results of 0.3-3 KB), 1 of 5 is a plain question; 32,000-token window, compaction trigger 24,000 tokens", cfg.Turns),
	}
	for _, style := range cfg.Providers {
		if style != "openai" && style != "anthropic" {
			return nil, fmt.Errorf("bench cache: unknown provider cache model %q (want openai or anthropic)", style)
		}
		pr := &CacheProviderReport{Turns: cfg.Turns}
		for _, naive := range []bool{false, true} {
			r, err := runCacheSession(ctx, style, naive, cfg.Turns, filepath.Join(scratch, fmt.Sprintf("%s-%v.db", style, naive)), cfg.Log)
			if err != nil {
				return nil, err
			}
			if naive {
				pr.NaivePromptTokens, pr.NaiveCachedTokens, pr.NaiveTheoreticalMaxCachedTokens = r.prompt, r.cached, r.max
				pr.NaiveEfficiency, pr.NaiveCachedShare = ratio(r.cached, r.max), ratio(r.cached, r.prompt)
				pr.NaiveCacheBreaks, pr.NaiveCostUSD = r.breaks, r.cost
				continue
			}
			pr.Model, pr.Requests = r.model, r.requests
			pr.PromptTokens, pr.CachedTokens, pr.CacheWriteTokens, pr.TheoreticalMaxCachedTokens = r.prompt, r.cached, r.written, r.max
			pr.Efficiency, pr.CachedShare = ratio(r.cached, r.max), ratio(r.cached, r.prompt)
			pr.Compactions, pr.CacheBreaks, pr.CostUSD = r.compactions, r.breaks, r.cost
		}
		rep.Providers[style] = pr
	}
	rep.Elapsed = time.Since(start).Seconds()
	return rep, nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(int64(float64(a)/float64(b)*1e6)) / 1e6
}

type sessionFigures struct {
	model                        string
	requests, compactions        int
	prompt, cached, written, max int64
	cost                         float64
	breaks                       Breaks
}

func runCacheSession(ctx context.Context, style string, naive bool, turns int, dbPath string, log io.Writer) (sessionFigures, error) {
	fig := sessionFigures{breaks: Breaks{Reasons: map[string]int{}}}
	model := fake.New(fake.Config{})
	srv := httptest.NewServer(model.Handler())
	defer srv.Close()
	var raw provider.Client
	var err error
	switch style {
	case "openai":
		fig.model = "gpt-4o"
		raw, err = openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "bench"})
	default:
		fig.model = "claude-sonnet-4-5"
		raw, err = anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "bench"})
	}
	if err != nil {
		return fig, err
	}
	db, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return fig, fmt.Errorf("bench cache: %w", err)
	}
	defer db.Close()
	m := &meter{next: raw, naive: naive}
	cc := compress.DefaultConfig()
	cc.ThresholdTokens = 24_000
	comp := compress.New(cc, compress.ClientSummarizer{Client: raw})
	ag, err := agent.New(agent.Deps{
		Store: db, Client: m, Tools: benchTools{}, Compressor: markingEngine{Engine: comp, m: m},
		Config: agent.Config{Model: fig.model, ContextLength: 32_000, Compression: cc,
			Prompt: prompt.Env{Platform: "cli"}, Source: "bench"},
	})
	if err != nil {
		return fig, err
	}
	sid := ""
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i := range turns {
		m.setTurn(base.Add(time.Duration(i) * 73 * time.Second))
		opts := agent.RunOptions{}
		if log != nil {
			opts.OnNotice = func(s string) { fmt.Fprintf(log, "bench cache: %s turn %d: %s\n", style, i, s) }
		}
		res, err := ag.Run(ctx, sid, cacheScript(i), opts)
		if err != nil {
			return fig, fmt.Errorf("bench cache (%s, naive %v): turn %d: %w", style, naive, i, err)
		}
		sid = res.SessionID
		fig.compactions += res.Compactions
		fig.cost += res.Usage.CostUSD
		for _, b := range res.Breaks {
			fig.breaks.Count++
			fig.breaks.Reasons[b.Reason+" at "+b.Layer]++
		}
		if log != nil && (i+1)%50 == 0 {
			fmt.Fprintf(log, "bench cache: %s%s: %d/%d turns\n", style, map[bool]string{true: " naive"}[naive], i+1, turns)
		}
	}
	calls := m.calls
	fig.requests = len(calls)
	for i, c := range calls {
		fig.prompt += c.usage.InputTokens
		fig.cached += c.usage.CacheReadTokens
		fig.written += c.usage.CacheWriteTokens
		fig.max += theoreticalMax(style, calls, i)
	}
	return fig, nil
}

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
// the same text, sized like real output.
type benchTools struct{}

var benchToolNames = []string{"read_file", "search_files", "terminal"}

func (benchTools) Definitions() []provider.Tool {
	out := make([]provider.Tool, 0, len(benchToolNames))
	for _, n := range benchToolNames {
		out = append(out, provider.Tool{Name: n, Description: "Benchmark stand-in for " + n + ".",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"pattern":{"type":"string"},"command":{"type":"string"}},"additionalProperties":false}`)})
	}
	return out
}

func (benchTools) Call(_ context.Context, _ string, c store.ToolCall) (string, bool) {
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
	fmt.Fprintf(w, "prompt-cache benchmark: %s\n\n", r.Workload)
	names := make([]string, 0, len(r.Providers))
	for n := range r.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := r.Providers[n]
		fmt.Fprintf(w, "%s (%s, %d calls, %d compactions)\n", n, p.Model, p.Requests, p.Compactions)
		fmt.Fprintf(w, "  spool: %d of %d prompt tokens cached (%.1f%%), theoretical max %d: efficiency %.3f%%, %d cache breaks %v\n",
			p.CachedTokens, p.PromptTokens, 100*p.CachedShare, p.TheoreticalMaxCachedTokens, 100*p.Efficiency, p.CacheBreaks.Count, p.CacheBreaks.Reasons)
		fmt.Fprintf(w, "  naive: %d of %d prompt tokens cached (%.1f%%), theoretical max %d: efficiency %.3f%%\n",
			p.NaiveCachedTokens, p.NaivePromptTokens, 100*p.NaiveCachedShare, p.NaiveTheoreticalMaxCachedTokens, 100*p.NaiveEfficiency)
		fmt.Fprintf(w, "  estimated cost: spool $%.2f, naive $%.2f\n", p.CostUSD, p.NaiveCostUSD)
	}
	fmt.Fprintf(w, "\n%.1fs\n", r.Elapsed)
}
