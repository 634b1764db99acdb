package discord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/spoolhq/spool/gateway/platform"
)

// Platform is the adapter's platform name.
const Platform = "discord"

// Limits: Discord's 2,000 characters; channel sends are about 5 per 5 s.
const (
	MaxChars         = 2000
	DefaultEditEvery = 1200 * time.Millisecond
)

func init() {
	platform.Register(Platform, func(s platform.Settings, env platform.Env) (platform.Adapter, error) {
		if s.Token == "" {
			return nil, errors.New("discord: no bot token (platforms.discord.token_env names an empty variable)")
		}
		return New(Config{Token: s.Token, BaseURL: s.BaseURL, Cursors: env.Cursors, Log: env.Log})
	})
}

// Config configures an Adapter.
type Config struct {
	Token string // the bot token, without "Bot "
	// BaseURL replaces https://discord.com/ ("" = Discord's own).
	BaseURL string
	HTTP    *http.Client // its Transport is wrapped (nil: a 30 s timeout client)
	Sleep   platform.Sleeper
	// Retries bounds 5xx / network retries (0: 3; <0: none).
	Retries int
	Limits  platform.Limits
	// StopGrace is how long Run keeps reading the socket after its context ends, handing on
	// what Discord sent before it saw the bot go (0: 500 ms; <0: none): a message already
	// written to the socket when the bot closes it is lost — the next process identifies as a
	// new session, which Discord does not replay it to.
	StopGrace time.Duration
	// Cursors keep, per channel, the newest message id handed on (the store; nil: no
	// catch-up). On every new gateway session (the start, and a reconnect Discord did not let
	// resume) the adapter reads each known channel's history after it and hands on what it
	// missed: Discord does not replay to a new session what it sent while no bot was connected.
	Cursors platform.Cursors
	// GlobalRate bounds the adapter's REST requests in any second (0: 45, under Discord's 50
	// per bot; <0: none). discordgo paces each route's bucket from its headers, but not the
	// global limit: a catch-up after a restart reads every channel at once. A catch-up takes
	// at most 4/9 of it (20 a second), leaving the rest to replies.
	GlobalRate int
	// Creates is a channel's message-create limit the adapter keeps to in front of discordgo
	// (zero: Discord's 5 in any 5 s; N < 0: none, and no pacing of reactions either), and CreateReserve how many of them only a
	// reply's first message may take (0: 1; < 0: none): a queued notice, a reply's later chunk
	// or a resend goes only while that many are left after it (a retry keeps its first
	// attempt's kind: doCreate).
	Creates       CreateLimit
	CreateReserve int
	// Log hears the catch-up's steps at debug level and its failures as warnings, and
	// discordgo's own log lines (nil: none).
	Log *slog.Logger
}

// CreateLimit is a per-channel limit: N creates in any window of Per.
type CreateLimit struct {
	N   int
	Per time.Duration
}

// DefaultCreates is Discord's per-channel message-create limit (its buckets say 5 per 5 s).
var DefaultCreates = CreateLimit{N: 5, Per: 5 * time.Second}

// Adapter is one Discord bot (platform.Adapter).
type Adapter struct {
	s       *discordgo.Session
	sleep   platform.Sleeper
	retries int
	limits  platform.Limits

	grace time.Duration
	token string

	inflight sync.RWMutex // held for reading while a message is handed on; Run waits for it
	mu       sync.Mutex
	h        platform.Handler
	threads  map[string]chanInfo
	counters platform.Counters
	runCtx   context.Context

	cursors platform.Cursors
	cur     cursorState
	log     *slog.Logger
	global  pacer
	creates *createPacer
	// reactions paces each channel's reactions (the ⏳ mark on and off) to one in any
	// ReactionEvery plus the pacer's margin: discordgo's own pacing of them (1 per 200 ms) is
	// faster than Discord's headers allow; nil with Creates.N < 0 (no pacing)
	reactions *createPacer
	// catchPace keeps a catch-up to under half the global window, so replies going out while
	// every channel's history is read after a restart do not wait behind it.
	catchPace pacer
}

// pacer allows at most n requests in any second (bursts included): Discord's global limit.
type pacer struct {
	mu   sync.Mutex
	n    int // 0: none
	sent []time.Time
	next int
}

