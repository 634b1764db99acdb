// Package slackfake is a local fake of the Slack platform on 127.0.0.1 for tests and the
// platform soak: the Web API methods spool's adapter calls (chat.postMessage, chat.update,
// auth.test, apps.connections.open) answering with Slack's documented shapes ({"ok":false,
// "error":...} on failure, 429 with Retry-After), a Socket Mode websocket (hello, events_api
// envelopes redelivered until acked, disconnect), and a poster of signed Events API requests.
// Faults are queued per method. When asked (SetLimits), it enforces Slack's Web API rate
// limits: a call over them is answered 429 with Retry-After and counted (Limited), apart
// from the injected faults. It never sleeps to synchronise: Wait blocks on a condition.
package slackfake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Fault is one injected failure of a Web API call.
type Fault struct {
	Status     int     // an HTTP status to answer instead (429, 500, 503 ...)
	RetryAfter float64 // seconds, with 429
	// Hang holds the request until the client gives up (a timeout).
	Hang bool
	// After performs the call, then answers Status (a crash between send and ack).
	After bool
}

// Posted is a message the bot posted, as the fake stores it.
type Posted struct {
	Channel, TS, ThreadTS, Text string
	Edits                       int
	// Texts is every text the message had, as received: the post's, then each chat.update's.
	Texts    []string
	Metadata map[string]any // chat.postMessage's metadata, as sent
	At       time.Time      // when it was posted
}

// Server is the fake.
type Server struct {
	BotToken, AppToken string
	TeamID, BotUser    string

	srv *http.Server
	ln  net.Listener
	URL string // Web API base, ending in /api/

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	faults   map[string][]Fault
	calls    map[string]int
	msgs     []*Posted
	byKey    map[string]*Posted // channel+ts
	tsN      int64
	eventN   int64
	envN     int64
	conns    map[*websocket.Conn]bool
	pending  []*pendingEnv // pushed envelopes not yet acked
	acked    int
	ticket   int
	upgrader websocket.Upgrader
	firstTry map[string]time.Time // chat.postMessage text → its first attempt (faulted or not)
	limits   Limits
	posts    map[string]*postBucket // chat.postMessage per channel: the limits' state
	window   map[string][]time.Time // per method (the workspace's): calls in the last minute
	limited  map[string]int         // 429s answered for the limits, by method
}

// Limits are the Web API rate limits the fake enforces (the zero value: none), as Slack
// documents them: per method per app per workspace, in tiers of calls a minute (Tier 3, such
// as chat.update and conversations.history: 50+ a minute), and chat.postMessage about one
// message a second per channel with short bursts. A call over a limit is answered 429 with
// Retry-After (whole seconds until it would be taken) and {"ok":false,"error":"ratelimited"},
// and is not performed.
type Limits struct {
	// PostEvery and PostBurst: chat.postMessage to one channel, a burst of PostBurst, then
	// one per PostEvery. Grace is how much early a call may come (the network's jitter).
	PostEvery time.Duration
	PostBurst int
	Grace     time.Duration
	// PerMinute are methods' tiers: at most so many calls in any minute (Window, if set: a
	// test's longer span), per workspace.
	PerMinute map[string]int
	Window    time.Duration
}

// SlackLimits are the limits as Slack's rate-limit guide states them, with a burst of 3
// posts per channel assumed (Slack says only "short bursts") and 250 ms of grace: Tier 3
// (50 a minute) for chat.update, conversations.history and conversations.replies, Tier 1
// (1 a minute) for apps.connections.open. Slack's workspace-wide limit on posts is not
// stated, so it is not enforced; neither is auth.test's (a special tier).
var SlackLimits = Limits{PostEvery: time.Second, PostBurst: 3, Grace: 250 * time.Millisecond,
	PerMinute: map[string]int{"chat.update": 50, "conversations.history": 50, "conversations.replies": 50, "apps.connections.open": 1}}

type postBucket struct {
	tokens float64
	at     time.Time
}

