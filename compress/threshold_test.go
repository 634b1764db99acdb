package compress

import (
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	def := DefaultConfig()
	with := func(f func(*Config)) Config { c := DefaultConfig(); f(&c); return c }
	tests := []struct {
		name      string
		cfg       Config
		model     Model
		percent   float64
		tokens    int
		tail      int
		notice    bool
		stepValue map[string]string // rule -> value
	}{
		{"200K window: small-window floor raises 0.50 to 0.75", def, Model{Name: "gpt-4o", ContextLength: 200_000}, 0.75, 150_000, 10_000, false,
			map[string]string{"small-window floor": "0.75", "threshold": "150000"}},
		{"1M window: ratio 500K capped at 256K", def, Model{Name: "gemini", ContextLength: 1_000_000}, 0.50, 256_000, 25_000, false,
			map[string]string{"small-window floor": "-", "absolute cap": "256000"}},
		{"1M window, no cap", with(func(c *Config) { c.ThresholdTokens = 0 }), Model{Name: "gemini", ContextLength: 1_000_000}, 0.50, 500_000, 25_000, false, nil},
		{"floor is raise-only: explicit 0.90 wins", with(func(c *Config) { c.Threshold = 0.90 }), Model{Name: "m", ContextLength: 200_000}, 0.90, 180_000, 10_000, false, nil},
		{"output reservation shrinks the effective window", def, Model{Name: "m", ContextLength: 200_000, MaxTokens: 8_000}, 0.75, 144_000, 10_000, false,
			map[string]string{"effective window": "192000"}},
		{"reservation ≥ window is ignored", def, Model{Name: "m", ContextLength: 200_000, MaxTokens: 300_000}, 0.75, 150_000, 10_000, false,
			map[string]string{"effective window": "200000"}},
		{"minimum 64K raises a small trigger", def, Model{Name: "m", ContextLength: 70_000}, 0.75, 64_000, 10_000, false, nil},
		{"degenerate window: 85% of the window", def, Model{Name: "m", ContextLength: 32_000}, 0.75, 27_200, 6_400, false, nil},
		{"longest substring key wins", with(func(c *Config) {
			c.ThresholdTokens = 0
			c.ModelThresholds = map[string]float64{"claude": 0.6, "claude-opus": 0.9}
		}), Model{Name: "claude-opus-4", ContextLength: 1_000_000}, 0.90, 900_000, 25_000, false,
			map[string]string{"model override": "0.90"}},
		{"provider-scoped key beats the bare key with the same substring", with(func(c *Config) {
			c.ThresholdTokens = 0
			c.ModelThresholds = map[string]float64{"opus": 0.6, "anthropic:opus": 0.8}
		}), Model{Name: "claude-opus-4", Provider: "anthropic", ContextLength: 1_000_000}, 0.80, 800_000, 25_000, false, nil},
		{"provider-scoped key ignored on another provider", with(func(c *Config) {
			c.ThresholdTokens = 0
			c.ModelThresholds = map[string]float64{"opus": 0.6, "anthropic:opus": 0.8}
		}), Model{Name: "claude-opus-4", Provider: "openrouter", ContextLength: 1_000_000}, 0.60, 600_000, 25_000, false, nil},
		{"longer bare key beats shorter scoped key", with(func(c *Config) {
			c.ThresholdTokens = 0
			c.ModelThresholds = map[string]float64{"claude-opus": 0.7, "anthropic:opus": 0.8}
		}), Model{Name: "claude-opus-4", Provider: "anthropic", ContextLength: 1_000_000}, 0.70, 700_000, 25_000, false, nil},
		{"codex route raises gpt-5.5 to 0.85 with a notice", with(func(c *Config) { c.ThresholdTokens = 0 }),
			Model{Name: "gpt-5.5", Provider: "openai-codex", ContextLength: 1_000_000}, 0.85, 850_000, 25_000, true, nil},
		{"codex raise disabled", with(func(c *Config) { c.ThresholdTokens = 0; c.CodexAutoraise = false }),
			Model{Name: "gpt-5.5", Provider: "openai-codex", ContextLength: 1_000_000}, 0.50, 500_000, 25_000, false, nil},
		{"legacy tail: threshold × target ratio", with(func(c *Config) { c.TailMode = TailLegacy }), Model{Name: "m", ContextLength: 200_000}, 0.75, 150_000, 30_000, false, nil},
		{"legacy ratio clamped to 0.80", with(func(c *Config) { c.TailMode = TailLegacy; c.TargetRatio = 0.95 }), Model{Name: "m", ContextLength: 200_000}, 0.75, 150_000, 120_000, false, nil},
		{"cap bounded by the window", with(func(c *Config) { c.ThresholdTokens = 5_000_000; c.Threshold = 0.99 }), Model{Name: "m", ContextLength: 600_000}, 0.99, 594_000, 15_000, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Resolve(tt.cfg, tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if r.Percent != tt.percent || r.Tokens != tt.tokens || r.TailBudget != tt.tail {
				t.Fatalf("got percent %.2f tokens %d tail %d, want %.2f %d %d\n%s", r.Percent, r.Tokens, r.TailBudget, tt.percent, tt.tokens, tt.tail, r)
			}
			if (len(r.Notices) > 0) != tt.notice {
				t.Fatalf("notices %q, want notice=%v", r.Notices, tt.notice)
			}
			for rule, want := range tt.stepValue {
				found := false
				for _, s := range r.Steps {
					if s.Rule == rule {
						found = true
						if s.Value != want {
							t.Errorf("step %q = %q, want %q", rule, s.Value, want)
						}
					}
				}
				if !found {
					t.Errorf("no step %q in\n%s", rule, r)
				}
			}
			if !strings.Contains(r.String(), tt.model.Name) || len(r.Steps) < 7 {
				t.Fatalf("explanation incomplete:\n%s", r)
			}
		})
	}
}

func TestResolveUnknownWindow(t *testing.T) {
	t.Parallel()
	_, err := Resolve(DefaultConfig(), Model{Name: "mystery"})
	if err == nil || !strings.Contains(err.Error(), "mystery") {
		t.Fatalf("want an error naming the model, got %v", err)
	}
}

func TestResolveLeanTailCappedAt20Percent(t *testing.T) {
	t.Parallel()
	r, err := Resolve(DefaultConfig(), Model{Name: "tiny", ContextLength: 40_000})
	if err != nil {
		t.Fatal(err)
	}
	if r.TailBudget != 8_000 || r.TailSoftCeiling != 8_000 {
		t.Fatalf("tail %d soft %d, want 8000/8000 (20%% of 40K)", r.TailBudget, r.TailSoftCeiling)
	}
	if r.MaxSummaryTokens != 2_000 {
		t.Fatalf("max summary %d, want 2000", r.MaxSummaryTokens)
	}
}