// wait takes a request's place, waiting (for real) until the n-th last one is a second old.
func (p *pacer) wait(ctx context.Context) error {
	for {
		p.mu.Lock()
		if p.n <= 0 {
			p.mu.Unlock()
			return nil
		}
		now := time.Now()
		if len(p.sent) < p.n {
			p.sent = append(p.sent, now)
			p.mu.Unlock()
			return nil
		}
		d := p.sent[p.next].Add(time.Second).Sub(now)
		if d <= 0 {
			p.sent[p.next] = now
			p.next = (p.next + 1) % p.n
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		if err := platform.Sleep(ctx, d); err != nil {
			return err
		}
	}
}

type chanInfo struct {
	thread bool
	dm     bool
	parent string
}

var _ platform.Adapter = (*Adapter)(nil)

// New returns an adapter; Run connects it.
func New(cfg Config) (*Adapter, error) {
	if cfg.Token == "" {
		return nil, errors.New("discord: a bot token is required")
	}
	s, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.BaseURL != "" {
		base := cfg.BaseURL
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		c := *hc
		c.Transport = rebase{to: base, rt: rt}
		hc = &c
	}
	s.Client = hc
	s.ShouldRetryOnRateLimit = false // waited out here, through the sleeper
	s.ShouldReconnectOnError = true
	s.SyncEvents = true // one chat's messages reach the Handler in order
	s.MaxRestRetries = 0
	s.LogLevel = discordgo.LogWarning // its debug lines hold the IDENTIFY payload (the token)
	s.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent
	if cfg.Sleep == nil {
		cfg.Sleep = platform.Sleep
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = 3
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Limits.MaxChars <= 0 || cfg.Limits.MaxChars > MaxChars {
		cfg.Limits.MaxChars = MaxChars
	}
	if cfg.Limits.EditEvery <= 0 {
		cfg.Limits.EditEvery = DefaultEditEvery
	}
	switch {
	case cfg.StopGrace == 0:
		cfg.StopGrace = 500 * time.Millisecond
	case cfg.StopGrace < 0:
		cfg.StopGrace = 0
	}
	switch {
	case cfg.GlobalRate == 0:
		cfg.GlobalRate = 45
	case cfg.GlobalRate < 0:
		cfg.GlobalRate = 0
	}
	a := &Adapter{s: s, sleep: cfg.Sleep, global: pacer{n: cfg.GlobalRate}, catchPace: pacer{n: cfg.GlobalRate * 4 / 9}, retries: cfg.Retries, limits: cfg.Limits, grace: cfg.StopGrace,
		threads: map[string]chanInfo{}, cursors: cfg.Cursors, log: cfg.Log, token: cfg.Token}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.Creates.N == 0:
		cfg.Creates = DefaultCreates
	case cfg.Creates.N < 0:
		cfg.Creates = CreateLimit{}
	}
	switch {
	case cfg.CreateReserve == 0:
		cfg.CreateReserve = 1
	case cfg.CreateReserve < 0:
		cfg.CreateReserve = 0
	}
	a.creates = newCreatePacer(cfg.Creates.N, cfg.Creates.Per, cfg.CreateReserve, platform.Sleeper(cfg.Sleep), cfg.Log)
	if cfg.Creates.N > 0 { // pacing on
		a.reactions = newCreatePacer(1, ReactionEvery, 0, platform.Sleeper(cfg.Sleep), nil)
	}
	a.cur.init()
	s.AddHandler(a.onMessage)
	s.AddHandler(a.onConnect)
	s.AddHandler(a.onReady)
	s.AddHandler(a.onGuildCreate)
	return a, nil
}

// onConnect closes a connection made while no Run is active. discordgo's reconnect loop, once
// started by a dropped socket, does not stop when the session is closed: if Run ended while it
// was retrying, its next success would leave a connection open that nobody reads and that
// keeps a bot session on Discord. Connect is emitted inside Open, under the session's lock, so
// the close runs after Open returns.
func (a *Adapter) onConnect(s *discordgo.Session, _ *discordgo.Connect) {
	a.mu.Lock()
	idle := a.h == nil
	a.mu.Unlock()
	if idle {
		a.count("closed_stray_connection")
		go func() { _ = s.Close() }()
	}
}

// rebase sends requests for https://discord.com/ to another base URL.
type rebase struct {
	to string
	rt http.RoundTripper
}

func (r rebase) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL.String()
	if !strings.HasPrefix(u, discordgo.EndpointDiscord) {
		return r.rt.RoundTrip(req)
	}
	nu, err := req.URL.Parse(r.to + strings.TrimPrefix(u, discordgo.EndpointDiscord))
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.URL = nu
	req.Host = nu.Host
	return r.rt.RoundTrip(req)
}

