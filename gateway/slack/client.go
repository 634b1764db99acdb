package slack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
)

// DefaultBaseURL is Slack's Web API.
const DefaultBaseURL = "https://slack.com/api/"

// Client calls the Slack Web API with a bot token (and, for Socket Mode, an app-level token).
type Client struct {
	base     string
	token    string
	appToken string
	hc       *http.Client
	sleep    platform.Sleeper
	// Retries bounds the retries of a 5xx or network failure (429s are retried without bound,
	// each after its Retry-After).
	retries int
	// OnRetry, when set, hears every retry (metrics, tests).
	OnRetry func(method string, status int, wait time.Duration)
	pace    *pacer
}

// ClientConfig configures a Client. Zero fields take defaults.
type ClientConfig struct {
	BaseURL  string // "" = DefaultBaseURL
	Token    string // xoxb- bot token
	AppToken string // xapp- app-level token (Socket Mode)
	HTTP     *http.Client
	Sleep    platform.Sleeper
	Retries  int // 5xx / network retries (0: 3; <0: none)
	// Pacing is the rate limits the client keeps to (zero fields: DefaultPacing's). Now is
	// its clock (nil: time.Now; tests fix it); its waits use Sleep.
	Pacing Pacing
	Now    func() time.Time
	// Log hears the calls the pacing held ("slack: paced", at debug level; nil: none).
	Log *slog.Logger
}

// NewClient returns a client.
func NewClient(c ClientConfig) *Client {
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	sl := c.Sleep
	if sl == nil {
		sl = platform.Sleep
	}
	r := c.Retries
	if r == 0 {
		r = 3
	} else if r < 0 {
		r = 0
	}
	pc := newPacer(c.Pacing, sl)
	if c.Now != nil {
		pc.now = c.Now
	}
	pc.log = c.Log
	return &Client{base: base, token: c.Token, appToken: c.AppToken, hc: hc, sleep: sl, retries: r, pace: pc}
}

// APIError is an ok:false answer (or a non-retryable HTTP status).
type APIError struct {
	Method string
	Status int
	Code   string // Slack's "error" field, e.g. "channel_not_found"
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("slack %s: HTTP %d", e.Method, e.Status)
	}
	return fmt.Sprintf("slack %s: %s", e.Method, e.Code)
}

// Message is a posted message.
type Message struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// PostMessage posts text to a channel (in the thread threadTS when set) and returns its ts.
//
// A post whose outcome is unknown is looked for (by the nonce in its metadata) before it is
// sent again, so a retry never posts it twice.
func (c *Client) PostMessage(ctx context.Context, channel, threadTS, text string) (Message, error) {
	var n [12]byte
	_, _ = rand.Read(n[:])
	return c.PostAs(ctx, channel, threadTS, text, hex.EncodeToString(n[:]), false, PostReply)
}

// PostAs is PostMessage with the caller's nonce (stable across processes: the send ledger's),
// for a post of kind k, which says how it shares its channel's posts (Pacing.PostReserve):
// only a reply's first message may take a channel's last ones. With unsure (an earlier attempt
// may have been posted) the channel or thread is searched for it first.
func (c *Client) PostAs(ctx context.Context, channel, threadTS, text, nonce string, unsure bool, k Post) (Message, error) {
	if unsure {
		if ts, err := c.findPosted(ctx, channel, threadTS, nonce); err == nil && ts != "" {
			return Message{Channel: channel, TS: ts}, nil
		}
	}
	body := map[string]any{"channel": channel, "text": text,
		"metadata": map[string]any{"event_type": metadataType, "event_payload": map[string]any{"nonce": nonce}}}
	if threadTS != "" {
		body["thread_ts"] = threadTS
	}
	var out struct {
		Channel string `json:"channel"`
		TS      string `json:"ts"`
	}
	var found string
	err := c.call(ctx, "chat.postMessage", k, c.token, body, &out, func() (bool, error) {
		ts, err := c.findPosted(ctx, channel, threadTS, nonce)
		found = ts
		return ts != "", err
	})
	if found != "" {
		return Message{Channel: channel, TS: found}, nil
	}
	if err != nil {
		return Message{}, err
	}
	return Message{Channel: out.Channel, TS: out.TS}, nil
}

// metadataType is the event_type of the metadata spool puts on its posts.
const metadataType = "spool_reply"

// findPosted looks for the bot's post carrying nonce among the newest messages of the channel
// (or of the thread).
func (c *Client) findPosted(ctx context.Context, channel, threadTS, nonce string) (string, error) {
	method, body := "conversations.history", map[string]any{"channel": channel, "limit": 100, "include_all_metadata": true}
	if threadTS != "" {
		method, body = "conversations.replies", map[string]any{"channel": channel, "ts": threadTS, "limit": 200, "include_all_metadata": true}
	}
	var out struct {
		Messages []struct {
			TS       string `json:"ts"`
			Metadata struct {
				EventType    string `json:"event_type"`
				EventPayload struct {
					Nonce string `json:"nonce"`
				} `json:"event_payload"`
			} `json:"metadata"`
		} `json:"messages"`
	}
	if err := c.call(ctx, method, PostReply, c.token, body, &out, nil); err != nil {
		return "", err
	}
	for _, m := range out.Messages {
		if m.Metadata.EventType == metadataType && m.Metadata.EventPayload.Nonce == nonce {
			return m.TS, nil
		}
	}
	return "", nil
}

