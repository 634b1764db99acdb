package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/bench"
)

func (a *app) benchTelegramCommand() *cobra.Command {
	var (
		cfg   bench.TelegramSoakConfig
		quiet bool
		trace string
	)
	cmd := &cobra.Command{
		Use:   "telegram",
		Short: "Soak the Telegram path (adapter, router, gateway) with injected faults and print its JSON report",
		Long: "Run --lanes chat users (DMs, group members, forum topics) against a local fake Telegram Bot API\n" +
			"served by the real Telegram adapter, platform router, gateway and agent (the offline model) on a\n" +
			"scratch SQLite file for --duration, each waiting for its answer before writing again and now and\n" +
			"then double-texting, while 429 retry_after, 5xx, hung requests and redelivered updates are\n" +
			"injected and the gateway is restarted --restarts times. Reports messages lost, duplicated sends,\n" +
			"turns interleaved and keys mixed up (all must be 0: exit 1 otherwise) and the time from an\n" +
			"inbound update to the reply's first message p50/p99.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.scratchBench("telegram", quiet, func(dir string, log io.Writer) (any, error) {
				cfg.Dir, cfg.Log = dir, log
				if trace != "" {
					f, err := os.Create(trace)
					if err != nil {
						return nil, err
					}
					defer f.Close()
					cfg.Trace = f
				}
				return bench.TelegramSoak(cmd.Context(), cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&cfg.Duration, "duration", 0, "how long the users write (default 10m)")
	fl.IntVar(&cfg.Lanes, "lanes", 24, "concurrent chat lanes")
	fl.IntVar(&cfg.Restarts, "restarts", 4, "gateway restarts during the run")
	fl.BoolVar(&cfg.NoFaults, "no-faults", false, "inject no faults and restart nothing (measures the added latency alone)")
	fl.StringVar(&trace, "trace", "", "write a debug log of the run to this file (pushes, adapter and router steps, each lost message's inbox row)")
	fl.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