// Platform implements platform.Adapter.
func (a *Adapter) Platform() string { return Platform }

// Limits implements platform.Outbound.
func (a *Adapter) Limits() platform.Limits { return a.limits }

// Counts returns the adapter's counters.
func (a *Adapter) Counts() map[string]int64 { return a.counters.Snapshot() }

func (a *Adapter) count(k string) { a.counters.Add(k) }

// Run implements platform.Adapter: it opens the gateway connection (discordgo keeps it,
// resuming after drops) and hands messages to h until ctx ends.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error {
	a.mu.Lock()
	if a.h != nil {
		a.mu.Unlock()
		return errors.New("discord: adapter already running")
	}
	a.h, a.runCtx = h, ctx
	a.mu.Unlock()
	hookDiscordgoLog(a)
	defer unhookDiscordgoLog(a)
	bg := a.startBackground(ctx)
	defer bg.stop()
	opened, err := a.open(ctx)
	if err != nil || !opened {
		a.mu.Lock()
		a.h = nil
		a.mu.Unlock()
		return err
	}
	<-ctx.Done()
	// Messages Discord sent before it saw the bot go are still arriving (or waiting in the
	// socket): they are read and handed on for StopGrace before the socket closes.
	_ = platform.Sleep(context.Background(), a.grace)
	err = a.s.Close()
	// A message read off the socket before the close is still being handed on: Run returns
	// after it was (the router records it before its store closes; Discord never delivers it
	// again), and hands on nothing after.
	a.inflight.Lock()
	a.mu.Lock()
	a.h = nil
	a.mu.Unlock()
	a.inflight.Unlock()
	if err != nil && !errors.Is(err, discordgo.ErrWSNotFound) {
		return fmt.Errorf("discord: close: %w", err)
	}
	return nil
}

