package cli

import (
	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
)

func (a *app) benchRecallCommand() *cobra.Command {
	var (
		dir      string
		quiet    bool
		seed     uint64
		sessions int
		turns    int
	)
	cmd := &cobra.Command{
		Use:   "recall",
		Short: "Measure how well search finds what was said: generated coding sessions and questions about them",
		Long: "Generate coding-agent sessions (goals, decisions, files, commands, errors, values in tool output,\n" +
			"user corrections; each compacted halfway) and questions about them worded apart from their answers,\n" +
			"each with its evidence message. Every question is asked as a person asks it and as its keywords,\n" +
			"through spool's search and two baselines over the same messages: plain Okapi BM25 (k1 1.2, b 0.75,\n" +
			"no stemming) and the AND-only search (every word required) as a control that must score low.\n" +
			"Reports hit@1/5/10, recall@10 and MRR per query style and per question kind, as JSON.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := bench.RecallConfig{Dir: dir, Seed: seed, Sessions: sessions, Turns: turns}
			if !quiet {
				cfg.Log = a.stderr
			}
			return benchError("recall", bench.RunRecall(cmd.Context(), cfg, a.stdout))
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "where to make the scratch database (default $BENCH_TMPDIR or the temp dir)")
	f.Uint64Var(&seed, "seed", 0, "seed of the generated sessions (0 = the default, 20260428)")
	f.IntVar(&sessions, "sessions", 0, "how many sessions (default 40)")
	f.IntVar(&turns, "turns", 0, "user turns per session (default 40)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}