// SetLimits makes the fake enforce l from now on.
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = l
}

// overLimit reports, under s.mu, how long a call of method (to channel) must wait for the
// limits (0: it may go, and it is counted).
func (s *Server) overLimit(method, channel string, now time.Time) time.Duration {
	l := s.limits
	var wait time.Duration
	var pb *postBucket
	if method == "chat.postMessage" && l.PostEvery > 0 {
		burst := float64(max(l.PostBurst, 1))
		if pb = s.posts[channel]; pb == nil {
			pb = &postBucket{tokens: burst, at: now}
			s.posts[channel] = pb
		}
		pb.tokens = min(burst, pb.tokens+float64(now.Sub(pb.at))/float64(l.PostEvery))
		pb.at = now
		if need := 1 - pb.tokens - float64(l.Grace)/float64(l.PostEvery); need > 0 {
			wait = time.Duration(need * float64(l.PostEvery))
		}
	}
	n, span := l.PerMinute[method], l.Window
	if span <= 0 {
		span = time.Minute
	}
	if n > 0 {
		w := s.window[method]
		for len(w) > 0 && !w[0].Add(span).After(now) {
			w = w[1:]
		}
		s.window[method] = w
		if len(w) >= n {
			wait = max(wait, w[len(w)-n].Add(span-l.Grace).Sub(now))
		}
	}
	if wait > 0 {
		return wait
	}
	if pb != nil {
		pb.tokens--
	}
	if n > 0 {
		s.window[method] = append(s.window[method], now)
	}
	return 0
}

// Limited counts the 429s answered for the limits (not injected) to method ("" all).
func (v View) Limited(method string) int {
	if method != "" {
		return v.s.limited[method]
	}
	n := 0
	for _, c := range v.s.limited {
		n += c
	}
	return n
}

type pendingEnv struct {
	id      string
	payload json.RawMessage
	retry   int
	sentTo  *websocket.Conn
}

// Start listens on 127.0.0.1 with a random port.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{BotToken: "xoxb-fake-bot", AppToken: "xapp-fake-app", TeamID: "T0FAKE", BotUser: "U0BOT",
		ln: ln, URL: "http://" + ln.Addr().String() + "/api/", changed: make(chan struct{}),
		faults: map[string][]Fault{}, calls: map[string]int{}, byKey: map[string]*Posted{},
		conns: map[*websocket.Conn]bool{}, tsN: 1_700_000_000_000_000, firstTry: map[string]time.Time{},
		posts: map[string]*postBucket{}, window: map[string][]time.Time{}, limited: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api)
	mux.HandleFunc("/link/", s.socket)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the fake and drops its websockets.
func (s *Server) Close() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	_ = s.srv.Close()
}

func (s *Server) notify() { // with s.mu held
	close(s.changed)
	s.changed = make(chan struct{})
}

// Wait blocks until cond (called with the fake's state locked) holds or ctx ends.
func (s *Server) Wait(ctx context.Context, cond func(v View) bool) error {
	for {
		s.mu.Lock()
		ok := cond(View{s})
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("slackfake: waiting: %w", ctx.Err())
		}
	}
}

// View reads the fake's state inside Wait and Inspect.
type View struct{ s *Server }

// Messages are the posted messages in channel ("" = all), in posting order.
func (v View) Messages(channel string) []Posted {
	var out []Posted
	for _, m := range v.s.msgs {
		if channel == "" || m.Channel == channel {
			p := *m
			p.Texts = slices.Clone(m.Texts)
			out = append(out, p)
		}
	}
	return out
}

// FirstAttempt is when a chat.postMessage with text was first tried (a faulted try too).
func (v View) FirstAttempt(text string) (time.Time, bool) {
	t, ok := v.s.firstTry[text]
	return t, ok
}

// Faults is how many faults are queued for method's next calls.
func (v View) Faults(method string) int { return len(v.s.faults[method]) }

// Calls is how often method was called (faulted calls included).
func (v View) Calls(method string) int { return v.s.calls[method] }