// open connects the gateway, retrying a failed start (Discord or the network away, a 5xx
// from GET /gateway, a refused handshake) with backoff from 500 ms to a minute until it
// connects or ctx ends. Errors no retry can fix end it at once: a refused token or intents
// (close codes 4004, 4010-4014) and a 401/403 from the REST API.
func (a *Adapter) open(ctx context.Context) (bool, error) {
	backoff := 500 * time.Millisecond
	for {
		err := a.s.Open()
		if err == nil {
			return true, nil
		}
		if permanent(err) {
			return false, fmt.Errorf("discord: open the gateway: %w", err)
		}
		a.count("open_retries")
		if a.sleep(ctx, backoff) != nil {
			return false, nil // stopped while Discord was away: not a failure
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// permanent reports a start-up failure that retrying cannot fix.
func permanent(err error) bool {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code == 4004 || ce.Code >= 4010 && ce.Code <= 4014
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode == http.StatusUnauthorized || re.Response.StatusCode == http.StatusForbidden
	}
	return false
}

func (a *Adapter) onMessage(s *discordgo.Session, m *discordgo.MessageCreate) {
	a.inflight.RLock()
	defer a.inflight.RUnlock()
	a.mu.Lock()
	h, ctx := a.h, a.runCtx
	a.mu.Unlock()
	if h == nil {
		return
	}
	if !a.person(m.Message) {
		a.cur.saw(m.ID)
		return
	}
	a.cur.begin(m.ID) // before it counts as seen: the watermark stays before it until handed on
	defer a.cur.end(m.ID)
	a.cur.saw(m.ID)
	if a.cur.hold(m.Message) {
		a.count("held_for_catch_up") // its channel's history is being read: it follows in order
		return
	}
	a.handOn(ctx, h, m.Message, m.GuildID == "", "received")
}

// person reports whether m is a person's message that becomes a turn: not the bot's own, not
// another bot's, a plain message or a reply.
func (a *Adapter) person(m *discordgo.Message) bool {
	if m.Author == nil || m.Author.Bot {
		return false
	}
	if self := a.cur.botID(); self != "" && m.Author.ID == self {
		return false
	}
	if s := a.s; s.State != nil && s.State.User != nil && m.Author.ID == s.State.User.ID {
		return false
	}
	return m.Type == discordgo.MessageTypeDefault || m.Type == discordgo.MessageTypeReply
}

// handOn makes m an Event and hands it to h (a DM when dm), retrying a Handler that cannot
// record it a few times; the channel's cursor moves past m once h took it, and stays before it
// when h never did (the next catch-up reads it again). It reports whether h took it.
func (a *Adapter) handOn(ctx context.Context, h platform.Handler, m *discordgo.Message, dm bool, counter string) bool {
	ev := platform.Event{Address: platform.Address{Platform: Platform, ChatType: platform.Group,
		ChatID: m.ChannelID, UserID: m.Author.ID}, EventID: m.ID, MessageID: m.ID,
		UserName: m.Author.Username, Text: m.Content, At: m.Timestamp}
	if dm {
		ev.ChatType = platform.DM
	} else {
		// Whether the channel is a thread decides the key: a guess would put a thread's
		// message in its channel's session (context leaking between them), so the lookup is
		// retried, and a message whose channel stays unknown is not handed on.
		var ci chanInfo
		var err error
		for attempt := 0; attempt < 6; attempt++ {
			if ci, err = a.channel(context.WithoutCancel(ctx), m.ChannelID); err == nil {
				break
			}
			if a.sleep(context.WithoutCancel(ctx), time.Duration(attempt+1)*500*time.Millisecond) != nil {
				break
			}
		}
		if err != nil {
			a.log.Warn("discord: message dropped: its channel is unknown", "channel", m.ChannelID, "message", m.ID, "err", err)
			a.count("dropped_unknown_channel")
			a.cur.failed(m.ChannelID, m.ID)
			return false
		}
		if ci.thread {
			ev.ChatType, ev.ChatID, ev.ThreadID = platform.Thread, ci.parent, m.ChannelID
		}
	}
	// A message read off the socket is recorded even while Run is stopping: the gateway will
	// not deliver it again.
	for attempt := 0; ; attempt++ {
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := h.Handle(hctx, ev)
		cancel()
		if err == nil {
			a.count(counter)
			a.cur.handed(m.ChannelID, m.ID)
			return true
		}
		if attempt >= 5 {
			a.log.Warn("discord: message not accepted", "channel", m.ChannelID, "message", m.ID, "err", err)
			a.count("not_accepted")
			a.cur.failed(m.ChannelID, m.ID)
			return false
		}
		if a.sleep(context.WithoutCancel(ctx), time.Duration(attempt+1)*200*time.Millisecond) != nil {
			a.cur.failed(m.ChannelID, m.ID)
			return false
		}
	}
}

// channel says whether id is a thread and its parent: discordgo's state, else GET /channels/{id}.
func (a *Adapter) channel(ctx context.Context, id string) (chanInfo, error) {
	a.mu.Lock()
	ci, ok := a.threads[id]
	a.mu.Unlock()
	if ok {
		return ci, nil
	}
	var ch *discordgo.Channel
	if a.s.State != nil {
		ch, _ = a.s.State.Channel(id)
	}
	if ch == nil {
		raw, err := a.do(ctx, "get channel", func() ([]byte, error) {
			return a.s.RequestWithBucketID(http.MethodGet, discordgo.EndpointChannel(id), nil, discordgo.EndpointChannel(id), discordgo.WithContext(ctx))
		})
		if err != nil {
			return chanInfo{}, fmt.Errorf("discord: channel %s: %w", id, err)
		}
		ch = &discordgo.Channel{}
		if err := json.Unmarshal(raw, ch); err != nil {
			return chanInfo{}, fmt.Errorf("discord: channel %s: unreadable answer", id)
		}
	}
	ci = chanInfo{thread: ch.IsThread(), parent: ch.ParentID,
		dm: ch.Type == discordgo.ChannelTypeDM || ch.Type == discordgo.ChannelTypeGroupDM}
	a.mu.Lock()
	a.threads[id] = ci
	a.mu.Unlock()
	return ci, nil
}

// target is the channel a reply to an address goes to: the thread when there is one.
func target(to platform.Address) string {
	if to.ThreadID != "" {
		return to.ThreadID
	}
	return to.ChatID
}

// Send implements platform.Outbound: POST /channels/{id}/messages with a nonce Discord
// enforces, so a retried create never makes two messages.
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	var nonce string // ≤ 25 characters
	if k, ok := platform.SendKeyFrom(ctx); ok {
		nonce = k.Nonce() // the same for every attempt at this chunk, in any process
	} else {
		var n [9]byte
		_, _ = rand.Read(n[:])
		nonce = hex.EncodeToString(n[:])
	}
	ch := target(to)
	ep := discordgo.EndpointChannelMessages(ch)
	body := map[string]any{"content": text, "nonce": nonce, "enforce_nonce": true, "allowed_mentions": noMentions}
	raw, err := a.doCreate(ctx, ch, createKind(ctx), func() ([]byte, error) {
		return a.s.RequestWithBucketID(http.MethodPost, ep, body, discordgo.EndpointChannelMessages(ch), discordgo.WithContext(ctx))
	})
	if err != nil {
		return "", err
	}
	var m discordgo.Message
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		return "", fmt.Errorf("discord: create message: unreadable answer")
	}
	return m.ID, nil
}

