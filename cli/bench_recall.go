package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/store/postgres"
)

func (a *app) benchRecallCommand() *cobra.Command {
	var (
		dir      string
		quiet    bool
		seed     uint64
		sessions int
		turns    int
		filler   int
		backend  string
		pgURL    string
	)
	cmd := &cobra.Command{
		Use:   "recall",
		Short: "Measure how well search finds what was said: generated coding sessions and questions about them",
		Long: "Generate coding-agent sessions (goals, decisions, files, commands, errors, values in tool output,\n" +
			"user corrections; each compacted halfway) and questions about them worded apart from their answers,\n" +
			"each with its evidence message. Every question is asked as a person asks it and as its keywords,\n" +
			"through spool's search and two baselines over the same messages: plain Okapi BM25 (k1 1.2, b 0.75,\n" +
			"no stemming) and the AND-only search (every word required) as a control that must score low.\n" +
			"Reports hit@1/5/10, recall@10 and MRR per query style and per question kind, and search latency,\n" +
			"as JSON. --filler adds older history (the store workload's messages) to measure at size.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if filler < 0 {
				return &usageError{fmt.Errorf("--filler must be 0 or more, not %d", filler)}
			}
			cfg := bench.RecallConfig{Dir: dir, Seed: seed, Sessions: sessions, Turns: turns, Filler: filler}
			pgURL, err := emptyDatabaseURL(backend, pgURL)
			if err != nil {
				return err
			}
			cfg.PostgresURL = pgURL
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
	f.IntVar(&filler, "filler", 0, "messages of the store workload written first, as older history (1000000: search at size)")
	f.StringVar(&backend, "backend", "sqlite", "sqlite (a scratch file), or postgres (needs --postgres-url)")
	f.StringVar(&pgURL, "postgres-url", "", "with --backend postgres: an empty database to run in (the run leaves its rows there)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

// emptyDatabaseURL checks --backend and --postgres-url for a benchmark that fills a database of
// its own: "" for SQLite, the URL of an empty PostgreSQL database for postgres.
func emptyDatabaseURL(backend, pgURL string) (string, error) {
	switch backend {
	case "sqlite":
		if pgURL != "" {
			return "", &usageError{errors.New("--postgres-url needs --backend postgres")}
		}
		return "", nil
	case "postgres":
		if !postgres.IsURL(pgURL) {
			return "", &usageError{errors.New("--backend postgres needs --postgres-url postgres://... (an empty database)")}
		}
		return pgURL, nil
	}
	return "", &usageError{fmt.Errorf("--backend must be sqlite or postgres, not %q", backend)}
}
