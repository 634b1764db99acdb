package platformsoak

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
	"github.com/spoolhq/spool/internal/platformfake/slackfake"
	"github.com/spoolhq/spool/internal/platformfake/telegramfake"
	"github.com/spoolhq/spool/provider/fake"
)

// soak is one run's state, shared by its phases: set up (fakes, lanes), drive (senders, faults,
// restarts), then score (replies as posted, latency, the store).
type soak struct {
	cfg   Config
	rep   Report
	fk    soakFakes
	model *firstTokens
	db    string
	ids   atomic.Int64
	lanes []*soakLane
	start time.Time
	hc    *http.Client

	cur         atomic.Pointer[soakInstance] // the gateway running now
	discordGate sync.RWMutex                 // held for writing while the gateway restarts: Discord delivers nothing to a bot that is away
	discordCut  atomic.Bool                  // an abrupt restart: messages go on, into the channels' history only
	dups        atomic.Int64                 // duplicate deliveries sent
	faultMu     sync.Mutex                   // guards rep.Faults
	outages     [][2]time.Time               // when the gateway was down (written by the restarter only)
	restartErr  error                        // the restart that failed (written by the restarter only)
}

// Run runs the platform soak: real Telegram, Slack and Discord adapters against the local
// fakes, a real Router on a SQLite file with the offline model, thousands of messages across
// chat lanes with injected faults, duplicate deliveries and gateway restarts; then it checks
// every message was answered exactly once, in its own chat, in order, in its lane's one session.
// A missed target is returned as bench.ErrVerify beside the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	s := &soak{cfg: cfg, rep: Report{Lanes: cfg.Lanes, NoDedup: cfg.NoDedup, Faults: map[string]int{}},
		hc: &http.Client{Timeout: 10 * time.Second}}
	if cfg.Dir == "" {
		return s.rep, errors.New("platform soak: a scratch directory is required")
	}
	closeFakes, err := s.startFakes()
	defer closeFakes()
	if err != nil {
		return s.rep, err
	}
	s.model = &firstTokens{c: fake.New(fake.Config{Latency: cfg.FirstToken}), t: map[string]time.Duration{}, start: map[string]time.Time{}}
	s.db = filepath.Join(cfg.Dir, "platforms.db")
	if s.lanes, err = buildLanes(cfg, s.fk); err != nil {
		return s.rep, err
	}
	if err := s.drive(ctx); err != nil {
		return s.rep, err
	}
	got := s.awaitAnswers(ctx)
	s.score(got)
	if err := s.verifyStore(context.Background()); err != nil {
		return s.rep, err
	}
	return s.rep, s.verdict()
}

func (s *soak) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "platform soak: "+format+"\n", args...)
	}
}

// startFakes starts the fakes of the platforms soaked, each enforcing its platform's rate
// limits. The returned func closes those started, also after an error.
func (s *soak) startFakes() (func(), error) {
	fk := soakFakes{secret: []byte("soak-signing-secret"), marks: &marks{m: map[string]map[string]time.Time{}},
		log: slog.New(slog.DiscardHandler)}
	if s.cfg.Trace != nil {
		fk.log = slog.New(slog.NewTextHandler(s.cfg.Trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() { s.fk = fk }()
	for _, p := range s.cfg.Platforms {
		switch p {
		case "telegram":
			fk.tg = telegramfake.Start(tgSoakToken)
			fk.tg.SetLimits(telegramfake.TelegramLimits)
			closers = append(closers, fk.tg.Close)
		case "slack":
			sf, err := slackfake.Start()
			if err != nil {
				return closeAll, fmt.Errorf("platform soak: start the Slack fake: %w", err)
			}
			closers = append(closers, func() { sf.Close() })
			sf.SetLimits(slackfake.SlackLimits)
			fk.sf = sf
		case "discord":
			df, err := discordfake.Start()
			if err != nil {
				return closeAll, fmt.Errorf("platform soak: start the Discord fake: %w", err)
			}
			closers = append(closers, func() { df.Close() })
			df.SetLimits(discordfake.DiscordLimits) // Discord's own limits: the adapter must keep them
			fk.df = df
		default:
			return closeAll, fmt.Errorf("platform soak: no platform %q (telegram, slack, discord)", p)
		}
	}
	return closeAll, nil
}

// verdict sets TargetsMet and says which were missed.
func (s *soak) verdict() error {
	rep := &s.rep
	rep.TargetsMet = rep.Lost == 0 && rep.DuplicatedSends == 0 && rep.DuplicatedTurns == 0 && rep.Interleaved == 0 &&
		rep.KeysMixed == 0 && rep.AddedLatency.P99 < 200
	if !rep.TargetsMet {
		return fmt.Errorf("%w: targets missed: %d lost, %d duplicated sends, %d duplicated turns, %d interleaved, %d keys mixed up, added latency p99 %.0f ms", bench.ErrVerify,
			rep.Lost, rep.DuplicatedSends, rep.DuplicatedTurns, rep.Interleaved, rep.KeysMixed, rep.AddedLatency.P99)
	}
	return nil
}
