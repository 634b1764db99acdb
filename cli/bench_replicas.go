package cli

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/store/postgres"
)

func (a *app) benchReplicasCommand() *cobra.Command {
	var (
		cfg   bench.ReplicasConfig
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "replicas",
		Short: "Soak two spool serve replicas on one PostgreSQL database and print the verdicts as JSON",
		Long: "Start two `spool serve` processes (own homes, SPOOL_HOST_ID replica-a and replica-b) on one\n" +
			"PostgreSQL database (a durable cluster started for the run, or --postgres-url, an empty\n" +
			"database) and one fake model over HTTP; --clients clients send turns on --conversations\n" +
			"shared conversations for --duration, alternating replicas, half queueing when busy, half\n" +
			"retrying 409s after Retry-After. Halfway through, replica A is killed with SIGKILL while it\n" +
			"holds leases mid-turn. Verdicts (counts): interleaved, lost, duplicated and foreign turns,\n" +
			"requests failed other than by the kill, stale writes with A's leases accepted after the\n" +
			"takeover (all must be 0); A's conversations answered again by B within --ttl + 1 s.\n" +
			"--control adds an unfenced writer, so the verdicts must fail. Exits 1 when a verdict fails.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.URL != "" && !postgres.IsURL(cfg.URL) {
				return &usageError{errors.New("--postgres-url must start with postgres:// or postgresql://")}
			}
			if cfg.Clients < 2 || cfg.Conversations < 1 {
				return &usageError{errors.New("--clients must be at least 2 and --conversations at least 1")}
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Exe = exe
			return a.scratchBench("replicas", quiet, func(dir string, log io.Writer) (any, error) {
				cfg.Dir, cfg.Log = dir, log
				return bench.Replicas(cmd.Context(), cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.URL, "postgres-url", "", "an empty PostgreSQL database to use instead of a cluster of its own")
	fl.IntVar(&cfg.Clients, "clients", 32, "concurrent HTTP clients")
	fl.IntVar(&cfg.Conversations, "conversations", 8, "shared conversations")
	fl.DurationVar(&cfg.Duration, "duration", bench.DefaultReplicasDuration, "how long the clients send turns")
	fl.DurationVar(&cfg.TTL, "ttl", bench.DefaultReplicasTTL, "the replicas' leases.ttl (they renew every ttl/3)")
	fl.DurationVar(&cfg.ModelLatency, "model-latency", bench.DefaultReplicasModelLatency, "the fake model's delay before each answer")
	fl.BoolVar(&cfg.Control, "control", false, "add an unfenced writer: the verdicts must fail (exit 1)")
	fl.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
