package cli

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
)

func (a *app) benchScaleCommand() *cobra.Command {
	var (
		dir     string
		quiet   bool
		asJSON  bool
		control bool
		seed    uint64
		sizes   []int
		long    int
		backend string
		pgURL   string
	)
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Measure how the store's cost grows with its data: 10^3 to 10^6 messages and a 100,000-message session",
		Long: "Grow one store through --sizes messages over many sessions (the store workload's vocabulary,\n" +
			"written in batches), beside one long session compacted as it grows, and measure at each size:\n" +
			"append p50/p99 (one message a transaction), resume of the long session p50/p99 (what the model\n" +
			"sees), search p50/p99 (the workload's queries), list p99, the database's size on disk and the\n" +
			"process's resident memory. Prints the curve as a table (or --json) and each target's verdict;\n" +
			"exits 1 when a measure grows faster than its target (SQLite: append p99 at the largest size\n" +
			"within 1.5x of the smallest, resume p99 < 50 ms, search p99 at the largest size < 50 ms;\n" +
			"PostgreSQL: twice those). --control slows every search by 60 ms, so the verdicts must fail.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(sizes) == 0 || slices.ContainsFunc(sizes, func(n int) bool { return n <= 0 }) || !slices.IsSorted(sizes) {
				return &usageError{fmt.Errorf("--sizes must be positive and ascending, not %v", sizes)}
			}
			if long < 1 {
				return &usageError{fmt.Errorf("--long must be at least 1, not %d", long)}
			}
			cfg := bench.ScaleConfig{Dir: dir, Seed: seed, Sizes: sizes, Long: long}
			pgURL, err := emptyDatabaseURL(backend, pgURL)
			if err != nil {
				return err
			}
			cfg.PostgresURL = pgURL
			if control {
				cfg.SlowSearch = 60 * time.Millisecond
			}
			if !quiet {
				cfg.Log = a.stderr
			}
			return benchError("scale", bench.RunScale(cmd.Context(), cfg, asJSON, a.stdout))
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "where to make the scratch database (default $BENCH_TMPDIR or the temp dir)")
	f.Uint64Var(&seed, "seed", 0, "seed of the generated messages (0 = the default, 20260428)")
	f.IntSliceVar(&sizes, "sizes", []int{1000, 10000, 100000, 1000000}, "store sizes measured, in messages over many sessions, ascending")
	f.IntVar(&long, "long", 100000, "messages of the long session")
	f.StringVar(&backend, "backend", "sqlite", "sqlite (a scratch file), or postgres (needs --postgres-url)")
	f.StringVar(&pgURL, "postgres-url", "", "with --backend postgres: an empty database to run in (the run leaves its rows there)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON instead of a table")
	f.BoolVar(&control, "control", false, "slow every search by 60 ms: the verdicts must fail (exit 1)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}
