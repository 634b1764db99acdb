package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/bench"
)

func (a *app) benchPlatformsCommand() *cobra.Command {
	var (
		cfg   bench.PlatformsConfig
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "platforms",
		Short: "Soak the chat-platform gateway (Slack and Discord against local fakes, with faults) and print its JSON report",
		Long: "Run the real Slack and Discord adapters against local fakes of their APIs on 127.0.0.1 with a real\n" +
			"router on a scratch SQLite file and the offline model (first token after --first-token) for\n" +
			"--duration: messages at --rate per second across --lanes chat lanes (DMs, channels per user, shared\n" +
			"threads), with injected 429s (retry_after 1 s), 5xx before and after the effect, timeouts, dropped\n" +
			"gateway sockets, duplicate deliveries, messages into running turns and gateway restarts on the same\n" +
			"database. Reports messages lost, duplicated sends and turns, turns interleaved, keys mixed up (targets\n" +
			"0) and the added latency from inbound event to the first attempt to post the reply, beyond the\n" +
			"model's first token (target p99 < 200 ms, for messages that found their chat idle). --no-dedup is the\n" +
			"control: every delivery a fresh event id; it must fail. Exits 1 when a target is missed.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.scratchBench("platforms", quiet, func(dir string, log io.Writer) (any, error) {
				cfg.Dir, cfg.Log = dir, log
				return bench.Platforms(cmd.Context(), cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&cfg.Duration, "duration", 0, "how long messages are sent (default 10m)")
	fl.IntVar(&cfg.Lanes, "lanes", 0, "chat lanes, half Slack, half Discord (default 40)")
	fl.Float64Var(&cfg.Rate, "rate", 0, "messages per second over all lanes (default 8)")
	fl.DurationVar(&cfg.FirstToken, "first-token", 0, "the model's delay before its first token (default 50ms)")
	fl.DurationVar(&cfg.FaultEvery, "fault-every", 0, "one injected platform fault per this interval (default 1s; negative: none)")
	fl.Float64Var(&cfg.DupShare, "dup-share", 0, "share of deliveries sent twice (default 0.05)")
	fl.DurationVar(&cfg.RestartEvery, "restart-every", 0, "gateway restarts (default 90s; negative: never)")
	fl.BoolVar(&cfg.NoDedup, "no-dedup", false, "the control: defeat inbound deduplication (must score badly)")
	fl.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
