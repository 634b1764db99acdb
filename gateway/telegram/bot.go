package telegram

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/store"
)

func init() {
	platform.Register("telegram", func(s platform.Settings, env platform.Env) (platform.Adapter, error) {
		return New(Options{Token: s.Token, BaseURL: s.BaseURL, Mode: s.Mode, WebhookURL: s.WebhookURL,
			WebhookSecret: s.WebhookSecret, Leases: env.Leases, Holder: env.Holder, Log: env.Log})
	})
}

// Options configure a Bot. Zero fields take defaults.
type Options struct {
	Token string
	// BaseURL is the Bot API's base (DefaultBaseURL when empty).
	BaseURL string
	// Mode is "polling" (default) or "webhook".
	Mode          string
	WebhookURL    string
	WebhookSecret string
	// Leases and Holder hold the one-poller-per-bot lease (required for polling).
	Leases platform.Leases
	Holder string
	Log    *slog.Logger
	// HTTP is the HTTP client (default: one with a 75 s timeout, above the long poll).
	HTTP *http.Client
	// PollTimeout is getUpdates' long-poll timeout (default 50 s).
	PollTimeout time.Duration
	// LeaseTTL is the poller lease's lifetime (default 30 s; renewed at a third of it).
	LeaseTTL time.Duration
	// Retries bounds retries of 5xx, timeouts and network errors per call (default 6: the
	// first at once, the others backing off from 500 ms, about 8 to 16 s in all).
	Retries int
	// EditEvery is the least time between edits of a streamed reply in one chat (default 1 s).
	EditEvery time.Duration
	// Sleep waits out retry_after and retry backoffs (default: a timer); tests inject one.
	// The lease's renewals and standby checks use the wall clock.
	Sleep platform.Sleeper
	// OnStandby is called each time polling waits because another process holds the lease.
	OnStandby func()
}

// Bot is a Telegram bot connection (platform.WebhookAdapter).
type Bot struct {
	c    *Client
	o    Options
	log  *slog.Logger
	name string // the poller lease's name

	mu    sync.Mutex
	chats map[string]*bucket // the per-chat cadence
	now   func() time.Time   // the cadence's clock (tests fix it)
}

// bucket is one chat's allowance of calls: Burst at most, one more every EditEvery; the calls
// waiting for it, in the order they go; and, for a group, when its last new messages went.
type bucket struct {
	tokens  float64   // the calls left at at, after the calls that went (0 to Burst)
	at      time.Time // when tokens was counted: the last call that went
	waiting []*slot   // replies' new messages first, then edits and notices, each in the order they came
	sends   []time.Time
}

// slot is one waiting call's turn; the bot's lock guards at.
type slot struct {
	at     time.Time
	urgent bool // a reply's new message
}

// call is what a paced call is: a reply's new message, a notice (a new message that may wait
// behind replies: "queued"), an edit.
type call int

const (
	callReply call = iota
	callNotice
	callEdit
)

// Burst is how many calls to one chat go at once before the cadence applies: a reply's first
// message does not wait behind the last edits of the reply before it (another user's in a
// group, the queued notice of a double text). Telegram tolerates short bursts and answers a
// sustained excess with 429 retry_after, which Send and Edit wait out.
const Burst = 3

// MaxChars is Telegram's message limit.
const MaxChars = 4096