// Acked is how many Socket Mode envelopes were acknowledged; Pending how many wait for one.
func (v View) Acked() int   { return v.s.acked }
func (v View) Pending() int { return len(v.s.pending) }

// Conns is the number of open Socket Mode connections.
func (v View) Conns() int { return len(v.s.conns) }

// Inspect runs f on the current state.
func (s *Server) Inspect(f func(v View)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(View{s})
}

// Fail queues faults for method's next calls.
func (s *Server) Fail(method string, faults ...Fault) {
	s.mu.Lock()
	s.faults[method] = append(s.faults[method], faults...)
	s.mu.Unlock()
}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	var body map[string]any
	if r.Method != http.MethodPost {
		writeJSON(w, 200, map[string]any{"ok": false, "error": "method_not_supported_for_channel_type"})
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, 200, map[string]any{"ok": false, "error": "invalid_json"})
			return
		}
	} else {
		_ = r.ParseForm()
		body = map[string]any{}
		for k := range r.PostForm {
			body[k] = r.PostForm.Get(k)
		}
	}
	s.mu.Lock()
	s.calls[method]++
	if t, _ := body["text"].(string); method == "chat.postMessage" && t != "" {
		if _, ok := s.firstTry[t]; !ok {
			s.firstTry[t] = time.Now()
		}
	}
	var f *Fault
	if q := s.faults[method]; len(q) > 0 {
		f = &q[0]
		s.faults[method] = q[1:]
	}
	s.notify()
	s.mu.Unlock()
	if f != nil && !f.After {
		if f.Hang {
			<-r.Context().Done()
			return
		}
		fail(w, *f)
		return
	}
	want := s.BotToken
	if method == "apps.connections.open" {
		want = s.AppToken
	}
	if r.Header.Get("Authorization") != "Bearer "+want {
		writeJSON(w, 200, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	str := func(k string) string { v, _ := body[k].(string); return v }
	var out map[string]any
	s.mu.Lock()
	if f == nil { // (an injected fault stands in for Slack's answer, limits or not)
		if wait := s.overLimit(method, str("channel"), time.Now()); wait > 0 {
			s.limited[method]++
			s.notify()
			s.mu.Unlock()
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			writeJSON(w, 429, map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
	}
	switch method {
	case "auth.test":
		out = map[string]any{"ok": true, "url": "https://fake.slack.com/", "team": "Fake", "user": "spool",
			"team_id": s.TeamID, "user_id": s.BotUser, "bot_id": "B0BOT"}
	case "apps.connections.open":
		s.ticket++
		out = map[string]any{"ok": true, "url": fmt.Sprintf("ws://%s/link/?ticket=%d&app_id=A0FAKE", s.ln.Addr(), s.ticket)}
	case "chat.postMessage":
		ch, text := str("channel"), str("text")
		switch {
		case ch == "":
			out = map[string]any{"ok": false, "error": "channel_not_found"}
		case text == "":
			out = map[string]any{"ok": false, "error": "no_text"}
		default:
			s.tsN++
			ts := fmt.Sprintf("%d.%06d", s.tsN/1_000_000, s.tsN%1_000_000)
			m := &Posted{Channel: ch, TS: ts, ThreadTS: str("thread_ts"), Text: text, Texts: []string{text}, At: time.Now()}
			m.Metadata, _ = body["metadata"].(map[string]any)
			s.msgs = append(s.msgs, m)
			s.byKey[ch+"\x00"+ts] = m
			msg := map[string]any{"type": "message", "user": s.BotUser, "bot_id": "B0BOT", "text": text, "ts": ts}
			if m.ThreadTS != "" {
				msg["thread_ts"] = m.ThreadTS
			}
			out = map[string]any{"ok": true, "channel": ch, "ts": ts, "message": msg}
		}
	case "chat.update":
		ch, ts := str("channel"), str("ts")
		m := s.byKey[ch+"\x00"+ts]
		switch {
		case m == nil:
			out = map[string]any{"ok": false, "error": "message_not_found"}
		case str("text") == "":
			out = map[string]any{"ok": false, "error": "no_text"}
		default:
			m.Text = str("text")
			m.Texts = append(m.Texts, m.Text)
			m.Edits++
			out = map[string]any{"ok": true, "channel": ch, "ts": ts, "text": m.Text}
		}
	case "conversations.history", "conversations.replies":
		// newest first (history) / thread parent first (replies), metadata only when asked
		ch, thread := str("channel"), str("ts")
		meta, _ := body["include_all_metadata"].(bool)
		var list []map[string]any
		for i := len(s.msgs) - 1; i >= 0; i-- {
			m := s.msgs[i]
			if m.Channel != ch || (method == "conversations.replies" && m.ThreadTS != thread && m.TS != thread) ||
				(method == "conversations.history" && m.ThreadTS != "") {
				continue
			}
			e := map[string]any{"type": "message", "user": s.BotUser, "bot_id": "B0BOT", "text": m.Text, "ts": m.TS}
			if meta && m.Metadata != nil {
				e["metadata"] = m.Metadata
			}
			list = append(list, e)
		}
		if method == "conversations.replies" {
			for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
				list[i], list[j] = list[j], list[i]
			}
		}
		out = map[string]any{"ok": true, "messages": list, "has_more": false}
	default:
		out = map[string]any{"ok": false, "error": "unknown_method"}
	}
	s.notify()
	s.mu.Unlock()
	if f != nil { // After: the call happened, the answer is lost
		fail(w, *f)
		return
	}
	writeJSON(w, 200, out)
}

func fail(w http.ResponseWriter, f Fault) {
	if f.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.FormatFloat(f.RetryAfter, 'f', -1, 64))
		writeJSON(w, 429, map[string]any{"ok": false, "error": "ratelimited"})
		return
	}
	w.WriteHeader(cmpStatus(f.Status))
	_, _ = w.Write([]byte("upstream trouble"))
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusInternalServerError
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Message describes a user's message for an event.
type Message struct {
	Channel     string
	ChannelType string // im, channel, group, mpim (default: from the channel id's first letter)
	User        string
	Text        string
	TS          string // "" = a fresh one
	ThreadTS    string
	EventID     string // "" = a fresh one
}

// Event returns the event_callback JSON of m, as the Events API posts it (and Socket Mode
// carries it as an envelope's payload), with m's ids filled in.
func (s *Server) Event(m *Message) []byte {
	s.mu.Lock()
	if m.TS == "" {
		s.tsN++
		m.TS = fmt.Sprintf("%d.%06d", s.tsN/1_000_000, s.tsN%1_000_000)
	}
	if m.EventID == "" {
		s.eventN++
		m.EventID = fmt.Sprintf("Ev%08d", s.eventN)
	}
	team := s.TeamID
	s.mu.Unlock()
	ct := m.ChannelType
	if ct == "" {
		ct = "channel"
		if strings.HasPrefix(m.Channel, "D") {
			ct = "im"
		}
	}
	ev := map[string]any{"type": "message", "channel": m.Channel, "channel_type": ct, "user": m.User,
		"text": m.Text, "ts": m.TS, "event_ts": m.TS, "team": team}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	b, _ := json.Marshal(map[string]any{"token": "verification-token-unused", "team_id": team, "api_app_id": "A0FAKE",
		"event": ev, "type": "event_callback", "event_id": m.EventID, "event_time": time.Now().Unix(),
		"authorizations": []map[string]any{{"team_id": team, "user_id": s.BotUser, "is_bot": true}}})
	return b
}

// Post delivers body to an Events API endpoint signed with secret at time at, as Slack does
// (retry > 0 adds X-Slack-Retry-Num / X-Slack-Retry-Reason). It returns the HTTP status.
func Post(ctx context.Context, hc *http.Client, url string, secret []byte, at time.Time, body []byte, retry int) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sign(secret, ts, body))
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}
