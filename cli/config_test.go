package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type explainedJSON struct {
	ConfigFile    string  `json:"config_file"`
	RecallDetail  string  `json:"recall_detail"`
	Model         string  `json:"model"`
	Provider      string  `json:"provider"`
	ContextLength int     `json:"context_length"`
	ContextSource string  `json:"context_source"`
	Enabled       bool    `json:"compression_enabled"`
	Percent       float64 `json:"threshold"`
	Trigger       int     `json:"trigger_tokens"`
	TailMode      string  `json:"tail_mode"`
	TailBudget    int     `json:"tail_budget_tokens"`
	Steps         []struct {
		Rule, Value, Detail string
	} `json:"steps"`
}

func (e explainedJSON) step(rule string) string {
	for _, s := range e.Steps {
		if s.Rule == rule {
			return s.Value + " " + s.Detail
		}
	}
	return ""
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestConfigExplain(t *testing.T) {
	t.Parallel()
	configured := writeConfig(t, `provider:
  name: openai
  model: gpt-5-mini
compression:
  threshold_tokens: 150000
  tail_mode: legacy
  target_ratio: 0.25
  model_thresholds:
    gpt-5: 0.6
    "openai:gpt-5-mini": 0.8
recall:
  detail: summary
`)
	for _, tc := range []struct {
		name  string
		home  string
		env   []string
		args  []string
		check func(t *testing.T, e explainedJSON)
	}{
		{"defaults on a 128K model from the table", t.TempDir(), nil, []string{"--model", "gpt-4o"}, func(t *testing.T, e explainedJSON) {
			if e.RecallDetail != "adaptive" {
				t.Errorf("recall_detail %q, want the default adaptive", e.RecallDetail)
			}
			if e.ContextLength != 128_000 || e.ContextSource != "built-in table of known models" {
				t.Errorf("context %d from %q", e.ContextLength, e.ContextSource)
			}
			if e.Percent != 0.75 || e.Trigger != 96_000 || e.TailMode != "lean" || e.TailBudget != 10_000 {
				t.Errorf("percent %v trigger %d tail %s %d; want the 0.75 floor, 96000, lean 10000", e.Percent, e.Trigger, e.TailMode, e.TailBudget)
			}
			if !strings.HasPrefix(e.step("small-window floor"), "0.75 ") {
				t.Errorf("floor step %q", e.step("small-window floor"))
			}
		}},
		{"--context wins over the table", t.TempDir(), nil, []string{"--model", "gpt-4o", "--context", "1000000"}, func(t *testing.T, e explainedJSON) {
			// 1M window: no floor, 50% = 500000, capped at the default 256000.
			if e.ContextLength != 1_000_000 || e.ContextSource != "--context" || e.Trigger != 256_000 {
				t.Errorf("context %d (%s), trigger %d; want 1000000, 256000", e.ContextLength, e.ContextSource, e.Trigger)
			}
			if !strings.Contains(e.step("absolute cap"), "applied") {
				t.Errorf("cap step %q does not say the cap applied", e.step("absolute cap"))
			}
		}},
		{"config file: provider model, longest override, cap, legacy tail", configured, nil, nil, func(t *testing.T, e explainedJSON) {
			if e.Model != "gpt-5-mini" || e.Provider != "openai" || e.ContextLength != 400_000 {
				t.Errorf("model %s/%s window %d", e.Provider, e.Model, e.ContextLength)
			}
			if !strings.Contains(e.step("model override"), `"openai:gpt-5-mini"`) {
				t.Errorf("override step %q, want the longer provider-scoped key", e.step("model override"))
			}
			// 400000 × 0.80 = 320000, capped at 150000; legacy tail 150000 × 0.25.
			if e.Percent != 0.8 || e.Trigger != 150_000 || e.TailMode != "legacy" || e.TailBudget != 37_500 {
				t.Errorf("percent %v trigger %d tail %s %d", e.Percent, e.Trigger, e.TailMode, e.TailBudget)
			}
			if e.RecallDetail != "summary" {
				t.Errorf("recall_detail %q, want the file's summary", e.RecallDetail)
			}
			if !strings.HasSuffix(e.ConfigFile, "config.yaml") {
				t.Errorf("config_file %q", e.ConfigFile)
			}
		}},
		{"environment overrides the file", configured, []string{"SPOOL_COMPRESSION_THRESHOLD_TOKENS=70000"}, []string{"--model", "claude-sonnet-4-5"}, func(t *testing.T, e explainedJSON) {
			if e.ContextLength != 200_000 || e.Trigger != 70_000 {
				t.Errorf("window %d trigger %d; want 200000, 70000", e.ContextLength, e.Trigger)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"config", "explain", "--json"}, tc.args...)
			e := decode[explainedJSON](t, spoolEnv(t, tc.home, "", tc.env, args...).ok(t, "config explain"))
			if len(e.Steps) < 8 {
				t.Errorf("%d steps, want every rule: %+v", len(e.Steps), e.Steps)
			}
			tc.check(t, e)
		})
	}

	t.Run("text output names every step", func(t *testing.T) {
		t.Parallel()
		out := spool(t, configured, "config", "explain").ok(t, "config explain").stdout
		for _, want := range []string{"config: ", "context window: 400000 tokens (built-in table", "compaction trigger for gpt-5-mini (openai): 150000 tokens",
			"session_search detail when the model names none: summary (recall.detail", "base threshold", "model override", "small-window floor", "effective window", "absolute cap", "tail budget"} {
			if !strings.Contains(out, want) {
				t.Errorf("text output lacks %q:\n%s", want, out)
			}
		}
	})
}

func TestConfigExplainBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		home string
		args []string
		code int
		want string
	}{
		{"unknown model", t.TempDir(), []string{"--model", "llama3.1:8b"}, 2, `spool: context window of model "llama3.1:8b" is not known: pass --context N (tokens)`},
		{"no model at all", t.TempDir(), nil, 2, "spool: no model to explain: pass --model or set provider.model"},
		{"zero context", t.TempDir(), []string{"--model", "gpt-4o", "--context", "0"}, 2, "spool: --context must be a positive number of tokens, not 0"},
		{"negative context", t.TempDir(), []string{"--model", "gpt-4o", "--context", "-5"}, 2, "spool: --context must be a positive number of tokens, not -5"},
		{"text context", t.TempDir(), []string{"--model", "gpt-4o", "--context", "lots"}, 2, `spool: invalid argument "lots" for "--context" flag`},
		{"extra argument", t.TempDir(), []string{"gpt-4o"}, 2, "spool: unknown command"},
		{"bad config file", writeConfig(t, "compression:\n  tail_mode: fat\n"), []string{"--model", "gpt-4o"}, 1, "spool: config: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := spool(t, tc.home, append([]string{"config", "explain"}, tc.args...)...)
			first, _, _ := strings.Cut(r.stderr, "\n")
			if r.code != tc.code || !strings.HasPrefix(first, tc.want) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, first stderr line %q; want exit %d and %q", r.code, r.stdout, first, tc.code, tc.want)
			}
			if _, err := os.Stat(filepath.Join(tc.home, "spool.db")); !os.IsNotExist(err) {
				t.Error("config explain created a database")
			}
		})
	}
}

func TestBenchRetentionScaledDown(t *testing.T) {
	t.Parallel()
	r := spool(t, t.TempDir(), "bench", "retention", "--json", "--quiet", "--dir", t.TempDir(), "--turns", "40",
		"--windows", "8k", "--engines", "fake,control-tail-only")
	// The verdict is the benchmark's: 0 when every target is met, 1 (with the report printed)
	// when one is missed. Anything else is a broken run.
	if r.code != 0 && (r.code != 1 || !strings.Contains(r.stderr, "benchmark verification failed")) {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var rep struct {
		VerifyOK bool `json:"verify_ok"`
		Windows  []struct {
			ContextLength int                       `json:"context_length"`
			Engines       map[string]map[string]any `json:"engines"`
		} `json:"windows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, r.stdout)
	}
	if rep.VerifyOK != (r.code == 0) || len(rep.Windows) != 1 || rep.Windows[0].ContextLength != 8192 {
		t.Fatalf("exit %d, verify_ok %v, windows %+v", r.code, rep.VerifyOK, rep.Windows)
	}
	for _, e := range []string{"fake", "control-tail-only"} {
		m, ok := rep.Windows[0].Engines[e]
		if !ok {
			t.Fatalf("report lacks engine %s: %s", e, r.stdout)
		}
		for _, k := range []string{"turns_failed", "present_pct", "recoverable_pct", "facts_lost", "user_asks_lost",
			"orphan_tool_pairs", "active_tokens_after_compaction_max", "target_tokens", "compactions_over_target"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: no %q in the report", e, k)
			}
		}
	}
	for _, tc := range []struct{ args, want string }{
		{"--turns 5", "spool: --turns must be at least 20, not 5 (see spool bench retention --help)\n"},
		{"--windows 3x", "spool: --windows: \"3x\" is not a window size between 1k and 16m tokens (see spool bench retention --help)\n"},
		{"--engines magic", "spool: --engines: unknown engine \"magic\""},
		{"--seed -3", "spool: invalid argument \"-3\" for \"--seed\" flag"},
	} {
		bad := spool(t, t.TempDir(), append([]string{"bench", "retention"}, strings.Fields(tc.args)...)...)
		if bad.code != 2 || !strings.HasPrefix(bad.stderr, tc.want) || strings.Count(bad.stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q", tc.args, bad.code, bad.stderr)
		}
	}
}
