package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/bench"
)

func (a *app) benchCacheCommand() *cobra.Command {
	var (
		turns     int
		dir       string
		providers []string
		quiet     bool
	)
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Measure prompt-cache efficiency of a scripted 300-turn tool-heavy session (OpenAI and Anthropic accounting)",
		Long: "Drive a scripted tool-heavy session through spool's agent against the fake provider served over\n" +
			"HTTP, through the real OpenAI and Anthropic adapters, and report the cached share of prompt\n" +
			"tokens against the theoretical maximum (everything but the bytes new since the previous call,\n" +
			"reset only at compactions), next to a naive agent that renders the current time into its system\n" +
			"prompt every turn. --json prints one object (providers.openai, providers.anthropic).",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if turns < 1 {
				return &usageError{fmt.Errorf("--turns must be at least 1, got %d", turns)}
			}
			cfg := bench.CacheConfig{Turns: turns, Dir: dir, Providers: providers}
			if !quiet {
				cfg.Log = a.stderr
			}
			rep, err := bench.RunCache(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(rep)
			}
			bench.WriteCacheText(a.stdout, rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&turns, "turns", 300, "turns in the scripted session")
	f.StringVar(&dir, "dir", "", "where to make the scratch databases (default $BENCH_TMPDIR or the temp dir)")
	f.StringSliceVar(&providers, "provider", nil, "provider cache models to run: openai, anthropic (default both)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}
