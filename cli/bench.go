package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/store/postgres"
)

func (a *app) benchCommand() *cobra.Command {
	cmd := groupCommand("bench", "Run the standard benchmarks")
	cmd.AddCommand(a.benchStoreCommand(), a.benchStoreWorkerCommand(), a.benchLeaseCommand(), a.benchLeaseWorkerCommand())
	cmd.AddCommand(a.benchRetentionCommand())
	cmd.AddCommand(a.benchRecallCommand(), a.benchScaleCommand())
	cmd.AddCommand(a.benchCacheCommand())
	cmd.AddCommand(a.benchGatewayCommand(), a.benchReplicasCommand())
	cmd.AddCommand(a.benchReliabilityCommand(), a.benchReliabilityWorkerCommand())
	return cmd
}

// benchError prefixes a benchmark's error with its name; a failed verification points to the
// report, which was printed anyway.
func benchError(name string, err error) error {
	switch {
	case errors.Is(err, bench.ErrVerify):
		return fmt.Errorf("bench %s: %w (see the report)", name, err)
	case err != nil:
		return fmt.Errorf("bench %s: %w", name, err)
	}
	return nil
}

// scratchBench runs a benchmark on a scratch directory (removed afterwards), with progress on
// stderr unless quiet, and prints its JSON report whatever the outcome.
func (a *app) scratchBench(name string, quiet bool, run func(dir string, log io.Writer) (any, error)) error {
	dir, err := os.MkdirTemp("", "spool-bench-"+name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var log io.Writer
	if !quiet {
		log = a.stderr
	}
	rep, err := run(dir, log)
	if perr := a.printJSON(rep); perr != nil && err == nil {
		err = perr
	}
	return benchError(name, err)
}

func (a *app) benchStoreCommand() *cobra.Command {
	var (
		synchronous string
		dir         string
		keep        bool
		quiet       bool
		backend     string
		pgURL       string
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
			switch backend {
			case "sqlite":
				if pgURL != "" {
					return &usageError{errors.New("--postgres-url needs --backend postgres")}
				}
				return benchError("store", bench.RunStore(cmd.Context(), cfg, a.stdout))
			case "postgres":
				if pgURL != "" && !postgres.IsURL(pgURL) {
					return &usageError{errors.New("--postgres-url must start with postgres:// or postgresql://")}
				}
				return benchError("store", bench.RunStorePostgres(cmd.Context(), bench.PostgresConfig{
					Store: cfg, LeaseWorkerArgs: []string{"bench", "lease-worker"}, URL: pgURL}, a.stdout))
			}
			return &usageError{fmt.Errorf("--backend must be sqlite or postgres, not %q", backend)}
		},
	}
	f := cmd.Flags()
	f.StringVar(&synchronous, "synchronous", "normal", "SQLite synchronous mode: normal or full")
	f.StringVar(&dir, "dir", "", "where to make the scratch database (default $BENCH_TMPDIR or the temp dir)")
	f.BoolVar(&keep, "keep-db", false, "keep the scratch database for inspection")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	f.StringVar(&backend, "backend", "sqlite", "sqlite, or postgres: the workload on SQLite and on a durable PostgreSQL cluster "+
		"started for the run (initdb from /usr/lib/postgresql), with pg_test_fsync's ceiling and the lease hand-over")
	f.StringVar(&pgURL, "postgres-url", "", "with --backend postgres: an empty database to measure instead of a cluster of its own")
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

func (a *app) benchLeaseCommand() *cobra.Command {
	var (
		asJSON bool
		dir    string
		keep   bool
		quiet  bool
		cfg    bench.LeaseConfig
	)
	cmd := &cobra.Command{
		Use:   "lease",
		Short: "Measure the turn lease: acquire+release latency, 8 contending processes, hand-over delay",
		Long: "Measure the turn lease on a scratch SQLite file: acquire+release latency uncontended,\n" +
			"the same with --procs contending processes (each on its own conversation, then all on one\n" +
			"conversation through turn.Begin/End), and the hand-over delay from ReleaseLease returning in\n" +
			"one process to AcquireLease succeeding in a waiting one (target p99 < 50 ms). Progress goes\n" +
			"to stderr.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench: find the spool binary for worker processes: %w", err)
			}
			cfg.WorkerExe, cfg.WorkerArgs = exe, []string{"bench", "lease-worker"}
			cfg.Dir, cfg.KeepDB = dir, keep
			if !quiet {
				cfg.Log = a.stderr
			}
			return benchError("lease", bench.RunLease(cmd.Context(), cfg, a.stdout, asJSON))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.IntVar(&cfg.Iterations, "iterations", 2000, "uncontended acquire+release pairs")
	f.IntVar(&cfg.Procs, "procs", 8, "contending processes")
	f.IntVar(&cfg.PerProc, "per-proc", 200, "acquire+release pairs (or turns) per contending process")
	f.IntVar(&cfg.Handovers, "handovers", 200, "measured hand-overs")
	f.StringVar(&dir, "dir", "", "where to make the scratch database (default $BENCH_TMPDIR or the temp dir)")
	f.BoolVar(&keep, "keep-db", false, "keep the scratch database for inspection")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

// benchLeaseWorkerCommand is one worker process of "bench lease"; its parameters arrive on stdin.
func (a *app) benchLeaseWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "lease-worker",
		Short:  "One worker process of 'bench lease' (internal)",
		Hidden: true,
		Args:   args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bench.RunLeaseWorker(cmd.Context(), a.stdin, a.stdout); err != nil {
				return fmt.Errorf("bench lease worker: %w", err)
			}
			return nil
		},
	}
}
