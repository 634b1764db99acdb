package cli

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/provider"
)

func (a *app) configCommand() *cobra.Command {
	cmd := groupCommand("config", "Inspect the configuration")
	cmd.AddCommand(a.configExplainCommand())
	return cmd
}

// explained is the JSON of `spool config explain`.
type explained struct {
	ConfigFile       string          `json:"config_file"`
	Model            string          `json:"model"`
	Provider         string          `json:"provider"`
	ContextLength    int             `json:"context_length"`
	ContextSource    string          `json:"context_source"`
	Enabled          bool            `json:"compression_enabled"`
	Percent          float64         `json:"threshold"`
	EffectiveWindow  int             `json:"effective_window"`
	TriggerTokens    int             `json:"trigger_tokens"`
	TailMode         string          `json:"tail_mode"`
	TailBudget       int             `json:"tail_budget_tokens"`
	TailSoftCeiling  int             `json:"tail_soft_ceiling_tokens"`
	MaxSummaryTokens int             `json:"max_summary_tokens"`
	Steps            []explainedStep `json:"steps"`
	Notices          []string        `json:"notices"`
	// Fallbacks are provider.fallbacks in the order a failing turn tries them, each with the
	// window and trigger its own requests are prepared for.
	Fallbacks        []explainedFallback `json:"fallbacks"`
	FallbackCooldown string              `json:"fallback_cooldown,omitempty"`
	// RecallDetail is session_search's detail when the model names none (recall.detail).
	RecallDetail string `json:"recall_detail"`
	// Engine is the compaction engine that will run: "local" or "provider" (compression.engine,
	// provider only on the Responses API).
	Engine string `json:"engine"`
}

type explainedFallback struct {
	Name          string `json:"name"`
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	BaseURL       string `json:"base_url,omitempty"`
	API           string `json:"api,omitempty"`
	ContextLength int    `json:"context_length"`
	ContextSource string `json:"context_source"`
	TriggerTokens int    `json:"trigger_tokens"`
}

type explainedStep struct {
	Rule   string `json:"rule"`
	Value  string `json:"value"`
	Detail string `json:"detail"`
}

