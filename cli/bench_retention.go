package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
)

func (a *app) benchRetentionCommand() *cobra.Command {
	var (
		dir     string
		quiet   bool
		turns   int
		seed    uint64
		windows []string
		engines []string
	)
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Run the compaction retention benchmark at 4K-1M windows and print its JSON report",
		Long: "Run a generated 500-turn coding session with planted facts (the goal and constraints said once\n" +
			"at the start, decisions in assistant replies, values only in tool output, facts in the first\n" +
			"exchange, in the middle and right before a compaction) through spool's agent at context windows\n" +
			"of 4K, 8K, 32K, 128K and 1M tokens, with the fake summarizer, with the deterministic fallback\n" +
			"only, and with two control engines (tail only, blanked summary) that must lose facts. Each fact\n" +
			"is present (in the next request), recoverable (the request holds its pointer or identifier and\n" +
			"one session_search for it returns the original) or lost. Reports per window: present and\n" +
			"recoverable shares, losses, user asks lost, orphan tool pairs, active tokens after each\n" +
			"compaction against the target, failed turns. The report is JSON with or without --json. It\n" +
			"exits 1 when a target is missed.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if turns < 0 || (turns > 0 && turns < 20) {
				return &usageError{fmt.Errorf("--turns must be at least 20, not %d", turns)}
			}
			ws, err := parseWindows(windows)
			if err != nil {
				return &usageError{err}
			}
			for _, e := range engines {
				if !containsString(bench.RetentionEngines, e) {
					return &usageError{fmt.Errorf("--engines: unknown engine %q (want %s)", e, strings.Join(bench.RetentionEngines, ", "))}
				}
			}
			cfg := bench.RetentionConfig{Dir: dir, Seed: seed, Turns: turns, Windows: ws, Engines: engines}
			if !quiet {
				cfg.Log = a.stderr
			}
			return benchError("retention", bench.RunRetention(cmd.Context(), cfg, a.stdout))
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "where to make the scratch databases (default $BENCH_TMPDIR or the temp dir)")
	f.IntVar(&turns, "turns", 0, "session length in user turns (default 500)")
	f.Uint64Var(&seed, "seed", 0, "seed of the generated session (0 = the default, 20260428; the report's config.seed)")
	f.StringSliceVar(&windows, "windows", nil, "context windows to run, e.g. 4k,8k,32k,128k,1m or 32768 (default all five)")
	f.StringSliceVar(&engines, "engines", nil, "engines to run: "+strings.Join(bench.RetentionEngines, ", ")+" (default all)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

// parseWindows reads window sizes given as tokens (32768) or with a k/m suffix (4k = 4,096,
// 1m = 1,048,576).
func parseWindows(in []string) ([]int, error) {
	var out []int
	for _, s := range in {
		v := strings.ToLower(strings.TrimSpace(s))
		mul := 1
		switch {
		case strings.HasSuffix(v, "k"):
			mul, v = 1024, strings.TrimSuffix(v, "k")
		case strings.HasSuffix(v, "m"):
			mul, v = 1024*1024, strings.TrimSuffix(v, "m")
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n*mul < 1024 || n*mul > 16*1024*1024 {
			return nil, &usageError{fmt.Errorf("--windows: %q is not a window size between 1k and 16m tokens", s)}
		}
		out = append(out, n*mul)
	}
	return out, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