// noMentions is the allowed_mentions of every message the bot creates or edits: parse
// nothing, so no @everyone, @here, user or role mention in a reply notifies anyone. Without it
// on an edit, Discord would parse the edited text's mentions (a streamed reply is an edit).
var noMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}

// Edit implements platform.Outbound: PATCH /channels/{id}/messages/{message}, with no mention
// parsed (noMentions) as on a create.
func (a *Adapter) Edit(ctx context.Context, to platform.Address, messageID, text string) error {
	ch := target(to)
	_, err := a.do(ctx, "edit message", func() ([]byte, error) {
		_, err := a.s.ChannelMessageEditComplex(&discordgo.MessageEdit{Channel: ch, ID: messageID, Content: &text,
			AllowedMentions: noMentions}, discordgo.WithContext(ctx))
		return nil, err
	})
	return err
}

// QueuedReaction is the reaction that marks a person's message as queued behind a running turn
// (platform.Marker).
const QueuedReaction = "⏳"

// ReactionEvery is the least time between two of the bot's reactions in one channel (adding
// and removing together), as Discord's headers report it (the figure is not documented).
const ReactionEvery = 250 * time.Millisecond

// MarkQueued implements platform.Marker: PUT
// /channels/{id}/messages/{message}/reactions/⏳/@me, which spends none of the channel's five
// message creates in five seconds (a notice message would, ahead of the replies' own) and is
// idempotent on Discord. A bot without the Add Reactions permission gets a 403, and the Router
// sends the notice as a message instead.
func (a *Adapter) MarkQueued(ctx context.Context, to platform.Address, messageID string) error {
	ch := target(to)
	_, err := a.doPaced(ctx, "add reaction", a.reactionTurn(ctx, ch), func() ([]byte, error) {
		return nil, a.s.MessageReactionAdd(ch, messageID, QueuedReaction, discordgo.WithContext(ctx))
	})
	return err
}

// UnmarkQueued implements platform.Marker: DELETE the bot's own ⏳ reaction.
func (a *Adapter) UnmarkQueued(ctx context.Context, to platform.Address, messageID string) error {
	ch := target(to)
	_, err := a.doPaced(ctx, "remove reaction", a.reactionTurn(ctx, ch), func() ([]byte, error) {
		return nil, a.s.MessageReactionRemove(ch, messageID, QueuedReaction, "@me", discordgo.WithContext(ctx))
	})
	return err
}

// reactionTurn waits for a reaction's turn in channel ch (nil: pacing off).
func (a *Adapter) reactionTurn(ctx context.Context, ch string) func() error {
	if a.reactions == nil {
		return nil
	}
	return func() error { return a.reactions.wait(ctx, ch, CreateNotice) }
}

