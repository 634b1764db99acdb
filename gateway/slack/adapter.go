package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
)

// Platform is the adapter's platform name.
const Platform = "slack"

// WebhookPattern is where spool serve mounts the Events API endpoint.
const WebhookPattern = "/platforms/slack/events"

// Default limits: Slack takes 40,000 characters but asks for at most 4,000 per message, and
// chat.update is a Tier 3 method (about 50 a minute).
const (
	DefaultMaxChars  = 4000
	DefaultEditEvery = 1200 * time.Millisecond
)

// handleTimeout bounds recording an event before the ack (Slack gives up after 3 s).
const handleTimeout = 2500 * time.Millisecond

func init() {
	platform.Register(Platform, func(s platform.Settings, env platform.Env) (platform.Adapter, error) {
		if s.Token == "" {
			return nil, errors.New("slack: no bot token (platforms.slack.token_env names an empty variable)")
		}
		mode := s.Mode
		switch {
		case mode == "" && s.AppToken != "":
			mode = "socket"
		case mode == "":
			mode = "events"
		}
		switch mode {
		case "socket":
			if s.AppToken == "" {
				return nil, errors.New("slack: socket mode needs an app-level token (platforms.slack.app_token_env)")
			}
		case "events":
			if s.SigningSecret == "" {
				return nil, errors.New("slack: the Events API needs a signing secret (platforms.slack.signing_secret_env)")
			}
		default:
			return nil, fmt.Errorf("slack: mode %q is not events or socket", mode)
		}
		return New(Config{Client: NewClient(ClientConfig{BaseURL: s.BaseURL, Token: s.Token, AppToken: s.AppToken}),
			SigningSecret: []byte(s.SigningSecret), Socket: mode == "socket"})
	})
}

// Config configures an Adapter.
type Config struct {
	Client *Client
	// SigningSecret verifies Events API requests (empty: the endpoint refuses everything).
	SigningSecret []byte
	// Socket makes Run hold a Socket Mode connection (else Run only waits: events come over
	// HTTP to Webhook's handler).
	Socket bool
	// Now is the clock signatures are checked against (nil: time.Now).
	Now func() time.Time
	// BotUser is the bot's own user id (its messages are ignored); empty: auth.test in Run.
	BotUser string
	// Limits (zero fields: DefaultMaxChars, DefaultEditEvery).
	Limits platform.Limits
}

// Adapter is one Slack app (platform.WebhookAdapter): an Events API endpoint and/or a Socket
// Mode connection for intake, chat.postMessage / chat.update for replies.
type Adapter struct {
	c      *Client
	secret []byte
	socket bool
	now    func() time.Time
	limits platform.Limits

	bot atomic.Value // string

	counters platform.Counters
}

var _ platform.WebhookAdapter = (*Adapter)(nil)

// New returns an adapter.
func New(cfg Config) (*Adapter, error) {
	if cfg.Client == nil {
		return nil, errors.New("slack: a client is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Limits.MaxChars <= 0 {
		cfg.Limits.MaxChars = DefaultMaxChars
	}
	if cfg.Limits.EditEvery <= 0 {
		cfg.Limits.EditEvery = DefaultEditEvery
	}
	a := &Adapter{c: cfg.Client, secret: cfg.SigningSecret, socket: cfg.Socket, now: cfg.Now, limits: cfg.Limits}
	a.bot.Store(cfg.BotUser)
	return a, nil
}

// Platform implements platform.Adapter.
func (a *Adapter) Platform() string { return Platform }

// Limits implements platform.Outbound.
func (a *Adapter) Limits() platform.Limits { return a.limits }

// Client is the adapter's Web API client.
func (a *Adapter) Client() *Client { return a.c }

func (a *Adapter) botUser() string { s, _ := a.bot.Load().(string); return s }

// Counts returns the adapter's counters (received, rejected, not_accepted, socket_reconnect ...).
func (a *Adapter) Counts() map[string]int64 { return a.counters.Snapshot() }

func (a *Adapter) count(k string) { a.counters.Add(k) }

// Run implements platform.Adapter: it learns the bot's own user id (auth.test), then holds a Socket Mode
// connection (reconnecting) until ctx ends, or, for the Events API, just waits.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error {
	if a.botUser() == "" {
		// Only to ignore the bot's own messages (they also carry a bot_id): a Slack that does
		// not answer now does not stop intake.
		if u, _, err := a.c.AuthTest(ctx); err == nil {
			a.bot.Store(u)
		} else if ctx.Err() != nil {
			return nil
		} else if ae := (*APIError)(nil); errors.As(err, &ae) && (ae.Code == "invalid_auth" || ae.Code == "not_authed" || ae.Code == "token_revoked" || ae.Code == "account_inactive") {
			return fmt.Errorf("slack: the bot token is refused: %w", err)
		} else {
			a.count("auth_test_failed")
		}
	}
	if !a.socket {
		<-ctx.Done()
		return nil
	}
	return a.runSocket(ctx, h)
}

