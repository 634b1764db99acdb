package compress

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Model describes the main model a session talks to.
type Model struct {
	Name     string
	Provider string
	// ContextLength is the model's window in tokens.
	ContextLength int
	// MaxTokens is the output reservation; it counts only when positive.
	MaxTokens int
}

// Step is one rule of threshold resolution with the value it produced, so a user can see why a
// session compacts when it does.
type Step struct {
	Rule   string
	Value  string
	Detail string
}

// Resolution is the resolved trigger for one model, with the steps that produced it.
type Resolution struct {
	Model           Model
	Percent         float64
	EffectiveWindow int
	// Tokens is the trigger: compaction fires when the prompt reaches it.
	Tokens int
	// TailMode, TailBudget and TailSoftCeiling size the verbatim tail.
	TailMode        string
	TailBudget      int
	TailSoftCeiling int
	// MaxSummaryTokens is the summary's ceiling (5% of the window, at most 10,000).
	MaxSummaryTokens int
	Steps            []Step
	// Notices are one-time user notices (an automatic raise).
	Notices []string
}

func (r *Resolution) step(rule, value, detail string, args ...any) {
	r.Steps = append(r.Steps, Step{Rule: rule, Value: value, Detail: fmt.Sprintf(detail, args...)})
}

// String renders the resolution as an aligned table for `spool config explain`.
func (r Resolution) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "compaction trigger for %s", r.Model.Name)
	if r.Model.Provider != "" {
		fmt.Fprintf(&b, " (%s)", r.Model.Provider)
	}
	fmt.Fprintf(&b, ": %d tokens\n", r.Tokens)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for i, s := range r.Steps {
		fmt.Fprintf(tw, "%d.\t%s\t%s\t%s\n", i+1, s.Rule, s.Value, s.Detail)
	}
	tw.Flush()
	for _, n := range r.Notices {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

func pct(f float64) string { return fmt.Sprintf("%.2f", f) }

// Resolve computes the compaction trigger for m under cfg, as Hermes Agent does:
// base percent, longest-substring model override, built-in model overrides, the raise-only
// small-window floor, the token conversion against the effective window with the 64,000 minimum,
// and the absolute cap.
func Resolve(cfg Config, m Model) (Resolution, error) {
	if m.ContextLength <= 0 {
		return Resolution{}, fmt.Errorf("resolve compaction threshold: context length of model %q is unknown (%d); set the model's context_length", m.Name, m.ContextLength)
	}
	r := Resolution{Model: m}

	percent := cfg.Threshold
	if percent <= 0 {
		percent = DefaultThreshold
	}
	r.step("base threshold", pct(percent), "compression.threshold")

	matched := false
	if key, v, ok := matchModelThreshold(cfg.ModelThresholds, m); ok {
		percent = v
		matched = true
		r.step("model override", pct(percent), "compression.model_thresholds[%q] (longest match)", key)
	} else {
		r.step("model override", "-", "no compression.model_thresholds key matches")
	}

	name := strings.ToLower(m.Name)
	provider := strings.ToLower(m.Provider)
	switch {
	case strings.Contains(name, "trinity") && strings.Contains(name, "thinking") && !matched:
		percent = 0.75
		r.step("built-in override", pct(percent), "Arcee trinity thinking models")
	case provider == "openai-codex" && strings.Contains(name, "codex-spark") && !matched:
		percent = 0.70
		r.step("built-in override", pct(percent), "gpt-5.3-codex-spark on the Codex route")
	case provider == "openai-codex" && cfg.CodexAutoraise && codexAutoraised(name):
		if percent < 0.85 {
			r.Notices = append(r.Notices, fmt.Sprintf("compaction threshold raised from %s to 0.85 for %s (compression.codex_gpt55_autoraise)", pct(percent), m.Name))
			percent = 0.85
			r.step("built-in override", pct(percent), "Codex route gpt-5.4/5.5/5.6: raise-only (codex_gpt55_autoraise)")
		} else {
			r.step("built-in override", pct(percent), "Codex raise not needed: configured value is higher")
		}
	default:
		r.step("built-in override", "-", "none for this model")
	}

	if m.ContextLength < SmallWindowLimit {
		if percent < SmallWindowFloor {
			percent = SmallWindowFloor
			r.step("small-window floor", pct(percent), "window %d < %d: raised to %.2f", m.ContextLength, SmallWindowLimit, SmallWindowFloor)
		} else {
			r.step("small-window floor", pct(percent), "window %d < %d, configured value already ≥ %.2f", m.ContextLength, SmallWindowLimit, SmallWindowFloor)
		}
	} else {
		r.step("small-window floor", "-", "window %d ≥ %d: not applied", m.ContextLength, SmallWindowLimit)
	}
	r.Percent = percent

	eff := m.ContextLength
	if m.MaxTokens > 0 && m.ContextLength-m.MaxTokens > 0 {
		eff = m.ContextLength - m.MaxTokens
		r.step("effective window", fmt.Sprint(eff), "context %d − output reservation %d", m.ContextLength, m.MaxTokens)
	} else {
		r.step("effective window", fmt.Sprint(eff), "context %d (no usable output reservation)", m.ContextLength)
	}
	r.EffectiveWindow = eff

	pctValue := int(float64(eff) * percent)
	floored := max(pctValue, MinimumContextLength)
	if floored >= eff {
		r.Tokens = max(1, min(int(float64(eff)*0.85), eff-1))
		r.step("threshold", fmt.Sprint(r.Tokens), "%d × %.2f = %d, floored to %d ≥ window: degenerate window, 85%% of %d", eff, percent, pctValue, floored, eff)
	} else {
		r.Tokens = floored
		if floored != pctValue {
			r.step("threshold", fmt.Sprint(r.Tokens), "%d × %.2f = %d, raised to the %d minimum", eff, percent, pctValue, MinimumContextLength)
		} else {
			r.step("threshold", fmt.Sprint(r.Tokens), "%d × %.2f", eff, percent)
		}
	}

	if cfg.ThresholdTokens > 0 {
		capTokens := min(cfg.ThresholdTokens, m.ContextLength)
		if capTokens < r.Tokens {
			r.Tokens = capTokens
			r.step("absolute cap", fmt.Sprint(r.Tokens), "compression.threshold_tokens %d applied", cfg.ThresholdTokens)
		} else {
			r.step("absolute cap", fmt.Sprint(r.Tokens), "compression.threshold_tokens %d not reached", cfg.ThresholdTokens)
		}
	} else {
		r.step("absolute cap", fmt.Sprint(r.Tokens), "compression.threshold_tokens 0: ratio only")
	}

	r.TailMode = cfg.tailMode()
	if r.TailMode == TailLegacy {
		r.TailBudget = int(float64(r.Tokens) * cfg.targetRatio())
		r.TailSoftCeiling = int(float64(r.TailBudget) * 1.5)
		r.step("tail budget", fmt.Sprint(r.TailBudget), "legacy: threshold %d × target_ratio %.2f (soft ceiling %d)", r.Tokens, cfg.targetRatio(), r.TailSoftCeiling)
	} else {
		w := m.ContextLength
		fifth := int(float64(w) * 0.20)
		b := min(max(int(float64(w)*0.025), 10_000), 25_000)
		r.TailBudget = min(b, fifth)
		r.TailSoftCeiling = min(int(float64(r.TailBudget)*1.5), fifth)
		r.step("tail budget", fmt.Sprint(r.TailBudget), "lean: 2.5%% of %d clamped to [10000, 25000], ≤ 20%% of the window (soft ceiling %d)", w, r.TailSoftCeiling)
	}
	r.MaxSummaryTokens = min(int(float64(m.ContextLength)*0.05), 10_000)
	return r, nil
}

func codexAutoraised(name string) bool {
	if strings.Contains(name, "codex-spark") {
		return false
	}
	for _, v := range []string{"gpt-5.4", "gpt-5.5", "gpt-5.6", "astra"} {
		if strings.Contains(name, v) {
			return true
		}
	}
	return false
}

// matchModelThreshold finds the longest key that is a substring of the model name. A key
// "provider:substr" matches only that provider and beats a bare key with the same substring.
func matchModelThreshold(th map[string]float64, m Model) (key string, value float64, ok bool) {
	name := strings.ToLower(m.Name)
	provider := strings.ToLower(m.Provider)
	bestLen, bestScoped := -1, false
	for k, v := range th {
		sub, scoped := strings.ToLower(k), false
		if p, s, found := strings.Cut(sub, ":"); found && p != "" && !strings.Contains(name, sub) {
			if p != provider {
				continue
			}
			sub, scoped = s, true
		}
		if sub == "" || !strings.Contains(name, sub) {
			continue
		}
		l := len(sub)
		better := l > bestLen || (l == bestLen && scoped && !bestScoped) ||
			(l == bestLen && scoped == bestScoped && k < key) // deterministic among equals
		if better {
			key, value, ok, bestLen, bestScoped = k, v, true, l, scoped
		}
	}
	return key, value, ok
}