// Update replaces the text of the message ts in channel (chat.update). Updating with the
// text the message already has is a success.
func (c *Client) Update(ctx context.Context, channel, ts, text string) error {
	return c.call(ctx, "chat.update", PostReply, c.token, map[string]any{"channel": channel, "ts": ts, "text": text}, nil, nil)
}

// AuthTest returns the bot's user id and team (auth.test).
func (c *Client) AuthTest(ctx context.Context) (userID, teamID string, err error) {
	var out struct {
		UserID string `json:"user_id"`
		TeamID string `json:"team_id"`
	}
	if err := c.call(ctx, "auth.test", PostReply, c.token, map[string]any{}, &out, nil); err != nil {
		return "", "", err
	}
	return out.UserID, out.TeamID, nil
}

// OpenConnection asks for a Socket Mode websocket URL (apps.connections.open, app token).
func (c *Client) OpenConnection(ctx context.Context) (string, error) {
	if c.appToken == "" {
		return "", errors.New("slack apps.connections.open: no app-level token (platforms.slack.app_token_env)")
	}
	var out struct {
		URL string `json:"url"`
	}
	if err := c.call(ctx, "apps.connections.open", PostReply, c.appToken, map[string]any{}, &out, nil); err != nil {
		return "", err
	}
	if out.URL == "" {
		return "", &APIError{Method: "apps.connections.open", Status: 200, Code: "no url in the answer"}
	}
	return out.URL, nil
}

// call POSTs a JSON body to method and decodes the answer into out, each attempt in its turn
// of the client's pacing. It retries a 429 after its Retry-After (however long) and a 5xx or
// a transport failure up to c.retries times; before such a retry it asks unsure (when set)
// whether the call took effect after all (done: stop). A post's first attempt is paced as k,
// its retries as PostRetry.
func (c *Client) call(ctx context.Context, method string, k Post, token string, body any, out any, unsure func() (done bool, err error)) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("slack %s: %w", method, err)
	}
	channel := ""
	if m, ok := body.(map[string]any); ok {
		channel, _ = m["channel"].(string)
	}
	failures := 0
	for {
		// every attempt is paced: Slack counts retries like any call
		if err := c.pace.wait(ctx, method, channel, k); err != nil {
			return fmt.Errorf("slack %s: %w", method, err)
		}
		k = PostRetry // the next attempt, if any, is a retry
		status, wait, raw, err := c.once(ctx, method, token, payload)
		if err == nil && status == http.StatusOK {
			return decode(method, raw, out)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("slack %s: %w", method, context.Cause(ctx))
		}
		switch {
		case status == http.StatusTooManyRequests:
			// however long Slack asks: sending early only earns another 429
		case err != nil || status >= 500:
			failures++
			if failures > c.retries {
				if err != nil {
					return fmt.Errorf("slack %s: %w", method, err)
				}
				return &APIError{Method: method, Status: status}
			}
			wait = time.Duration(failures) * 500 * time.Millisecond
			if unsure != nil {
				if err := c.sleep(ctx, wait); err != nil {
					return fmt.Errorf("slack %s: %w", method, err)
				}
				wait = 0
				done, uerr := unsure()
				if done {
					return nil
				}
				if uerr != nil && ctx.Err() != nil {
					return fmt.Errorf("slack %s: %w", method, uerr)
				}
			}
		default:
			var e struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal(raw, &e)
			return &APIError{Method: method, Status: status, Code: e.Error}
		}
		if c.OnRetry != nil {
			c.OnRetry(method, status, wait)
		}
		if wait > 0 {
			if err := c.sleep(ctx, wait); err != nil {
				return fmt.Errorf("slack %s: %w", method, err)
			}
		}
	}
}

func (c *Client) once(ctx context.Context, method, token string, payload []byte) (status int, retryAfter time.Duration, raw []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, bytes.NewReader(payload))
	if err != nil {
		return 0, 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, 0, nil, scrub(err, token)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, 0, nil, scrub(err, token)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		retryAfter = time.Second
		if s, err := strconv.ParseFloat(strings.TrimSpace(resp.Header.Get("Retry-After")), 64); err == nil && s >= 0 {
			retryAfter = time.Duration(s * float64(time.Second))
		}
	}
	return resp.StatusCode, retryAfter, raw, nil
}

func decode(method string, raw []byte, out any) error {
	var env struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("slack %s: unreadable answer: %w", method, err)
	}
	if !env.OK {
		return &APIError{Method: method, Status: http.StatusOK, Code: env.Error}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("slack %s: unreadable answer: %w", method, err)
		}
	}
	return nil
}

// scrub removes a token from a transport error's text (a URL error quotes the request line,
// which never holds the token here, but be certain).
func scrub(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}
