package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
)

func (a *app) benchCacheCommand() *cobra.Command {
	var (
		turns     int
		dir       string
		providers []string
		scenarios []string
		quiet     bool
		control   bool
	)
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Measure prompt-cache efficiency of a scripted 300-turn tool-heavy session against an ideal agent (OpenAI and Anthropic accounting)",
		Long: "Drive a scripted tool-heavy session through spool's agent against the fake provider served over\n" +
			"HTTP, through the real OpenAI and Anthropic adapters, and report the cached prompt tokens against\n" +
			"the ceiling of an ideal agent: everything already sent, in the same order, up to the first byte a\n" +
			"compaction had to change, system prompt and tools included while their inputs did not change, and\n" +
			"nothing after a pause longer than the cache lifetime. Scenarios: steady (a turn every 73 s, spool\n" +
			"next to an agent that renders the time into its prompt every turn and one that rebuilds its prompt\n" +
			"at every compaction), pause-5m and pause-1h (pauses longer than each lifetime), mcp-tools (an MCP\n" +
			"server's tool list changes every 50 turns). Provider cache models: openai, anthropic, and responses\n" +
			"(the Responses API, reasoning replayed; in steady also without replay, to show what dropping it\n" +
			"costs). --control runs an agent that renders the time into its prompt in spool's place: a bad\n" +
			"result the benchmark must report. --json prints one object (scenarios.<scenario>.<provider>). It\n" +
			"exits 1 when spool's efficiency is under 99%.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if turns < 1 {
				return &usageError{fmt.Errorf("--turns must be at least 1, got %d", turns)}
			}
			for _, sc := range scenarios {
				if !containsString(bench.CacheScenarios, sc) {
					return &usageError{fmt.Errorf("--scenario: unknown scenario %q (want %s)", sc, strings.Join(bench.CacheScenarios, ", "))}
				}
			}
			for _, p := range providers {
				if !containsString(bench.CacheProviders, p) {
					return &usageError{fmt.Errorf("--provider: unknown provider cache model %q (want %s)", p, strings.Join(bench.CacheProviders, ", "))}
				}
			}
			cfg := bench.CacheConfig{Turns: turns, Dir: dir, Providers: providers, Scenarios: scenarios, Control: control}
			if !quiet {
				cfg.Log = a.stderr
			}
			rep, err := bench.RunCache(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if a.json {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				bench.WriteCacheText(a.stdout, rep)
			}
			if !rep.TargetsMet {
				return benchError("cache", fmt.Errorf("%w: %s", bench.ErrVerify, strings.Join(rep.TargetsMissed, "; ")))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&turns, "turns", 300, "turns in the scripted session")
	f.StringVar(&dir, "dir", "", "where to make the scratch databases (default $BENCH_TMPDIR or the temp dir)")
	f.StringSliceVar(&providers, "provider", nil, "provider cache models to run: "+strings.Join(bench.CacheProviders, ", ")+" (default all)")
	f.BoolVar(&control, "control", false, "run the control (an agent that breaks the cache every turn) in spool's place: must exit 1")
	f.StringSliceVar(&scenarios, "scenario", nil, "scenarios to run: "+strings.Join(bench.CacheScenarios, ", ")+" (default all)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}