// New returns a bot. The token is required; it is never logged.
func New(o Options) (*Bot, error) {
	if o.Token == "" {
		return nil, errors.New("telegram: no bot token (set the variable platforms.telegram.token_env names)")
	}
	switch o.Mode {
	case "":
		o.Mode = "polling"
	case "polling", "webhook":
	default:
		return nil, fmt.Errorf("telegram: mode %q is not polling or webhook", o.Mode)
	}
	if o.Mode == "webhook" && (o.WebhookURL == "" || o.WebhookSecret == "") {
		return nil, errors.New("telegram: webhook mode needs a webhook URL and a secret")
	}
	if o.Mode == "polling" && o.Leases == nil {
		return nil, errors.New("telegram: polling needs the store's locks (one poller per bot)")
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 75 * time.Second}
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 50 * time.Second
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.Retries <= 0 {
		o.Retries = 6
	}
	if o.EditEvery <= 0 {
		o.EditEvery = time.Second
	}
	if o.Sleep == nil {
		o.Sleep = platform.Sleep
	}
	if o.Holder == "" {
		o.Holder = "telegram"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	sum := sha256.Sum256([]byte(o.Token))
	b := &Bot{o: o, log: o.Log, chats: map[string]*bucket{}, now: time.Now, name: "platform-poller:telegram:" + hex.EncodeToString(sum[:8]),
		c: &Client{base: o.BaseURL, token: o.Token, http: o.HTTP, sleep: o.Sleep, retries: o.Retries}}
	return b, nil
}

// Platform implements platform.Adapter.
func (b *Bot) Platform() string { return "telegram" }

// Limits implements platform.Outbound.
func (b *Bot) Limits() platform.Limits {
	return platform.Limits{MaxChars: MaxChars, EditEvery: b.o.EditEvery}
}

// Telegram's objects, as far as spool reads them.
type (
	update struct {
		UpdateID int64    `json:"update_id"`
		Message  *message `json:"message"`
	}
	message struct {
		MessageID       int64  `json:"message_id"`
		MessageThreadID int64  `json:"message_thread_id"`
		IsTopicMessage  bool   `json:"is_topic_message"`
		From            *user  `json:"from"`
		Chat            chat   `json:"chat"`
		Date            int64  `json:"date"`
		Text            string `json:"text"`
		Caption         string `json:"caption"`
	}
	user struct {
		ID        int64  `json:"id"`
		IsBot     bool   `json:"is_bot"`
		FirstName string `json:"first_name"`
		Username  string `json:"username"`
	}
	chat struct {
		ID      int64  `json:"id"`
		Type    string `json:"type"`
		IsForum bool   `json:"is_forum"`
	}
)

// event turns an update into an Event; false for updates spool does not answer (no text, a
// bot's own message, edits and other kinds).
func event(u update) (platform.Event, bool) {
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot {
		return platform.Event{}, false
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	if strings.TrimSpace(text) == "" {
		return platform.Event{}, false
	}
	chatID := strconv.FormatInt(m.Chat.ID, 10)
	a := platform.Address{Platform: "telegram", ChatID: chatID, UserID: strconv.FormatInt(m.From.ID, 10)}
	switch m.Chat.Type {
	case "private":
		a.ChatType = platform.DM
	case "channel":
		a.ChatType = platform.Channel
	default:
		a.ChatType = platform.Group
		if m.IsTopicMessage && m.MessageThreadID != 0 {
			a.ChatType, a.ThreadID = platform.Thread, strconv.FormatInt(m.MessageThreadID, 10)
		}
	}
	name := m.From.Username
	if name == "" {
		name = m.From.FirstName
	}
	ev := platform.Event{Address: a, EventID: chatID + ":" + strconv.FormatInt(m.MessageID, 10),
		MessageID: strconv.FormatInt(m.MessageID, 10), UserName: name, Text: text}
	if m.Date > 0 {
		ev.At = time.Unix(m.Date, 0)
	}
	return ev, true
}

type sendParams struct {
	ChatID          string `json:"chat_id"`
	MessageThreadID int64  `json:"message_thread_id,omitempty"`
	MessageID       int64  `json:"message_id,omitempty"`
	Text            string `json:"text"`
	ParseMode       string `json:"parse_mode,omitempty"`
}

func (b *Bot) params(to platform.Address, text string) sendParams {
	p := sendParams{ChatID: to.ChatID, Text: ToHTML(text), ParseMode: "HTML"}
	if to.ThreadID != "" {
		p.MessageThreadID, _ = strconv.ParseInt(to.ThreadID, 10, 64)
	}
	return p
}

// badMarkup reports a 400 about entities: the HTML did not parse, so plain text goes instead.
func badMarkup(err error) bool {
	var api *APIError
	return errors.As(err, &api) && api.Code == 400 && strings.Contains(strings.ToLower(api.Description), "parse entities")
}

// GroupPerMinute is how many new messages a bot sends to one group in a minute: Telegram
// allows 20 (beyond it, 429); edits are not counted against it.
const GroupPerMinute = 20

// groupMargin keeps a group's 21st message a little past the minute since the 1st, so the
// requests' trip to Telegram cannot make two of them look closer than they were sent.
const groupMargin = 250 * time.Millisecond

// pace gives a call to one chat its turn: at most Burst at once, then one per EditEvery
// (Telegram allows about one message a second per chat, with short bursts), and in a group
// at most GroupPerMinute new messages a minute. A streamed reply, a queued notice and other
// users' replies in the same group share the chat's allowance, and a reply's new message
// comes first: its user sees nothing until it goes, while an edit only brings a message
// already shown up to date (the stream's next edit carries whatever text came meanwhile) and
// a notice only says a message waits. So an edit or a notice never takes the chat's last
// calls: it goes only while ReplyReserve more are left after it, which new replies may take
// at once.
// A reply that finds even that one spent goes before the edits and notices waiting, and
// they move back behind it.
//
// The allowance counts only the calls that went: a waiting call's slot is where the
// allowance, refilling, reaches its turn after the calls ahead of it; it is worked out again
// whenever a call comes or wakes, so a call that is late (or leaves) never lets the ones
// behind it go closer than Telegram takes.
func (b *Bot) pace(ctx context.Context, chat string, c call) error {
	group := c != callEdit && strings.HasPrefix(chat, "-") // a group (or a channel): a minute's quota of new messages
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	k := b.chats[chat]
	if k == nil {
		b.forgetFull(now)
		k = &bucket{tokens: Burst, at: now}
		b.chats[chat] = k
	}
	t0 := now
	me := &slot{urgent: c == callReply}
	k.enqueue(me)
	defer func() { k.waiting = slices.DeleteFunc(k.waiting, func(x *slot) bool { return x == me }) }()
	sleep := func(d time.Duration) error {
		b.mu.Unlock()
		err := b.o.Sleep(ctx, d)
		b.mu.Lock()
		now = latest(b.now(), now.Add(d)) // (a test's clock may stand still)
		return err
	}
	for {
		now = latest(now, k.at)
		b.reslot(k, now)
		if me.at.After(now) {
			if err := sleep(me.at.Sub(now)); err != nil {
				return err
			}
			continue
		}
		if group {
			if free := k.minuteFree(now); free.After(now) {
				// the group had its minute's new messages: out of the line until it allows one
				k.waiting = slices.DeleteFunc(k.waiting, func(x *slot) bool { return x == me })
				if err := sleep(free.Sub(now)); err != nil {
					return err
				}
				k.enqueue(me)
				continue
			}
			k.sends = append(k.sends, now)
		}
		k.tokens = min(Burst, k.tokens+float64(now.Sub(k.at))/float64(b.o.EditEvery)) - 1
		k.at = now
		if c != callEdit || now.After(t0) {
			b.log.Debug("telegram: paced", "chat", chat, "call", callNames[c], "waited", now.Sub(t0), "left", k.tokens, "waiting", len(k.waiting)-1)
		}
		return nil
	}
}

var callNames = [...]string{"reply", "notice", "edit"}

// enqueue puts a call in the line: a reply after the replies waiting, anything else last.
func (k *bucket) enqueue(me *slot) {
	i := len(k.waiting)
	if me.urgent {
		if i = slices.IndexFunc(k.waiting, func(x *slot) bool { return !x.urgent }); i < 0 {
			i = len(k.waiting)
		}
	}
	k.waiting = slices.Insert(k.waiting, i, me)
}

// ReplyReserve is how many of a chat's calls an edit or a notice leaves for replies' new
// messages: two, so a reply that comes within a second of the one before it in its chat (two
// users of a group, a DM's next message) finds a call too. A single reply's edits lose
// nothing by it: the router streams them at most one per EditEvery, what the allowance
// refills.
const ReplyReserve = 2

// reslot gives the waiting calls their slots, in order from now: each goes when the chat's
// allowance, refilling, has one call for it — a reply — or one and the ReplyReserve it
// leaves — an edit or a notice. Under b.mu.
func (b *Bot) reslot(k *bucket, now time.Time) {
	left := min(Burst, k.tokens+float64(now.Sub(k.at))/float64(b.o.EditEvery))
	t := now
	for _, x := range k.waiting {
		need := float64(1 + min(ReplyReserve, Burst-1)) // an edit or a notice leaves calls for replies
		if x.urgent {
			need = 1
		}
		if left < need {
			t = t.Add(time.Duration(math.Ceil((need - left) * float64(b.o.EditEvery))))
			left = need
		}
		x.at = t
		left--
	}
}

// forgetFull drops the chats whose allowance is full again and that wait for nothing (as good
// as new), once there are many. Under b.mu.
func (b *Bot) forgetFull(now time.Time) {
	if len(b.chats) <= 10000 {
		return
	}
	for c, x := range b.chats {
		if len(x.waiting) == 0 && !slices.ContainsFunc(x.sends, func(t time.Time) bool { return t.Add(groupWindow).After(now) }) &&
			x.tokens+float64(now.Sub(x.at))/float64(b.o.EditEvery) >= Burst {
			delete(b.chats, c)
		}
	}
}

// groupWindow is the span in which a group takes GroupPerMinute new messages: a minute, and
// a margin so the requests' trip to Telegram cannot make two look closer than they went.
const groupWindow = time.Minute + groupMargin

// minuteFree is the first time from at when one more new message fits the group's minute:
// fewer than GroupPerMinute others within groupWindow before it. Under b.mu.
func (k *bucket) minuteFree(at time.Time) time.Time {
	k.sends = slices.DeleteFunc(k.sends, func(x time.Time) bool { return !x.Add(groupWindow).After(at) })
	if n := len(k.sends); n >= GroupPerMinute {
		slices.SortFunc(k.sends, func(x, y time.Time) int { return x.Compare(y) })
		return latest(at, k.sends[n-GroupPerMinute].Add(groupWindow))
	}
	return at
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sendCall is what a Send is for its chat's allowance: a reply's new message (urgent), or
// one that leaves the chat's last calls — the router's one-off notice about an event (ledger
// chunk -1), and a reply to a message whose user was told it was queued (SendKey.Noticed: they
// have seen the notice, while a reply to a message that found its chat idle is the first
// thing its user sees).
func sendCall(ctx context.Context) call {
	if k, ok := platform.SendKeyFrom(ctx); ok && (k.Chunk < 0 || k.Noticed) {
		return callNotice
	}
	return callReply
}

// Send implements platform.Outbound.
func (b *Bot) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	kind := sendCall(ctx)
	pace := func(ctx context.Context) error { return b.pace(ctx, to.ChatID, kind) }
	p := b.params(to, text)
	var m message
	err := b.c.paced(ctx, "sendMessage", p, &m, pace)
	if badMarkup(err) {
		p.Text, p.ParseMode = text, ""
		err = b.c.paced(ctx, "sendMessage", p, &m, pace)
	}
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(m.MessageID, 10), nil
}

// Edit implements platform.Outbound. "message is not modified" is success.
func (b *Bot) Edit(ctx context.Context, to platform.Address, messageID, text string) error {
	pace := func(ctx context.Context) error { return b.pace(ctx, to.ChatID, callEdit) }
	p := b.params(to, text)
	p.MessageThreadID = 0
	id, err := strconv.ParseInt(messageID, 10, 64)
	if err != nil {
		return fmt.Errorf("telegram: message id %q is not a number", messageID)
	}
	p.MessageID = id
	err = b.c.paced(ctx, "editMessageText", p, nil, pace)
	if badMarkup(err) {
		p.Text, p.ParseMode = text, ""
		err = b.c.paced(ctx, "editMessageText", p, nil, pace)
	}
	var api *APIError
	if errors.As(err, &api) && api.Code == 400 && strings.Contains(api.Description, "message is not modified") {
		return nil
	}
	return err
}

// Run implements platform.Adapter: long polling under the bot's lease, or, in webhook mode,
// registering the webhook and waiting.
func (b *Bot) Run(ctx context.Context, h platform.Handler) error {
	if b.o.Mode == "webhook" {
		err := b.c.call(ctx, "setWebhook", map[string]any{"url": b.o.WebhookURL, "secret_token": b.o.WebhookSecret,
			"allowed_updates": []string{"message"}}, nil)
		if err != nil {
			return fmt.Errorf("set the webhook: %w", err)
		}
		<-ctx.Done()
		return nil
	}
	for ctx.Err() == nil {
		l, err := b.o.Leases.AcquireNamedLease(ctx, b.name, b.o.Holder, b.o.LeaseTTL)
		if err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrLeaseHeld) {
			b.log.Warn("telegram: poller lease", "err", err)
		}
		if err != nil {
			if b.o.OnStandby != nil {
				b.o.OnStandby()
			}
			if platform.Sleep(ctx, b.o.LeaseTTL/3) != nil {
				break
			}
			continue
		}
		b.log.Debug("telegram: poller lease acquired")
		err = b.poll(ctx, h, l)
		_ = b.o.Leases.ReleaseNamedLease(context.WithoutCancel(ctx), l)
		if err != nil && ctx.Err() == nil {
			b.log.Warn("telegram: polling stopped, retrying", "err", err)
			// The API failed through a call's retries (an outage): try again after a second,
			// for as long as it lasts; Telegram keeps the updates.
			if b.o.Sleep(ctx, time.Second) != nil {
				break
			}
		}
	}
	return nil
}

// poll runs getUpdates while the lease holds. The offset moves past an update only after
// Handle accepted it; a failed Handle stops the batch, so the update comes again.
func (b *Bot) poll(ctx context.Context, h platform.Handler, l store.NamedLease) error {
	lctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	go func() {
		// Keep the lease while polling; losing it stops the poll at once.
		for {
			if platform.Sleep(lctx, b.o.LeaseTTL/3) != nil {
				return
			}
			var err error
			l, err = b.o.Leases.RenewNamedLease(lctx, l, b.o.LeaseTTL)
			if lctx.Err() != nil {
				return
			}
			if err != nil {
				lost(fmt.Errorf("poller lease lost: %v", err))
				return
			}
		}
	}()
	var offset int64
	for lctx.Err() == nil {
		var ups []update
		params := map[string]any{"timeout": int(b.o.PollTimeout / time.Second), "allowed_updates": []string{"message"}}
		if offset > 0 {
			params["offset"] = offset
		}
		if err := b.c.call(lctx, "getUpdates", params, &ups); err != nil {
			if lctx.Err() != nil {
				return context.Cause(lctx)
			}
			return err
		}
		if len(ups) > 0 {
			b.log.Debug("telegram: updates", "offset", offset, "first", ups[0].UpdateID, "last", ups[len(ups)-1].UpdateID)
		}
		for _, u := range ups {
			if ev, ok := event(u); ok {
				if err := h.Handle(lctx, ev); err != nil {
					return fmt.Errorf("handle update %d: %w", u.UpdateID, err)
				}
			}
			offset = u.UpdateID + 1
		}
	}
	if c := context.Cause(lctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return nil
}

// Resolve implements platform.Resolver (a handoff's target): getChat says what the chat is —
// private (a DM), a group or supergroup (with a thread: a topic, which only a forum has) or a
// channel — so the lane's key is the one its own messages get. chatID may be an @username;
// the key takes the numeric id Telegram answers.
func (b *Bot) Resolve(ctx context.Context, chatID, threadID string) (platform.Address, error) {
	if threadID != "" {
		if n, err := strconv.ParseInt(threadID, 10, 64); err != nil || n <= 0 {
			return platform.Address{}, fmt.Errorf("telegram: topic id %q is not a positive number", threadID)
		}
	}
	var c chat
	if err := b.c.call(ctx, "getChat", map[string]any{"chat_id": chatID}, &c); err != nil {
		return platform.Address{}, fmt.Errorf("telegram: look up chat %s: %w", chatID, err)
	}
	id := strconv.FormatInt(c.ID, 10)
	a := platform.Address{Platform: "telegram", ChatID: id}
	switch c.Type {
	case "private":
		a.ChatType, a.UserID = platform.DM, id
	case "group", "supergroup":
		a.ChatType = platform.Group
		if threadID != "" {
			a.ChatType, a.ThreadID = platform.Thread, threadID
		}
	case "channel":
		a.ChatType = platform.Channel
	default:
		return platform.Address{}, fmt.Errorf("telegram: chat %s is of type %q, not private, group, supergroup or channel", chatID, c.Type)
	}
	if threadID != "" && !c.IsForum {
		return platform.Address{}, fmt.Errorf("telegram: chat %s (%s) is not a forum, so it has no topic %s", chatID, c.Type, threadID)
	}
	return a, nil
}

// WebhookPath is where spool serve mounts the webhook.
const WebhookPath = "/platforms/telegram/webhook"

// Webhook implements platform.WebhookAdapter: updates POSTed by Telegram, accepted only with
// the secret token; a non-2xx answer makes Telegram retry.
func (b *Bot) Webhook(h platform.Handler) (string, http.Handler) {
	return WebhookPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if b.o.WebhookSecret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(b.o.WebhookSecret)) != 1 {
			http.Error(w, "bad secret token", http.StatusUnauthorized)
			return
		}
		raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		var u update
		if err := json.Unmarshal(raw, &u); err != nil {
			http.Error(w, "not a Telegram update", http.StatusBadRequest)
			return
		}
		if ev, ok := event(u); ok {
			if err := h.Handle(r.Context(), ev); err != nil {
				b.log.Warn("telegram: webhook update not recorded", "update", u.UpdateID, "err", err)
				http.Error(w, "not recorded, retry", http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
}
