package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/internal/bench"
)

func (a *app) benchGatewayCommand() *cobra.Command {
	var (
		cfg                    bench.GatewayConfig
		quiet                  bool
		cpuProfile, memProfile string
	)
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run the gateway benchmark (concurrent HTTP clients against spool serve's gateway) and print its JSON report",
		Long: "Run --clients concurrent clients over real HTTP on 127.0.0.1 against spool's gateway with the\n" +
			"in-process fake model (no delay) on a scratch SQLite file: each on a session of its own, then\n" +
			"sharing --shared sessions (queued turns). Reports turns/s, the client round trip and the time\n" +
			"in spool (round trip minus model time) p50/p99 and what it is made of (in_spool_parts: before\n" +
			"the turn, lease, store writes, store reads, agent, after the turn), a stream's time to first byte,\n" +
			"and the ratio of turns/s to the store-bound limit (W1 appends/s measured in the same run over the\n" +
			"store writes one turn makes). Beside the closed loop (each client sends its next turn when its\n" +
			"answer came, so with a model that takes no time the mean time in spool is clients ÷ turns/s by\n" +
			"Little's law, reported for each closed phase as closed_loop_floor_ms: a p99 under 5 ms at 64\n" +
			"clients needs a mean under 5 ms, i.e. 12,800 turns/s, unless a few turns take all the rest),\n" +
			"open_loop_distinct is the time in spool at a fixed offered load: the same clients and sessions\n" +
			"send turns on a schedule at --open-load times the distinct phase's turns/s (a late turn counts\n" +
			"from when it was due).\n\n" +
			"Then memory per idle open stream (idle_streams), measured directly: this binary's `spool serve`\n" +
			"runs in a process of its own (the plain fake model, a scratch home) and this process holds\n" +
			"--idle-streams streamed chat completions open, each turn waiting in its model call, its first\n" +
			"chunk delivered, keep-alive comments flowing every second. Reported from the server process:\n" +
			"VmRSS (/proc/PID/status), Pss (/proc/PID/smaps_rollup), the Go heap in use and goroutines\n" +
			"(/metrics), warmed up without streams and with them held; per stream; and at 10,000 streams\n" +
			"(measured with --idle-streams 10000, else extrapolated), with the verdict against --idle-limit\n" +
			"(1 GiB). --idle-pad adds bytes to each stream's message, a control that must fail the verdict.\n" +
			"Released, every stream must end whole.\n\n" +
			"Exits 1 if any turn interleaved, was duplicated or lost, or the idle-streams verdict fails\n" +
			"(over the limit, fewer streams held than asked: open_error says why). The report is JSON with\n" +
			"or without --json.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			for _, p := range []struct {
				path string
				w    *io.Writer
			}{{cpuProfile, &cfg.CPUProfile}, {memProfile, &cfg.MemProfile}} {
				if p.path == "" {
					continue
				}
				f, err := os.Create(p.path)
				if err != nil {
					return err
				}
				defer f.Close()
				*p.w = f
			}
			return a.scratchBench("gateway", quiet, func(dir string, log io.Writer) (any, error) {
				cfg.Dir, cfg.Log, cfg.Exe = dir, log, exe
				return bench.Gateway(cmd.Context(), cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Clients, "clients", 64, "concurrent clients")
	fl.IntVar(&cfg.Turns, "turns", 10, "turns per client in each phase")
	fl.IntVar(&cfg.Shared, "shared", 8, "sessions the shared phase's clients share")
	fl.IntVar(&cfg.IdleStreams, "idle-streams", bench.DefaultIdleStreams, "idle open streams held against spool serve in its own process (10000: the target, measured)")
	fl.Int64Var(&cfg.IdleLimit, "idle-limit", bench.DefaultIdleLimit, "bytes the server may use with 10,000 idle streams (the verdict)")
	fl.IntVar(&cfg.IdlePad, "idle-pad", 0, "bytes added to each idle stream's message (a control: the verdict must fail)")
	fl.DurationVar(&cfg.IdleRenew, "idle-renew-every", 0, "the idle-streams server's leases.renew_every (0: its default; 1s renews during the hold)")
	fl.Float64Var(&cfg.OpenLoad, "open-load", 0.5, "open-loop phase's offered load, a fraction of the distinct phase's turns/s (negative: skip it)")
	fl.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the HTTP phases (both ends: client and server share the process) to this file (go tool pprof)")
	fl.StringVar(&memProfile, "memprofile", "", "write the allocation profile at the end of the HTTP phases to this file (go tool pprof -sample_index=alloc_space)")
	fl.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
