package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/bench"
)

func (a *app) benchRetentionCommand() *cobra.Command {
	var (
		dir     string
		quiet   bool
		turns   int
		trigger int
	)
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Run the compaction retention benchmark and print its JSON report",
		Long: "Run a generated 400-turn coding session with planted facts (paths, SHAs, issue numbers,\n" +
			"error strings, user decisions, the current goal) through five or more compactions of the\n" +
			"real compressor, committed to a scratch SQLite file, once with the fake summarizer and once\n" +
			"with the deterministic fallback. Reports each fact and user ask as present in the active\n" +
			"context, recoverable with one search, or lost; orphan tool pairs; and the compaction\n" +
			"overhead without the model call. The report is JSON with or without --json. It exits 1\n" +
			"when a fact or ask is lost, a tool pair is orphaned or fewer than five compactions ran.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if turns < 0 || (turns > 0 && turns < 20) {
				return &usageError{fmt.Errorf("--turns must be at least 20, not %d", turns)}
			}
			if trigger < 0 || (trigger > 0 && trigger < 25_000) {
				return &usageError{fmt.Errorf("--trigger-tokens must be at least 25000 (the tail alone is 10000), not %d", trigger)}
			}
			cfg := bench.RetentionConfig{Dir: dir, Turns: turns, TriggerTokens: trigger}
			if !quiet {
				cfg.Log = a.stderr
			}
			return benchError("retention", bench.RunRetention(cmd.Context(), cfg, a.stdout))
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "where to make the scratch databases (default $BENCH_TMPDIR or the temp dir)")
	f.IntVar(&turns, "turns", 0, "session length in user turns (default 400)")
	f.IntVar(&trigger, "trigger-tokens", 0, "cap the compaction trigger (compression.threshold_tokens) to compact a shorter session 5 times")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}
