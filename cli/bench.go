package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/bench"
)

func (a *app) benchCommand() *cobra.Command {
	cmd := groupCommand("bench", "Run the standard benchmarks")
	cmd.AddCommand(a.benchStoreCommand(), a.benchStoreWorkerCommand())
	return cmd
}

func (a *app) benchStoreCommand() *cobra.Command {
	var (
		synchronous string
		dir         string
		keep        bool
		quiet       bool
	)
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Run the session-store workload (W1-W5 of WORKLOAD.md) and print its JSON report",
		Long: "Run the standard session-store workload on a scratch SQLite file and print one JSON\n" +
			"object (the report is JSON with or without --json). BENCH_SEED, BENCH_SESSIONS,\n" +
			"BENCH_MESSAGES, BENCH_QUERIES, BENCH_LIST_ITERS, BENCH_W5_PROCS and BENCH_W5_MSGS scale\n" +
			"it down. Progress goes to stderr.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			sync := strings.ToUpper(synchronous)
			if sync != "NORMAL" && sync != "FULL" {
				return &usageError{fmt.Errorf("--synchronous must be normal or full, not %q", synchronous)}
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench: find the spool binary for worker processes: %w", err)
			}
			cfg := bench.StoreConfig{
				Synchronous: sync,
				WorkerExe:   exe,
				WorkerArgs:  []string{"bench", "store-worker"},
				Dir:         dir,
				KeepDB:      keep,
			}
			if !quiet {
				cfg.Log = a.stderr
			}
			err = bench.RunStore(cmd.Context(), cfg, a.stdout)
			if errors.Is(err, bench.ErrVerify) {
				return fmt.Errorf("bench store: %w (see the report)", err)
			}
			if err != nil {
				return fmt.Errorf("bench store: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&synchronous, "synchronous", "normal", "SQLite synchronous mode: normal or full")
	f.StringVar(&dir, "dir", "", "where to make the scratch database (default $BENCH_TMPDIR or the temp dir)")
	f.BoolVar(&keep, "keep-db", false, "keep the scratch database for inspection")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

// benchStoreWorkerCommand is one W5 contention process, started by "bench store"; its
// parameters arrive on stdin.
func (a *app) benchStoreWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "store-worker",
		Short:  "One W5 worker process of 'bench store' (internal)",
		Hidden: true,
		Args:   args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bench.RunStoreWorker(cmd.Context(), a.stdin, a.stdout); err != nil {
				return fmt.Errorf("bench worker: %w", err)
			}
			return nil
		},
	}
}