func (a *app) configExplainCommand() *cobra.Command {
	var (
		model   string
		context int
	)
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Show when a session compacts, and why",
		Long: "Resolve the compaction trigger for a model from the compression settings and print each\n" +
			"step: base threshold, model override (longest substring of compression.model_thresholds),\n" +
			"built-in overrides, the small-window floor, the effective window, the absolute cap\n" +
			"(compression.threshold_tokens), the final trigger in tokens and the tail budget.\n\n" +
			"The model is --model, else provider.model. Its context window is --context, else the\n" +
			"built-in table of known models.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("context") && context <= 0 {
				return &usageError{fmt.Errorf("--context must be a positive number of tokens, not %d", context)}
			}
			name := strings.TrimSpace(model)
			if name == "" {
				name = cfg.Provider.Model
			}
			if name == "" {
				return &usageError{fmt.Errorf("no model to explain: pass --model or set provider.model")}
			}
			window, source := context, "--context"
			if window == 0 && cfg.Provider.ContextLength > 0 && name == cfg.Provider.Model {
				window, source = cfg.Provider.ContextLength, "provider.context_length"
			}
			if window == 0 {
				known, ok := provider.LookupContextWindow(name)
				if !ok {
					return &usageError{fmt.Errorf("context window of model %q is not known: pass --context N (tokens)", name)}
				}
				window, source = known, "built-in table of known models"
			}
			ccfg := compress.FromConfig(cfg)
			m := compress.Model{Name: name, Provider: cfg.Provider.Name, ContextLength: window}
			res, err := compress.Resolve(ccfg, m)
			if err != nil {
				return err
			}
			var fbs []explainedFallback
			for i, fb := range cfg.Provider.Fallbacks {
				p := fb.ProviderFor(cfg.Provider)
				src := fmt.Sprintf("provider.fallbacks[%d].context_length", i)
				if p.ContextLength == 0 {
					src = "built-in table of known models"
					if _, ok := provider.LookupContextWindow(p.Model); !ok {
						src = "default (model not in the table)"
					}
				}
				w := fallbackWindow(p)
				fres, err := compress.Resolve(ccfg, compress.Model{Name: p.Model, Provider: p.Name, ContextLength: w})
				if err != nil {
					return fmt.Errorf("fallback %s: %w", fb.Name, err)
				}
				api := ""
				if p.Name == "openai" {
					api = cmp.Or(p.API, "chat")
				}
				fbs = append(fbs, explainedFallback{Name: fb.Name, Provider: p.Name, Model: p.Model, BaseURL: p.BaseURL, API: api,
					ContextLength: w, ContextSource: src, TriggerTokens: fres.Tokens})
			}
			engine, engineWhy := explainEngine(cfg)
			file := cfg.File
			if a.json {
				out := explained{
					ConfigFile: file, Model: name, Provider: cfg.Provider.Name,
					ContextLength: window, ContextSource: source, Enabled: ccfg.Enabled,
					Percent: res.Percent, EffectiveWindow: res.EffectiveWindow, TriggerTokens: res.Tokens,
					TailMode: res.TailMode, TailBudget: res.TailBudget, TailSoftCeiling: res.TailSoftCeiling,
					MaxSummaryTokens: res.MaxSummaryTokens, Steps: []explainedStep{}, Notices: nonNil(res.Notices),
					Fallbacks: nonNil(fbs), RecallDetail: cfg.Recall.Detail, Engine: engine,
				}
				if len(fbs) > 0 {
					out.FallbackCooldown = cfg.Provider.FallbackCooldown.String()
				}
				for _, s := range res.Steps {
					out.Steps = append(out.Steps, explainedStep(s))
				}
				return a.printJSON(out)
			}
			if file == "" {
				file = "none (built-in defaults and SPOOL_* variables)"
			}
			fmt.Fprintf(a.stdout, "config: %s\n", file)
			fmt.Fprintf(a.stdout, "context window: %d tokens (%s)\n", window, source)
			if cfg.Provider.Name == "openai" {
				fmt.Fprintf(a.stdout, "provider api: %s (provider.api: chat | responses)\n", cmp.Or(cfg.Provider.API, "chat"))
			}
			fmt.Fprintf(a.stdout, "compaction engine: %s (compression.engine: local | provider): %s\n", engine, engineWhy)
			fmt.Fprintf(a.stdout, "session_search detail when the model names none: %s (recall.detail: adaptive | summary)\n", cfg.Recall.Detail)
			if !ccfg.Enabled {
				fmt.Fprintln(a.stdout, "note: compression.enabled is false: sessions never compact automatically (manual /compress still works)")
			}
			fmt.Fprint(a.stdout, res.String())
			if len(fbs) == 0 {
				fmt.Fprintln(a.stdout, "fallbacks: none (provider.fallbacks)")
				return nil
			}
			fmt.Fprintf(a.stdout, "fallbacks, tried in order when the model before fails with overloaded, server, rate_limit, network, timeout (after the retries), quota or model_not_found; never on auth or bad_request; new turns start on the main model again %s after it failed (provider.fallback_cooldown):\n",
				cfg.Provider.FallbackCooldown)
			for i, fb := range fbs {
				at := ""
				if fb.BaseURL != "" {
					at = " at " + fb.BaseURL
				}
				api := ""
				if fb.API != "" {
					api = ", api " + fb.API
				}
				fmt.Fprintf(a.stdout, "  %d. %s: %s %s%s%s, window %d tokens (%s), compacts at %d tokens\n",
					i+1, fb.Name, fb.Provider, fb.Model, at, api, fb.ContextLength, fb.ContextSource, fb.TriggerTokens)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "", "model to explain (default provider.model)")
	f.IntVar(&context, "context", 0, "the model's context window in tokens (default: the built-in table)")
	return cmd
}

// explainEngine is the compaction engine the main model's sessions will use, and why.
func explainEngine(cfg config.Config) (string, string) {
	if cfg.Compression.Engine != "provider" {
		return "local", "spool's own compressor writes every summary"
	}
	if cfg.Provider.Name != "openai" || cfg.Provider.API != "responses" {
		return "local", "compression.engine provider needs provider openai with provider.api responses (the Responses API compacts); spool's own compressor runs"
	}
	return "provider", "the provider compacts (POST /responses/compact) at spool's trigger; spool keeps the split, the ledger and the tail, and its own compressor takes over when the provider's compaction fails"
}
