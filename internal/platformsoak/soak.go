package platformsoak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/gateway/discord"
	plat "github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/slack"
	"github.com/spoolhq/spool/gateway/telegram"
	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
	"github.com/spoolhq/spool/internal/platformfake/slackfake"
	"github.com/spoolhq/spool/internal/platformfake/telegramfake"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/turn"
)

// Config sizes the platform soak. Zero fields take defaults.
type Config struct {
	Dir      string        // scratch directory (required)
	Duration time.Duration // how long messages are sent (10m)
	// Platforms are the platforms soaked together: telegram, slack, discord (default all).
	Platforms []string
	Lanes     int     // chat lanes, shared out among the platforms in turn (42)
	Rate      float64 // messages per second over all lanes (8)
	// FirstToken is the model's delay before its first token (50ms); the latency figure is
	// what spool adds beyond it.
	FirstToken time.Duration
	// FaultEvery injects one platform fault (429, 5xx before or after the effect, a timeout,
	// a dropped gateway socket) per this interval (1s; negative: none).
	FaultEvery time.Duration
	// DupShare is the share of deliveries the platform sends twice (0.05).
	DupShare float64
	// BurstShare is the share of messages followed at once by another in the same chat, which
	// then arrives during a running turn (0.05).
	BurstShare float64
	// TelegramGroupShare is a Telegram group or forum lane's share of the per-lane rate (1/3):
	// Telegram takes at most 20 new messages a minute to one group, and the two lanes that
	// share each of the soak's groups would ask for about 25 at the full rate — a backlog no
	// client can clear, growing all run. At a third, a group gets about 8 a minute.
	TelegramGroupShare float64
	// RestartEvery restarts the gateway (router, adapters, store handle) on the same database
	// (90s; negative: never).
	RestartEvery time.Duration
	// DiscordAbruptEvery makes every Nth restart a crash for Discord (2: the first, third, ...;
	// negative: none): the bot's socket is cut and Discord forgets its session before the old
	// gateway stops, and people go on writing meanwhile; the next gateway finds those messages
	// in the channels' history. The other restarts are graceful: Discord delivers nothing to a
	// bot that is away, so the soak sends nothing to Discord while they run.
	DiscordAbruptEvery int
	// NoDedup is the control: every delivery gets a fresh event id, so the inbox cannot tell
	// a redelivery from a new message. It must score badly.
	NoDedup bool
	Seed    uint64
	Log     io.Writer
	// Trace hears a debug log of the run (adapters' and routers' steps; nil: none).
	Trace io.Writer
}

const tgSoakToken = "777:soak-token"

// PlatformNames are the platforms the soak knows.
var PlatformNames = []string{"telegram", "slack", "discord"}