// Error is a REST call that failed for good.
type Error struct {
	Op     string
	Status int    // HTTP status (0: no answer)
	Code   int    // Discord's JSON error code (10008 Unknown Message ...)
	Msg    string // Discord's message
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("discord %s: %s", e.Op, e.Msg)
	}
	return fmt.Sprintf("discord %s: HTTP %d: %s (code %d)", e.Op, e.Status, e.Msg, e.Code)
}

// do runs one REST call: a 429 waited out for retry_after (however long), 5xx and transport
// failures retried up to a.retries times, anything else an *Error.
func (a *Adapter) do(ctx context.Context, op string, call func() ([]byte, error)) ([]byte, error) {
	return a.doPaced(ctx, op, nil, call)
}

// doCreate is do for a message create of kind k into channel ch: every attempt waits for its
// turn in the channel's creates (createPacer), and an attempt after a failed one keeps the
// first's kind. (Retries were paced below the reserve at first; the soak's trace showed
// why not: a reply's create answered 500 after the post waits for its retry to finish, the
// turn with it, and the lane's next message queued behind that turn for seconds.)
func (a *Adapter) doCreate(ctx context.Context, ch string, k Create, call func() ([]byte, error)) ([]byte, error) {
	return a.doPaced(ctx, "create message", func() error { return a.creates.wait(ctx, ch, k) }, call)
}

func (a *Adapter) doPaced(ctx context.Context, op string, pace func() error, call func() ([]byte, error)) ([]byte, error) {
	failures := 0
	for {
		tp := time.Now()
		if pace != nil {
			if err := pace(); err != nil {
				return nil, fmt.Errorf("discord %s: %w", op, err)
			}
		}
		t0 := time.Now()
		if err := a.global.wait(ctx); err != nil {
			return nil, fmt.Errorf("discord %s: %w", op, err)
		}
		t1 := time.Now()
		raw, err := call()
		if d := time.Since(t1); d > 300*time.Millisecond || t1.Sub(t0) > 100*time.Millisecond {
			// the call's own time includes discordgo's wait for its route's bucket
			a.log.Debug("discord: slow call", "op", op, "channel_wait", t0.Sub(tp), "global_wait", t1.Sub(t0), "call", d, "err", err)
		}
		if err == nil {
			return raw, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("discord %s: %w", op, context.Cause(ctx))
		}
		var wait time.Duration
		var rl *discordgo.RateLimitError
		var re *discordgo.RESTError
		switch {
		case errors.As(err, &rl):
			wait = rl.RetryAfter
			a.count("rate_limited")
		case errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500:
			e := &Error{Op: op, Status: re.Response.StatusCode}
			if re.Message != nil {
				e.Code, e.Msg = re.Message.Code, re.Message.Message
			}
			return nil, e
		default: // 5xx, timeouts, refused connections
			failures++
			if failures > a.retries {
				e := &Error{Op: op, Msg: "no answer"}
				if errors.As(err, &re) && re.Response != nil {
					e.Status = re.Response.StatusCode
					if re.Message != nil {
						e.Code, e.Msg = re.Message.Code, re.Message.Message
					}
				}
				return nil, e
			}
			wait = time.Duration(failures) * 500 * time.Millisecond
			a.count("retried")
		}
		if err := a.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("discord %s: %w", op, err)
		}
	}
}

// Resolve implements platform.Resolver: GET /channels/{id} says whether the chat is a DM, a
// thread (then its parent is the chat) or a channel.
func (a *Adapter) Resolve(ctx context.Context, chatID, threadID string) (platform.Address, error) {
	ch, err := a.s.Channel(chatID, discordgo.WithContext(ctx))
	if err != nil {
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Message != nil {
			return platform.Address{}, fmt.Errorf("discord: channel %s: %s", chatID, re.Message.Message)
		}
		return platform.Address{}, fmt.Errorf("discord: channel %s: %w", chatID, err)
	}
	ad := platform.Address{Platform: Platform, ChatType: platform.Group, ChatID: chatID, ThreadID: threadID}
	switch {
	case ch.Type == discordgo.ChannelTypeDM:
		ad.ChatType, ad.ThreadID = platform.DM, ""
	case ch.IsThread():
		ad.ChatType, ad.ChatID, ad.ThreadID = platform.Thread, ch.ParentID, chatID
	case threadID != "":
		ad.ChatType = platform.Thread
	}
	return ad, nil
}
