// Command spool-soak is the chat-platform soak: the real Telegram, Slack and Discord adapters
// against local fakes of the platforms' APIs (package internal/platformfake), with faults,
// duplicate deliveries and gateway restarts. It is a command of its own so that the spool binary
// does not link the fakes. Run it from the repository:
//
//	go run ./internal/cmd/spool-soak --duration 2m
//
// It prints one JSON report on stdout and exits 1 when a target is missed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/internal/platformsoak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := command(os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "spool-soak:", err)
		os.Exit(1)
	}
}

// scratch runs the soak on a scratch directory (removed afterwards), with progress on stderr
// unless quiet, and prints its JSON report whatever the outcome.
func scratch(stdout, stderr io.Writer, quiet bool, run func(dir string, log io.Writer) (any, error)) error {
	dir, err := os.MkdirTemp("", "spool-soak-")
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	defer os.RemoveAll(dir)
	var log io.Writer
	if !quiet {
		log = stderr
	}
	rep, err := run(dir, log)
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if perr := enc.Encode(rep); perr != nil && err == nil {
		err = fmt.Errorf("print the report: %w", perr)
	}
	if errors.Is(err, bench.ErrVerify) {
		return fmt.Errorf("%w (see the report)", err)
	}
	return err
}

// command is the soak's command line.
func command(stdout, stderr io.Writer) *cobra.Command {
	var (
		cfg       platformsoak.Config
		platforms string
		trace     string
		quiet     bool
	)
	cmd := &cobra.Command{
		Use:   "spool-soak",
		Short: "Soak the chat-platform gateway (Telegram, Slack and Discord against local fakes, with faults) and print its JSON report",
		Long: "Run the real Telegram, Slack and Discord adapters (--platforms) against local fakes of their APIs on\n" +
			"127.0.0.1 with a real router on a scratch SQLite file and the offline model (first token after\n" +
			"--first-token) for --duration: messages at --rate per second across --lanes chat lanes (DMs, groups\n" +
			"and channels per user, shared threads and forum topics), with injected 429s (retry_after 1 s), 5xx\n" +
			"before and after the effect, timeouts, failed long polls, dropped gateway sockets, duplicate\n" +
			"deliveries, messages into running turns and gateway restarts on the same database (every\n" +
			"--discord-abrupt-every-th restart is a crash for Discord: the bot's socket cut and its session\n" +
			"forgotten while people go on writing; the next gateway reads those messages from the channels'\n" +
			"history, and they count from the moment it was up: discord_sent_during_restart); the Telegram fake\n" +
			"enforces Telegram's flood limits (1 call/s per chat after a burst of 3, 20 new messages a minute per\n" +
			"group: its own 429s are counted apart, telegram_flood_429s), the Slack fake Slack's Web API limits\n" +
			"(chat.postMessage 1/s per channel after a burst of 3, Tier 3's 50 a minute per workspace for\n" +
			"chat.update and the history reads: slack_ratelimited_429s), the Discord fake Discord's rate limits\n" +
			"(message create and edit 5 per 5 s per channel, 50 requests a second per bot: discord_limit_429s),\n" +
			"and Telegram group lanes send at --telegram-group-share of the rate. The adapters pace themselves\n" +
			"to stay under those limits (a Telegram edit or notice never takes a chat's last call, so a reply's\n" +
			"first message finds one; discordgo paces each Discord bucket from its headers, the adapter the\n" +
			"global limit). Reports messages lost, duplicated sends and turns, turns interleaved, keys mixed up\n" +
			"(targets 0) and the added latency from inbound event to the first attempt to post the reply, beyond\n" +
			"the model's first token (target p99 < 200 ms, for messages that found their chat idle), per platform\n" +
			"and split into steps.\n" +
			"--no-dedup is the control: every delivery a fresh event id; it must fail. Exits 1 when a target is\n" +
			"missed.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if platforms != "" {
				for _, p := range strings.Split(platforms, ",") {
					p = strings.TrimSpace(p)
					if !slices.Contains(platformsoak.PlatformNames, p) {
						return fmt.Errorf("--platforms: %q is not one of %s", p, strings.Join(platformsoak.PlatformNames, ", "))
					}
					if !slices.Contains(cfg.Platforms, p) {
						cfg.Platforms = append(cfg.Platforms, p)
					}
				}
			}
			return scratch(stdout, stderr, quiet, func(dir string, log io.Writer) (any, error) {
				cfg.Dir, cfg.Log = dir, log
				if trace != "" {
					f, err := os.Create(trace)
					if err != nil {
						return nil, err
					}
					defer f.Close()
					cfg.Trace = f
				}
				return platformsoak.Run(cmd.Context(), cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&cfg.Duration, "duration", 0, "how long messages are sent (default 10m)")
	fl.StringVar(&platforms, "platforms", "", "the platforms soaked together, comma-separated (default telegram,slack,discord)")
	fl.IntVar(&cfg.Lanes, "lanes", 0, "chat lanes, shared out among the platforms in turn (default 42)")
	fl.Float64Var(&cfg.Rate, "rate", 0, "messages per second over all lanes (default 8)")
	fl.DurationVar(&cfg.FirstToken, "first-token", 0, "the model's delay before its first token (default 50ms)")
	fl.DurationVar(&cfg.FaultEvery, "fault-every", 0, "one injected platform fault per this interval (default 1s; negative: none)")
	fl.Float64Var(&cfg.DupShare, "dup-share", 0, "share of deliveries sent twice (default 0.05)")
	fl.Float64Var(&cfg.TelegramGroupShare, "telegram-group-share", 0, "a Telegram group lane's share of the per-lane rate (default 1/3: Telegram takes 20 new messages a minute per group)")
	fl.DurationVar(&cfg.RestartEvery, "restart-every", 0, "gateway restarts (default 90s; negative: never)")
	fl.IntVar(&cfg.DiscordAbruptEvery, "discord-abrupt-every", 0, "every Nth restart cuts the Discord bot off abruptly, messages going on meanwhile (default 2: the first, third, ...; negative: never)")
	fl.BoolVar(&cfg.NoDedup, "no-dedup", false, "the control: defeat inbound deduplication (must score badly)")
	fl.StringVar(&trace, "trace", "", "write a debug log of the run to this file (the adapters' and routers' steps)")
	fl.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