func (c Config) withDefaults() Config {
	if c.Duration <= 0 {
		c.Duration = 10 * time.Minute
	}
	if len(c.Platforms) == 0 {
		c.Platforms = PlatformNames
	}
	if c.Lanes <= 0 {
		c.Lanes = 42
	}
	if c.Rate <= 0 {
		c.Rate = 8
	}
	if c.FirstToken == 0 {
		c.FirstToken = 50 * time.Millisecond
	}
	if c.FaultEvery == 0 {
		c.FaultEvery = time.Second
	}
	if c.DupShare == 0 {
		c.DupShare = 0.05
	}
	if c.BurstShare == 0 {
		c.BurstShare = 0.05
	}
	if c.TelegramGroupShare <= 0 || c.TelegramGroupShare > 1 {
		c.TelegramGroupShare = 1.0 / 3
	}
	if c.RestartEvery == 0 {
		c.RestartEvery = 90 * time.Second
	}
	if c.DiscordAbruptEvery == 0 {
		c.DiscordAbruptEvery = 2
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// Report is what the soak measured (spool-soak prints it as JSON).
type Report struct {
	Seconds  float64 `json:"seconds"`
	Lanes    int     `json:"lanes"`
	Messages int     `json:"messages"`
	Telegram int     `json:"telegram_messages"`
	Slack    int     `json:"slack_messages"`
	Discord  int     `json:"discord_messages"`
	NoDedup  bool    `json:"control_no_dedup,omitempty"`
	// Injected: duplicate deliveries, faults by kind, restarts.
	DuplicateDeliveries int            `json:"duplicate_deliveries"`
	Faults              map[string]int `json:"faults_injected"`
	Restarts            int            `json:"restarts"`
	QueuedNotices       int            `json:"queued_notices"`
	// TelegramLimited counts the fake Bot API's 429s for Telegram's own flood limits (1 call/s
	// per chat after a burst of 3, 20 new messages a minute per group), apart from the
	// injected ones: the adapter's pacing should keep it 0 (a restarted bot does not know
	// what the one before it sent a moment ago, so a restart may cost one).
	TelegramLimited int `json:"telegram_flood_429s"`
	// SlackLimited counts the Slack fake's 429s for Slack's own rate limits (chat.postMessage
	// one a second per channel after a burst of 3, Tier 3's 50 a minute for chat.update and
	// the history reads), apart from the injected ones: the adapter paces itself to stay under
	// them and waits out Retry-After when it does not.
	SlackLimited int `json:"slack_ratelimited_429s"`
	// TelegramDuringRestart counts the Telegram messages sent while the gateway restarted:
	// their added latency counts from the moment the new process was up (Slack's and
	// Discord's such messages count from their redelivery to it).
	TelegramDuringRestart int `json:"telegram_sent_during_restart"`
	// DiscordAbrupt counts the restarts that cut the Discord bot off (DiscordAbruptEvery), and
	// DiscordDuringRestart the Discord messages sent while it was off: they reach the next
	// gateway only through the channels' history, and their added latency counts from the
	// moment the new process was up.
	DiscordAbrupt        int `json:"discord_abrupt_restarts"`
	DiscordDuringRestart int `json:"discord_sent_during_restart"`
	// DiscordLimited counts the Discord fake's 429s for Discord's own rate limits (message
	// create and edit 5 per 5 s per channel, 50 requests a second per bot), apart from the
	// injected ones.
	DiscordLimited      int            `json:"discord_limit_429s"`
	DiscordLimitedRoute map[string]int `json:"discord_limit_429s_by_route,omitempty"`
	// Outcomes (targets: all 0).
	Lost            int            `json:"messages_lost"`
	LostBy          map[string]int `json:"messages_lost_by_platform,omitempty"`
	DuplicatedSends int            `json:"duplicated_sends"`
	DuplicatedTurns int            `json:"duplicated_turns"`
	Interleaved     int            `json:"turns_interleaved"`
	KeysMixed       int            `json:"keys_mixed_up"`
	// Samples name a few of the messages behind non-zero outcomes.
	Samples []string `json:"samples,omitempty"`
	// AddedLatency is inbound event → first attempt to post the reply, minus the model's
	// time to first token, for messages that found their chat idle (target p99 < 200 ms);
	// AddedLatencyAll is every answered message (queued ones wait for the turn before them,
	// recovered ones for a restart).
	AddedLatency    bench.Latency `json:"added_latency_idle"`
	AddedLatencyAll bench.Latency `json:"added_latency_all"`
	// AddedByPlatform is AddedLatency per platform.
	AddedByPlatform map[string]bench.Latency `json:"added_latency_idle_by_platform"`
	// Steps splits the idle messages' way to their first reply attempt (Config.Mark):
	// intake (delivery → inbox row written: Telegram's long poll included), queue (→ the lane
	// starts it), prepare (claim, session, hygiene, state), model (→ first delta, the model's
	// first token included), stream (→ the first send begins), adapter (→ the request reaches
	// the platform: pacing and HTTP).
	Steps map[string]bench.Latency `json:"steps_idle"`
	// StepsByPlatform is Steps for each platform's messages.
	StepsByPlatform map[string]map[string]bench.Latency `json:"steps_idle_by_platform"`
	// Slowest names the idle messages with the most added latency and their steps.
	Slowest    []string `json:"slowest_idle,omitempty"`
	TargetsMet bool     `json:"targets_met"`
}

// soakLane is one chat lane: one session key.
type soakLane struct {
	name            string // in every message: "SAY <name>#<n>"
	platform        string
	slack           bool
	channel, thread string
	tgChat, tgTopic int64 // Telegram: chat and forum topic
	tgType          string
	dm              bool
	users           []string
	key             string
	mu              sync.Mutex
	sent            []soakMsg
}

type soakMsg struct {
	n  int
	at time.Time // when the platform delivered it
}

var soakText = regexp.MustCompile(`SAY ([sdt]\d+)#(\d+)`)

// firstTokens records, per prompt, the model's time to first token.
type firstTokens struct {
	c     provider.Client
	mu    sync.Mutex
	t     map[string]time.Duration
	start map[string]time.Time // the first model call for the key
}

func (f *firstTokens) Name() string { return f.c.Name() }

func (f *firstTokens) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	key := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			if m := soakText.FindStringSubmatch(req.Messages[i].Content); m != nil {
				key = m[1] + "#" + m[2]
			}
			break
		}
	}
	start := time.Now()
	f.mu.Lock()
	if _, ok := f.start[key]; !ok {
		f.start[key] = start
	}
	f.mu.Unlock()
	var once sync.Once
	rec := func() {
		once.Do(func() {
			f.mu.Lock()
			if _, ok := f.t[key]; !ok {
				f.t[key] = time.Since(start)
			}
			f.mu.Unlock()
		})
	}
	var wrapped func(provider.Delta)
	if onDelta != nil {
		wrapped = func(d provider.Delta) { rec(); onDelta(d) }
	}
	resp, err := f.c.Chat(ctx, req, wrapped)
	rec()
	return resp, err
}

func (f *firstTokens) get(key string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t[key]
}

func (f *firstTokens) started(key string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.start[key]
	return t, ok
}

// marks records the router's steps per soak message (platform.Config.Mark): the first time
// of each step.
type marks struct {
	mu sync.Mutex
	m  map[string]map[string]time.Time // "name#n" → step → time
}

func (m *marks) mark(ev plat.Event, step string) {
	now := time.Now()
	mm := soakText.FindStringSubmatch(ev.Text)
	if mm == nil {
		return
	}
	k := mm[1] + "#" + mm[2]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m[k] == nil {
		m.m[k] = map[string]time.Time{}
	}
	if _, ok := m.m[k][step]; !ok {
		m.m[k][step] = now
	}
}

func (m *marks) get(k string) map[string]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[k]
}

