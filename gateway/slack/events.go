package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
)

// MaxSkew is how far a request's timestamp may be from the adapter's clock.
const MaxSkew = 5 * time.Minute

// maxEventBody bounds an Events API request (Slack's are a few KB).
const maxEventBody = 1 << 20

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("slack: missing X-Slack-Signature or X-Slack-Request-Timestamp")
	ErrStale        = errors.New("slack: request timestamp more than 5 minutes from now")
	ErrBadSignature = errors.New("slack: signature does not match")
)

// Sign returns the X-Slack-Signature of body sent at ts (unix seconds) under secret.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a request's signature headers against its raw body at time now.
func Verify(secret []byte, h http.Header, body []byte, now time.Time) error {
	ts, sig := h.Get("X-Slack-Request-Timestamp"), h.Get("X-Slack-Signature")
	if ts == "" || sig == "" {
		return ErrNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q is not a number", ErrNoSignature, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > MaxSkew || d < -MaxSkew {
		return ErrStale
	}
	if !hmac.Equal([]byte(Sign(secret, ts, body)), []byte(sig)) {
		return ErrBadSignature
	}
	return nil
}

// Inbound is one user message from Slack, as the adapter hands it on.
type Inbound struct {
	// EventID is the Events API event_id (Socket Mode carries it too): the dedup id.
	EventID string
	TeamID  string
	Channel string
	// ChannelType is im (a DM), mpim, channel or group.
	ChannelType string
	// ThreadTS is the thread the message is in ("" at the top of a channel).
	ThreadTS string
	TS       string
	User     string
	Text     string
	// Retry is X-Slack-Retry-Num (0 on the first delivery).
	Retry int
}

// DM reports whether the message is a direct message.
func (in Inbound) DM() bool { return in.ChannelType == "im" }

// callback is the envelope of an Events API request (and of a Socket Mode events_api payload).
type callback struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	TeamID    string `json:"team_id"`
	EventID   string `json:"event_id"`
	Event     struct {
		Type        string `json:"type"`
		Subtype     string `json:"subtype"`
		Channel     string `json:"channel"`
		ChannelType string `json:"channel_type"`
		User        string `json:"user"`
		BotID       string `json:"bot_id"`
		Text        string `json:"text"`
		TS          string `json:"ts"`
		ThreadTS    string `json:"thread_ts"`
		Team        string `json:"team"`
	} `json:"event"`
}

// parseCallback reads an event_callback into an Inbound; ok is false for events that are not a
// person's new message (bot messages, edits, joins, other event types), which are acked and
// dropped.
func parseCallback(raw []byte, botUser string) (in Inbound, ok bool, err error) {
	var cb callback
	if err := json.Unmarshal(raw, &cb); err != nil {
		return Inbound{}, false, fmt.Errorf("slack event: %w", err)
	}
	if cb.Type != "event_callback" {
		return Inbound{}, false, nil
	}
	e := cb.Event
	switch {
	case e.Type != "message" && e.Type != "app_mention":
		return Inbound{}, false, nil
	case e.Subtype != "" || e.BotID != "" || e.User == "" || (botUser != "" && e.User == botUser):
		return Inbound{}, false, nil
	case cb.EventID == "" || e.Channel == "" || e.TS == "":
		return Inbound{}, false, errors.New("slack event: event_id, channel or ts missing")
	}
	ct := e.ChannelType
	if ct == "" { // app_mention carries no channel_type; Slack's ids say what a channel is
		ct = "channel"
		switch e.Channel[0] {
		case 'D':
			ct = "im"
		case 'G':
			ct = "group"
		}
	}
	team := cb.TeamID
	if team == "" {
		team = e.Team
	}
	return Inbound{EventID: cb.EventID, TeamID: team, Channel: e.Channel, ChannelType: ct,
		ThreadTS: e.ThreadTS, TS: e.TS, User: e.User, Text: e.Text}, true, nil
}

// events is the Events API endpoint: verify, answer a url_verification, record an event with
// the handler (which runs its turn in the background) and ack.
type events struct {
	a *Adapter
	h platform.Handler
}

func (e *events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := e.a
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
	if err != nil {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if err := Verify(a.secret, r.Header, body, a.now()); err != nil {
		a.count("rejected")
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var head struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		http.Error(w, "body is not JSON", http.StatusBadRequest)
		return
	}
	if head.Type == "url_verification" {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, head.Challenge)
		return
	}
	in, ok, err := parseCallback(body, a.botUser())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ok {
		in.Retry, _ = strconv.Atoi(r.Header.Get("X-Slack-Retry-Num"))
		if err := a.deliver(e.h, in); err != nil {
			// not acked: Slack redelivers it later
			http.Error(w, "not recorded, retry later", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}
