package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/bench"
)

func (a *app) benchGatewayCommand() *cobra.Command {
	var (
		cfg   bench.GatewayConfig
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run the gateway benchmark (concurrent HTTP clients against spool serve's gateway) and print its JSON report",
		Long: "Run --clients concurrent clients over real HTTP on 127.0.0.1 against spool's gateway with the\n" +
			"in-process fake model (no delay) on a scratch SQLite file: each on a session of its own, then\n" +
			"sharing --shared sessions (queued turns). Reports turns/s, the client round trip and the time\n" +
			"in spool (round trip minus model time) p50/p99 and what it is made of (in_spool_parts: before\n" +
			"the turn, lease, store writes, store reads, agent, after the turn), a stream's time to first byte, memory per\n" +
			"idle open stream, and the ratio of turns/s to the store-bound limit (W1 appends/s measured in\n" +
			"the same run over the store writes one turn makes). Exits 1 if any turn interleaved, was\n" +
			"duplicated or lost. The report is JSON with or without --json.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.scratchBench("gateway", quiet, func(dir string, log io.Writer) (any, error) {
				cfg.Dir, cfg.Log = dir, log
				return bench.Gateway(cmd.Context(), cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Clients, "clients", 64, "concurrent clients")
	fl.IntVar(&cfg.Turns, "turns", 10, "turns per client in each phase")
	fl.IntVar(&cfg.Shared, "shared", 8, "sessions the shared phase's clients share")
	fl.IntVar(&cfg.IdleStreams, "idle-streams", 1000, "idle open streams for the memory figure")
	fl.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