// soakFakes are the platforms' local fakes (nil: not soaked).
type soakFakes struct {
	tg     *telegramfake.API
	sf     *slackfake.Server
	df     *discordfake.Server
	secret []byte
	marks  *marks
	log    *slog.Logger
}

// fresh gives every delivery a new event id (the control).
type fresh struct {
	h plat.Handler
	n *atomic.Int64
}

func (f fresh) Handle(ctx context.Context, ev plat.Event) error {
	ev.EventID = fmt.Sprintf("%s~%d", ev.EventID, f.n.Add(1))
	return f.h.Handle(ctx, ev)
}

type freshAdapter struct {
	plat.Adapter
	n *atomic.Int64
}

func (a freshAdapter) Run(ctx context.Context, h plat.Handler) error {
	return a.Adapter.Run(ctx, fresh{h, a.n})
}

// soakFault is one kind of injected fault: pending says how many of its method's faults
// are still queued, queue queues one (or does the fault at once).
type soakFault struct {
	name    string
	pending func() int
	queue   func()
}

// soakFaultKinds are the faults for the fakes in the run.
func soakFaultKinds(fk soakFakes) []soakFault {
	var out []soakFault
	if tg := fk.tg; tg != nil {
		pend := func(m string) func() int { return func() int { return tg.Pending(m) } }
		out = append(out,
			soakFault{"telegram_429_send", pend("sendMessage"), func() { tg.Fail("sendMessage", 1, telegramfake.Fault{RetryAfter: 1}) }},
			soakFault{"telegram_502_edit", pend("editMessageText"), func() { tg.Fail("editMessageText", 1, telegramfake.Fault{Status: 502}) }},
			soakFault{"telegram_500_getupdates", pend("getUpdates"), func() { tg.Fail("getUpdates", 1, telegramfake.Fault{Status: 500}) }},
			soakFault{"telegram_timeout_send", pend("sendMessage"), func() { tg.Fail("sendMessage", 1, telegramfake.Fault{Hang: true}) }})
	}
	if sf := fk.sf; sf != nil {
		pend := func(m string) func() int {
			return func() (n int) { sf.Inspect(func(v slackfake.View) { n = v.Faults(m) }); return n }
		}
		fail := func(m string, f slackfake.Fault) func() { return func() { sf.Fail(m, f) } }
		out = append(out,
			soakFault{"slack_429_post", pend("chat.postMessage"), fail("chat.postMessage", slackfake.Fault{Status: 429, RetryAfter: 1})},
			soakFault{"slack_429_update", pend("chat.update"), fail("chat.update", slackfake.Fault{Status: 429, RetryAfter: 1})},
			soakFault{"slack_500_post", pend("chat.postMessage"), fail("chat.postMessage", slackfake.Fault{Status: 500})},
			soakFault{"slack_502_after_post", pend("chat.postMessage"), fail("chat.postMessage", slackfake.Fault{Status: 502, After: true})},
			soakFault{"slack_timeout_post", pend("chat.postMessage"), fail("chat.postMessage", slackfake.Fault{Hang: true})})
	}
	if df := fk.df; df != nil {
		pend := func(m string) func() int {
			return func() (n int) { df.Inspect(func(v discordfake.View) { n = v.Faults(m) }); return n }
		}
		fail := func(m string, f discordfake.Fault) func() { return func() { df.Fail(m, f) } }
		var lastDrop time.Time
		out = append(out,
			soakFault{"discord_429_post", pend("POST messages"), fail("POST messages", discordfake.Fault{Status: 429, RetryAfter: 1})},
			soakFault{"discord_429_edit", pend("PATCH messages"), fail("PATCH messages", discordfake.Fault{Status: 429, RetryAfter: 1})},
			soakFault{"discord_500_after_post", pend("POST messages"), fail("POST messages", discordfake.Fault{Status: 500, After: true})},
			soakFault{"discord_503_post", pend("POST messages"), fail("POST messages", discordfake.Fault{Status: 503})},
			soakFault{"discord_drop", func() int {
				if time.Since(lastDrop) < 30*time.Second {
					return 1
				}
				return 0
			}, func() { lastDrop = time.Now(); df.Drop() }})
	}
	return out
}

// injectFault injects one fault of a kind picked at random, unless its method still has one
// queued: queued faults meet the next requests of their method, so a rate that ignores the
// traffic piles them up whenever requests pause (a restart, a client in backoff), and the
// backlog becomes an outage no platform has (the Telegram soak's "lost" messages: getUpdates
// failing through every retry for minutes late in long runs). It returns the kind injected.
func injectFault(kinds []soakFault, rng *rand.Rand) string {
	if len(kinds) == 0 {
		return ""
	}
	k := kinds[rng.IntN(len(kinds))]
	if k.pending() > 0 {
		return ""
	}
	k.queue()
	return k.name
}

// soakInstance is one gateway "process": store handle, agents, gateway, router, adapters.
type soakInstance struct {
	st     *sqlite.DB
	g      *gateway.Gateway
	srv    *http.Server
	url    string
	cancel context.CancelFunc
	done   chan error
}

