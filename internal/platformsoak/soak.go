package platformsoak

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
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
		bot, err := telegram.New(telegram.Options{Token: tgSoakToken, BaseURL: fk.tg.URL, Leases: st, Holder: holder, Log: fk.log,
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