// Webhook implements platform.WebhookAdapter: the Events API endpoint.
func (a *Adapter) Webhook(h platform.Handler) (string, http.Handler) {
	return WebhookPattern, &events{a: a, h: h}
}

// Send implements platform.Outbound: chat.postMessage into to.ChatID (thread to.ThreadID).
// A reply's first message may take the channel's last posts; the router's notices, a reply's
// later chunks, resends of a post whose outcome was never recorded and the replies to
// messages whose users were told they were queued leave them (Post).
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	text = escape(text)
	var m Message
	var err error
	if k, ok := platform.SendKeyFrom(ctx); ok {
		m, err = a.c.PostAs(ctx, to.ChatID, to.ThreadID, text, k.Nonce(), k.Unsure, postKind(k))
	} else {
		m, err = a.c.PostMessage(ctx, to.ChatID, to.ThreadID, text)
	}
	if err != nil {
		return "", err
	}
	return m.TS, nil
}

// postKind is what a send is for its channel's allowance.
func postKind(k platform.SendKey) Post {
	switch {
	case k.Chunk < 0:
		return PostNotice // the router's one-off notice about an event (ledger chunk -1)
	case k.Unsure:
		return PostResend
	case k.Chunk > 0:
		return PostChunk
	case k.Noticed:
		return PostQueued // its user was told the message was queued
	}
	return PostReply
}

// Edit implements platform.Outbound: chat.update, escaped as Send is.
func (a *Adapter) Edit(ctx context.Context, to platform.Address, messageID, text string) error {
	return a.c.Update(ctx, to.ChatID, messageID, escape(text))
}

// escaper replaces the three characters Slack's formatting reserves with their entities.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escape makes text (a model's reply, a notice) literal Slack text: &, < and > become &amp;,
// &lt; and &gt;, as Slack's formatting rules ask, so no special mention (<!channel>,
// <!here>, <@U…>), channel link or disguised link (<https://…|label>) written in the text
// survives; Slack shows the characters themselves. Send and Edit escape every chunk, so a
// streamed edit is escaped like the first post. (Escaping follows splitting, so a 4,000
// character chunk may grow up to 20,000: within the 40,000 Slack takes.)
func escape(text string) string { return escaper.Replace(text) }

// deliver hands an inbound message to h within the ack budget; nil means "ack it".
func (a *Adapter) deliver(h platform.Handler, in Inbound) error {
	ctx, cancel := context.WithTimeout(context.Background(), handleTimeout)
	defer cancel()
	if err := h.Handle(ctx, in.Event()); err != nil {
		a.count("not_accepted")
		return err
	}
	a.count("received")
	return nil
}

// Event is the platform event of a Slack message. Its EventID is the message's identity
// (team, channel, ts): every redelivery of the event carries the same event_id and the same
// ts, and a mention that arrives both as message and as app_mention (two event_ids) is one
// message, so it runs one turn.
func (in Inbound) Event() platform.Event {
	ct := platform.Group
	switch {
	case in.DM():
		ct = platform.DM
	case in.ThreadTS != "":
		ct = platform.Thread
	}
	ev := platform.Event{Address: platform.Address{Platform: Platform, ChatType: ct, ScopeID: in.TeamID,
		ChatID: in.Channel, ThreadID: in.ThreadTS, UserID: in.User},
		EventID: in.TeamID + ":" + in.Channel + ":" + in.TS, MessageID: in.TS, Text: in.Text}
	if sec, frac, ok := splitTS(in.TS); ok {
		ev.At = time.Unix(sec, frac*1000).UTC()
	}
	return ev
}

func splitTS(ts string) (sec, usec int64, ok bool) {
	var s, u int64
	if _, err := fmt.Sscanf(ts, "%d.%d", &s, &u); err != nil {
		return 0, 0, false
	}
	return s, u, true
}

// Resolve implements platform.Resolver: the workspace from auth.test, a D… channel as a DM,
// a thread_ts as a Thread of the channel, anything else a Group.
func (a *Adapter) Resolve(ctx context.Context, chatID, threadID string) (platform.Address, error) {
	u, team, err := a.c.AuthTest(ctx)
	if err != nil {
		return platform.Address{}, err
	}
	a.bot.Store(u)
	in := Inbound{TeamID: team, Channel: chatID, ThreadTS: threadID, ChannelType: "channel"}
	if strings.HasPrefix(chatID, "D") {
		in.ChannelType = "im"
	}
	return in.Event().Address, nil
}