func startSoakInstance(db string, model provider.Client, fk soakFakes, cfg Config, ids *atomic.Int64) (*soakInstance, error) {
	sf, df, secret := fk.sf, fk.df, fk.secret
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	in := &soakInstance{st: st}
	newAgent := func(wait time.Duration) (*agent.Agent, error) {
		return agent.New(agent.Deps{Store: st, Client: model, Config: agent.Config{Model: "fake", Source: gateway.Source,
			Lease: turn.Options{TTL: 30 * time.Second, Wait: wait}}})
	}
	runner, err := newAgent(time.Millisecond)
	if err != nil {
		st.Close()
		return nil, err
	}
	queue, err := newAgent(time.Minute)
	if err != nil {
		st.Close()
		return nil, err
	}
	if in.g, err = gateway.New(gateway.Deps{Store: st, Runner: runner, Queue: queue, Config: gateway.Config{Model: "fake", MaxConcurrent: 1 << 20}}); err != nil {
		st.Close()
		return nil, err
	}
	holder := store.NewHolder().String()
	r, err := plat.NewRouter(plat.RouterDeps{Store: st, Turns: in.g, Log: fk.log, Config: plat.Config{Model: "fake", Holder: holder,
		ClaimTTL: 15 * time.Second, RecoverEvery: 2 * time.Second, DrainTimeout: 300 * time.Millisecond, Mark: fk.marks.mark}})
	if err != nil {
		st.Close()
		return nil, err
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	var adapters []plat.Adapter
	var sl *slack.Adapter
	if fk.tg != nil {
		bot, err := telegram.New(telegram.Options{Token: tgSoakToken, BaseURL: fk.tg.URL, Locks: st, Holder: holder, Log: fk.log,
			HTTP: hc, PollTimeout: 2 * time.Second, LeaseTTL: 6 * time.Second})
		if err != nil {
			st.Close()
			return nil, err
		}
		adapters = append(adapters, bot)
	}
	if sf != nil {
		if sl, err = slack.New(slack.Config{Client: slack.NewClient(slack.ClientConfig{BaseURL: sf.URL, Token: sf.BotToken, HTTP: hc, Log: fk.log}),
			SigningSecret: secret, BotUser: sf.BotUser}); err != nil {
			st.Close()
			return nil, err
		}
		adapters = append(adapters, sl)
	}
	if df != nil {
		dc, err := discord.New(discord.Config{Token: df.Token, BaseURL: df.URL, HTTP: hc, Cursors: st, Log: fk.log})
		if err != nil {
			st.Close()
			return nil, err
		}
		adapters = append(adapters, dc)
	}
	var h plat.Handler = r
	if cfg.NoDedup {
		h = fresh{r, ids}
		for i, a := range adapters {
			adapters[i] = freshAdapter{a, ids}
		}
	}
	wh := http.Handler(http.NotFoundHandler())
	if sl != nil {
		_, wh = sl.Webhook(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, err
	}
	in.url = "http://" + ln.Addr().String()
	in.srv = &http.Server{Handler: wh, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = in.srv.Serve(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel, in.done = cancel, make(chan error, 1)
	go func() { in.done <- r.Serve(ctx, adapters...) }()
	return in, nil
}

func (in *soakInstance) stop() error {
	_ = in.srv.Close()
	in.cancel()
	err := <-in.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = in.g.Drain(ctx)
	if cerr := in.st.Close(); err == nil {
		err = cerr
	}
	return err
}

// Run runs the platform soak: real Slack and Discord adapters against the local fakes,
// a real Router on a SQLite file with the offline model, thousands of messages across chat
// lanes with injected faults, duplicate deliveries and gateway restarts; then it checks every
// message was answered exactly once, in its own chat, in order, in its lane's one session.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	rep := Report{Lanes: cfg.Lanes, NoDedup: cfg.NoDedup, Faults: map[string]int{}}
	if cfg.Dir == "" {
		return rep, errors.New("platform soak: a scratch directory is required")
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "platform soak: "+format+"\n", args...)
		}
	}
	fk := soakFakes{secret: []byte("soak-signing-secret"), marks: &marks{m: map[string]map[string]time.Time{}},
		log: slog.New(slog.DiscardHandler)}
	if cfg.Trace != nil {
		fk.log = slog.New(slog.NewTextHandler(cfg.Trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, p := range cfg.Platforms {
		switch p {
		case "telegram":
			fk.tg = telegramfake.Start(tgSoakToken)
			fk.tg.SetLimits(telegramfake.TelegramLimits)
			defer fk.tg.Close()
		case "slack":
			sf, err := slackfake.Start()
			if err != nil {
				return rep, err
			}
			defer sf.Close()
			sf.SetLimits(slackfake.SlackLimits)
			fk.sf = sf
		case "discord":
			df, err := discordfake.Start()
			if err != nil {
				return rep, err
			}
			defer df.Close()
			df.SetLimits(discordfake.DiscordLimits) // Discord's own limits: the adapter must keep them
			fk.df = df
		default:
			return rep, fmt.Errorf("platform soak: no platform %q (telegram, slack, discord)", p)
		}
	}
	sf, df, tg, secret := fk.sf, fk.df, fk.tg, fk.secret
	_ = secret
	model := &firstTokens{c: fake.New(fake.Config{Latency: cfg.FirstToken}), t: map[string]time.Duration{}, start: map[string]time.Time{}}
	db := filepath.Join(cfg.Dir, "platforms.db")
	var ids atomic.Int64
	var err error

	// lanes: the platforms in turn; on each, DMs, channels or groups (two users share one:
	// two lanes), threads or forum topics (two users share one lane; Telegram: two topics
	// share a forum)
	if df != nil {
		df.AddChannel("500000", discordfake.GuildText, "")
	}
	var lanes []*soakLane
	for i := range cfg.Lanes {
		np := len(cfg.Platforms)
		l := &soakLane{platform: cfg.Platforms[i%np]}
		l.slack = l.platform == "slack"
		kind := (i / np) % 3
		if l.platform == "telegram" {
			l.name = fmt.Sprintf("t%d", i)
			l.users = []string{fmt.Sprint(7000 + i)}
			a := plat.Address{Platform: "telegram", UserID: l.users[0]}
			switch kind {
			case 0:
				l.tgChat, l.tgType = int64(7000+i), "private"
				a.ChatType, a.ChatID = plat.DM, fmt.Sprint(l.tgChat)
			case 1: // two members per group, each their own session
				l.tgChat, l.tgType = int64(-1000-i/(6*np)), "supergroup"
				a.ChatType, a.ChatID = plat.Group, fmt.Sprint(l.tgChat)
			default: // two topics per forum, two users per topic
				l.tgChat, l.tgTopic, l.tgType = int64(-2000-i/(6*np)), int64(10+i), "supergroup"
				l.users = append(l.users, fmt.Sprint(7000+i+1))
				a = plat.Address{Platform: "telegram", ChatType: plat.Thread, ChatID: fmt.Sprint(l.tgChat), ThreadID: fmt.Sprint(l.tgTopic)}
			}
			l.channel, l.thread = fmt.Sprint(l.tgChat), fmt.Sprint(l.tgTopic)
			if l.key, err = plat.DefaultPolicy.Key(a); err != nil {
				return rep, err
			}
			lanes = append(lanes, l)
			continue
		}
		if l.slack {
			l.name = fmt.Sprintf("s%d", i)
			switch kind {
			case 0:
				l.channel, l.dm, l.users = fmt.Sprintf("D%04d", i), true, []string{fmt.Sprintf("U%04d", i)}
			case 1:
				l.channel, l.users = fmt.Sprintf("C%04d", i/6), []string{fmt.Sprintf("U%04d", i)}
			default:
				// threads spread over channels as the channel lanes are (i/6): Slack takes about
				// one post a second per channel, and every thread lane in one channel asked for
				// about that — with the notices and the faults' retries, a backlog no client
				// could clear once the fake enforced the limit
				l.channel, l.thread, l.users = fmt.Sprintf("C9%03d", i/6), fmt.Sprintf("1800000000.%06d", i), []string{fmt.Sprintf("U%04d", i), fmt.Sprintf("U%04d", i+1)}
			}
		} else {
			l.name = fmt.Sprintf("d%d", i)
			switch kind {
			case 0:
				l.channel, l.dm, l.users = fmt.Sprintf("60%04d", i), true, []string{fmt.Sprintf("4%04d", i)}
				df.AddChannel(l.channel, discordfake.DMChannel, "")
			case 1:
				l.channel, l.users = fmt.Sprintf("50%04d", i/6), []string{fmt.Sprintf("4%04d", i)}
				df.AddChannel(l.channel, discordfake.GuildText, "")
			default:
				l.channel, l.users = fmt.Sprintf("70%04d", i), []string{fmt.Sprintf("4%04d", i), fmt.Sprintf("4%04d", i+1)}
				df.AddChannel(l.channel, discordfake.PublicThread, "500000")
			}
		}
		a := plat.Address{Platform: "discord", ChatType: plat.Group, ChatID: l.channel, UserID: l.users[0]}
		switch {
		case l.slack:
			a = slack.Inbound{TeamID: sf.TeamID, Channel: l.channel, ChannelType: map[bool]string{true: "im", false: "channel"}[l.dm], ThreadTS: l.thread, User: l.users[0]}.Event().Address
		case l.dm:
			a.ChatType = plat.DM
		case kind == 2:
			a = plat.Address{Platform: "discord", ChatType: plat.Thread, ChatID: "500000", ThreadID: l.channel}
		}
		if l.key, err = plat.DefaultPolicy.Key(a); err != nil {
			return rep, err
		}
		lanes = append(lanes, l)
	}

	var cur atomic.Pointer[soakInstance]
	in, err := startSoakInstance(db, model, fk, cfg, &ids)
	if err != nil {
		return rep, err
	}
	cur.Store(in)
	var discordGate sync.RWMutex // held for writing while the gateway restarts: Discord delivers nothing to a bot that is away
	var discordCut atomic.Bool   // an abrupt restart: messages go on, into the channels' history only
	start := time.Now()
	end := start.Add(cfg.Duration)
	runCtx, stopRun := context.WithDeadline(ctx, end)
	defer stopRun()
	var wg sync.WaitGroup
	var dups atomic.Int64
	hc := &http.Client{Timeout: 10 * time.Second}

	send := func(l *soakLane, n int, rng *rand.Rand) {
		text := fmt.Sprintf("SAY %s#%d", l.name, n)
		user := l.users[n%len(l.users)]
		if l.platform == "telegram" {
			uid, _ := strconv.ParseInt(user, 10, 64)
			at := time.Now()
			tg.Push(l.tgChat, l.tgType, l.tgTopic, uid, text)
			l.mu.Lock()
			l.sent = append(l.sent, soakMsg{n: n, at: at})
			l.mu.Unlock()
			if rng.Float64() < cfg.DupShare {
				// Telegram redelivers what was not confirmed: the updates since the last
				// confirmed offset but one come again.
				if c := tg.Confirmed(); c > 1 {
					dups.Add(1)
					tg.Unconfirm(c - 1)
				}
			}
			return
		}
		if l.slack {
			ct := "channel"
			if l.dm {
				ct = "im"
			}
			body := sf.Event(&slackfake.Message{Channel: l.channel, ChannelType: ct, User: user, Text: text, ThreadTS: l.thread})
			deliver := func(retry int) (time.Time, bool) {
				for ; ; retry++ {
					at := time.Now()
					st, err := slackfake.Post(ctx, hc, cur.Load().url, secret, at, body, retry)
					if err == nil && st == http.StatusOK {
						return at, true
					}
					if ctx.Err() != nil {
						return time.Time{}, false
					}
					time.Sleep(100 * time.Millisecond) // Slack's retry (faster than its 1 min)
				}
			}
			at, ok := deliver(0)
			if !ok {
				return
			}
			l.mu.Lock()
			l.sent = append(l.sent, soakMsg{n: n, at: at})
			l.mu.Unlock()
			if rng.Float64() < cfg.DupShare {
				dups.Add(1)
				deliver(1)
			}
			return
		}
		discordGate.RLock()
		defer discordGate.RUnlock()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := df.Wait(wctx, func(v discordfake.View) bool { return v.Ready() >= 1 || discordCut.Load() })
		cancel()
		if err != nil {
			return
		}
		at := time.Now()
		id := df.Say(discordfake.UserMessage{ChannelID: l.channel, DM: l.dm, AuthorID: user, Username: "user" + user, Content: text})
		l.mu.Lock()
		l.sent = append(l.sent, soakMsg{n: n, at: at})
		l.mu.Unlock()
		if rng.Float64() < cfg.DupShare {
			dups.Add(1)
			df.Redeliver(id)
		}
	}
	mean := time.Duration(float64(len(lanes)) / cfg.Rate * float64(time.Second))
	for i, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
			for n := 1; ; n++ {
				wait := time.Duration(rng.ExpFloat64() * float64(mean))
				if l.platform == "telegram" && l.tgChat < 0 {
					wait = time.Duration(float64(wait) / cfg.TelegramGroupShare)
				}
				select {
				case <-runCtx.Done():
					return
				case <-time.After(wait):
				}
				send(l, n, rng)
				if rng.Float64() < cfg.BurstShare {
					n++
					send(l, n, rng)
				}
			}
		}()
	}
	// faults
	var faultMu sync.Mutex
	if cfg.FaultEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Seed, 1<<40))
			kinds := soakFaultKinds(fk)
			t := time.NewTicker(cfg.FaultEvery)
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
				}
				if k := injectFault(kinds, rng); k != "" {
					faultMu.Lock()
					rep.Faults[k]++
					faultMu.Unlock()
				}
			}
		}()
	}
	// restarts; outages are the times the gateway was down
	var restartErr error
	var outages [][2]time.Time
	if cfg.RestartEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(cfg.RestartEvery)
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
				}
				// every DiscordAbruptEvery-th restart (the first included) is a crash for Discord
				abrupt := df != nil && cfg.DiscordAbruptEvery > 0 && rep.Restarts%cfg.DiscordAbruptEvery == 0
				down := time.Now()
				if abrupt {
					df.Refuse(1 << 30) // its reconnects fail: nothing more is read
					discordCut.Store(true)
					df.Expire() // the socket cut, the session forgotten: no replay to the next one
				} else {
					discordGate.Lock()
				}
				reopen := func() {
					if abrupt {
						df.Accept()
						discordCut.Store(false)
					} else {
						discordGate.Unlock()
					}
				}
				old := cur.Load()
				err := old.stop()
				if tg != nil {
					if c := tg.Confirmed(); c > 3 {
						tg.Unconfirm(c - 3) // the last confirmations never reached Telegram
					}
				}
				var next *soakInstance
				if err == nil {
					if abrupt {
						df.Accept() // the new process may connect
					}
					next, err = startSoakInstance(db, model, fk, cfg, &ids)
				}
				if err != nil {
					restartErr = err
					reopen()
					stopRun()
					return
				}
				cur.Store(next)
				outages = append(outages, [2]time.Time{down, time.Now()})
				rep.Restarts++
				if abrupt {
					rep.DiscordAbrupt++
				}
				reopen()
				logf("restart %d at %s", rep.Restarts, time.Since(start).Round(time.Millisecond))
			}
		}()
	}
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	for waiting := true; waiting; {
		select {
		case <-runCtx.Done():
			waiting = false
		case <-progress.C:
			n := 0
			for _, l := range lanes {
				l.mu.Lock()
				n += len(l.sent)
				l.mu.Unlock()
			}
			logf("%s: %d messages sent", time.Since(start).Round(time.Second), n)
		}
	}
	wg.Wait()
	if restartErr != nil {
		return rep, fmt.Errorf("platform soak: restart: %w", restartErr)
	}
	rep.DuplicateDeliveries = int(dups.Load())

	// every reply text, where it was posted, when it was first tried
	type posted struct {
		where string
		at    time.Time
	}
	expected := map[string]*soakLane{}
	for _, l := range lanes {
		for _, m := range l.sent {
			expected[fmt.Sprintf("%s#%d", l.name, m.n)] = l
		}
	}
	where := func(l *soakLane) string { return l.channel + "/" + l.thread }
	collect := func() (map[string][]posted, int) {
		got := map[string][]posted{}
		queued := 0
		if tg != nil {
			for _, m := range tg.All() {
				if strings.Contains(m.Text, "Queued") {
					queued++
					continue
				}
				got[m.Text] = append(got[m.Text], posted{where: fmt.Sprintf("%d/%d", m.Chat, m.Thread), at: m.At})
			}
		}
		if sf != nil {
			sf.Inspect(func(v slackfake.View) {
				for _, p := range v.Messages("") {
					if strings.Contains(p.Text, "Queued") {
						queued++
						continue
					}
					got[p.Text] = append(got[p.Text], posted{where: p.Channel + "/" + p.ThreadTS, at: p.At})
				}
			})
		}
		if df != nil {
			df.Inspect(func(v discordfake.View) {
				queued += v.ReactionsAdded() // Discord's users are told by a ⏳ reaction
				for _, p := range v.Messages("") {
					if strings.Contains(p.Content, "Queued") {
						queued++
						continue
					}
					w := p.ChannelID + "/"
					got[p.Content] = append(got[p.Content], posted{where: w, at: p.At})
				}
			})
		}
		return got, queued
	}
	// the last messages get up to two minutes to be answered (recovery after a restart waits
	// out the dead process's claim)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, _ := collect()
		missing := 0
		for k := range expected {
			if len(got[k]) == 0 {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := cur.Load().stop(); err != nil {
		logf("final stop: %v", err)
	}
	rep.Seconds = time.Since(start).Seconds()
	got, queued := collect()
	rep.QueuedNotices = queued
	if tg != nil {
		rep.TelegramLimited = tg.Limited("")
	}
	if sf != nil {
		sf.Inspect(func(v slackfake.View) { rep.SlackLimited = v.Limited("") })
	}
	if df != nil {
		df.Inspect(func(v discordfake.View) {
			rep.DiscordLimited, rep.DiscordLimitedRoute = v.Limited(""), v.LimitedByRoute()
		})
	}
	firstTry := map[string]time.Time{}
	for k, l := range expected {
		var t time.Time
		var ok bool
		switch l.platform {
		case "telegram":
			t, ok = tg.FirstAttempt(k)
		case "slack":
			sf.Inspect(func(v slackfake.View) { t, ok = v.FirstAttempt(k) })
		case "discord":
			df.Inspect(func(v discordfake.View) { t, ok = v.FirstAttempt(k) })
		}
		if ok {
			firstTry[k] = t
		}
	}
	var idle, all []time.Duration
	idleBy := map[string][]time.Duration{}
	type slow struct {
		added time.Duration
		what  string
	}
	var slowest []slow
	steps := map[string][]time.Duration{}
	stepsBy := map[string]map[string][]time.Duration{}
	for _, l := range lanes {
		rep.Messages += len(l.sent)
		switch l.platform {
		case "telegram":
			rep.Telegram += len(l.sent)
		case "slack":
			rep.Slack += len(l.sent)
		default:
			rep.Discord += len(l.sent)
		}
		var prevAnswered time.Time
		for i, m := range l.sent {
			k := fmt.Sprintf("%s#%d", l.name, m.n)
			ps := got[k]
			if len(ps) == 0 {
				rep.Lost++
				if rep.LostBy == nil {
					rep.LostBy = map[string]int{}
				}
				rep.LostBy[l.platform]++
				if len(rep.Samples) < 10 {
					var seen []string
					mk := fk.marks.get(k)
					for _, st := range []string{"recorded", "started", "prepared", "first_delta", "flush"} {
						if t, ok := mk[st]; ok {
							seen = append(seen, fmt.Sprintf("%s +%s", st, t.Sub(m.at).Round(time.Millisecond)))
						}
					}
					if len(seen) == 0 {
						seen = []string{"never recorded"}
					}
					rep.Samples = append(rep.Samples, fmt.Sprintf("%s lost (sent at %s; %s)", k, m.at.Sub(start).Round(time.Millisecond), strings.Join(seen, ", ")))
				}
				prevAnswered = time.Time{}
				continue
			}
			rep.DuplicatedSends += len(ps) - 1
			if len(ps) > 1 && len(rep.Samples) < 10 {
				rep.Samples = append(rep.Samples, fmt.Sprintf("%s sent %d times, at %s", k, len(ps), strings.Join(func() []string {
					var o []string
					for _, p := range ps {
						o = append(o, p.at.Sub(start).Round(time.Millisecond).String())
					}
					return o
				}(), ", ")))
			}
			for _, p := range ps {
				if p.where != where(l) {
					rep.KeysMixed++
				}
			}
			ft, ok := firstTry[k]
			if !ok {
				continue
			}
			// A Telegram update sent while the gateway restarts waits on Telegram's side until
			// the new process polls; Slack's and Discord's deliveries fail (or are held) then
			// and count from the delivery that reached the new process. For the same measure,
			// such an update counts from the moment the new process was up.
			// A Discord message sent during an abrupt restart (graceful ones send none) reaches
			// the new process from the channel's history: it counts from the same moment.
			from := m.at
			if l.platform == "telegram" || l.platform == "discord" {
				for _, o := range outages {
					if !from.Before(o[0]) && from.Before(o[1]) {
						from = o[1]
						if l.platform == "telegram" {
							rep.TelegramDuringRestart++
						} else {
							rep.DiscordDuringRestart++
						}
					}
				}
			}
			added := ft.Sub(from) - model.get(k)
			all = append(all, added)
			if i == 0 || (!prevAnswered.IsZero() && prevAnswered.Before(m.at)) {
				idle = append(idle, added)
				idleBy[l.platform] = append(idleBy[l.platform], added)
				mk := fk.marks.get(k)
				cs, called := model.started(k)
				var split []string
				if mk != nil && called && !mk["recorded"].IsZero() && !mk["started"].IsZero() && !mk["prepared"].IsZero() &&
					!mk["first_delta"].IsZero() && !mk["flush"].IsZero() {
					for _, st := range []struct {
						name     string
						from, to time.Time
					}{
						{"intake", m.at, mk["recorded"]}, {"queue", mk["recorded"], mk["started"]},
						{"prepare", mk["started"], mk["prepared"]}, {"agent", mk["prepared"], cs},
						{"model_beyond_first_token", cs.Add(model.get(k)), mk["first_delta"]},
						{"stream", mk["first_delta"], mk["flush"]}, {"adapter", mk["flush"], ft},
					} {
						steps[st.name] = append(steps[st.name], st.to.Sub(st.from))
						if stepsBy[l.platform] == nil {
							stepsBy[l.platform] = map[string][]time.Duration{}
						}
						stepsBy[l.platform][st.name] = append(stepsBy[l.platform][st.name], st.to.Sub(st.from))
						if d := st.to.Sub(st.from); d >= time.Millisecond {
							split = append(split, fmt.Sprintf("%s %s", st.name, d.Round(time.Millisecond)))
						}
					}
				}
				slowest = append(slowest, slow{added, fmt.Sprintf("%s %s (sent at %s; %s)", k, added.Round(time.Millisecond),
					m.at.Sub(start).Round(time.Millisecond), strings.Join(split, ", "))})
			}
			prevAnswered = ps[0].at
		}
	}
	rep.AddedLatency, rep.AddedLatencyAll = bench.Summarize(idle), bench.Summarize(all)
	rep.AddedByPlatform, rep.Steps = map[string]bench.Latency{}, map[string]bench.Latency{}
	for p, xs := range idleBy {
		rep.AddedByPlatform[p] = bench.Summarize(xs)
	}
	for n, xs := range steps {
		rep.Steps[n] = bench.Summarize(xs)
	}
	rep.StepsByPlatform = map[string]map[string]bench.Latency{}
	for p, by := range stepsBy {
		rep.StepsByPlatform[p] = map[string]bench.Latency{}
		for n, xs := range by {
			rep.StepsByPlatform[p][n] = bench.Summarize(xs)
		}
	}
	sort.Slice(slowest, func(i, j int) bool { return slowest[i].added > slowest[j].added })
	for _, s := range slowest[:min(len(slowest), 12)] {
		rep.Slowest = append(rep.Slowest, s.what)
	}

	// the store: each lane's key has one session whose transcript is its own messages, each
	// question followed by its own answer, each once
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		return rep, err
	}
	defer st.Close()
	for _, l := range lanes {
		ls, err := st.ListSessions(context.Background(), store.ListOptions{SessionKey: l.key, IncludeChildren: true, Limit: 100})
		if err != nil {
			return rep, err
		}
		if len(ls) > 1 {
			rep.KeysMixed += len(ls) - 1 // one lane, several sessions
		}
		seen := map[string]bool{}
		for _, s := range ls {
			ms, err := st.Conversation(context.Background(), s.ID, store.ViewDisplay)
			if err != nil {
				return rep, err
			}
			pending := ""
			for _, m := range ms {
				switch {
				case m.Role == store.RoleUser:
					mm := soakText.FindStringSubmatch(m.Content)
					if mm == nil {
						continue
					}
					if mm[1] != l.name {
						rep.KeysMixed++
					}
					k := mm[1] + "#" + mm[2]
					if seen[k] {
						rep.DuplicatedTurns++
					}
					seen[k] = true
					if pending != "" {
						rep.Interleaved++ // a question whose answer never came before the next
					}
					pending = k
				case m.Role == store.RoleAssistant && len(m.ToolCalls) == 0 && pending != "":
					if m.Content != pending {
						rep.Interleaved++
					}
					pending = ""
				}
			}
		}
	}
	rep.TargetsMet = rep.Lost == 0 && rep.DuplicatedSends == 0 && rep.DuplicatedTurns == 0 && rep.Interleaved == 0 &&
		rep.KeysMixed == 0 && rep.AddedLatency.P99 < 200
	if !rep.TargetsMet {
		return rep, fmt.Errorf("%w: targets missed: %d lost, %d duplicated sends, %d duplicated turns, %d interleaved, %d keys mixed up, added latency p99 %.0f ms", bench.ErrVerify,
			rep.Lost, rep.DuplicatedSends, rep.DuplicatedTurns, rep.Interleaved, rep.KeysMixed, rep.AddedLatency.P99)
	}
	return rep, nil
}
