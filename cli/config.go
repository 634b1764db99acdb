package cli

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/compress"
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
			file := cfg.File
			if a.json {
				out := explained{
					ConfigFile: file, Model: name, Provider: cfg.Provider.Name,
					ContextLength: window, ContextSource: source, Enabled: ccfg.Enabled,
					Percent: res.Percent, EffectiveWindow: res.EffectiveWindow, TriggerTokens: res.Tokens,
					TailMode: res.TailMode, TailBudget: res.TailBudget, TailSoftCeiling: res.TailSoftCeiling,
					MaxSummaryTokens: res.MaxSummaryTokens, Steps: []explainedStep{}, Notices: nonNil(res.Notices),
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
			if !ccfg.Enabled {
				fmt.Fprintln(a.stdout, "note: compression.enabled is false: sessions never compact automatically (manual /compress still works)")
			}
			fmt.Fprint(a.stdout, res.String())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "", "model to explain (default provider.model)")
	f.IntVar(&context, "context", 0, "the model's context window in tokens (default: the built-in table)")
	return cmd
}
