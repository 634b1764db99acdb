// Package discordfake is a local fake of Discord on 127.0.0.1 for tests and the platform soak:
// the REST routes spool's adapter uses, under /api/v{9,10}/ (discordgo v0.29 speaks v9):
// GET gateway, GET channels/{id}, POST channels/{id}/messages with nonce/enforce_nonce,
// PATCH channels/{id}/messages/{id} with Discord's JSON error shapes (429 with retry_after
// and Retry-After; {"message","code"} otherwise), and the gateway websocket: HELLO (op 10),
// IDENTIFY (op 2) answered by READY, heartbeats (op 1 → op 11), RESUME (op 6) replaying
// the dispatches after the client's sequence then RESUMED, and MESSAGE_CREATE dispatches.
// Faults are queued per route; a connection can be dropped, the next ones refused (Refuse).
// Wait blocks on a condition.
package discordfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Channel types (Discord's numbers).
const (
	GuildText     = 0
	DMChannel     = 1
	PublicThread  = 11
	PrivateThread = 12
)

// Fault is one injected failure of a REST call.
type Fault struct {
	Status     int
	RetryAfter float64 // seconds, with 429
	Hang       bool    // hold the request until the client gives up
	After      bool    // perform the call, then answer Status
}

// Posted is a message the bot created.
type Posted struct {
	ID, ChannelID, Content, Nonce string
	Edits                         int
	At                            time.Time // when it was created
}

// Server is the fake.
type Server struct {
	Token   string
	BotID   string
	GuildID string

	srv *http.Server
	ln  net.Listener
	URL string // base URL to give the adapter (http://127.0.0.1:port/)

	mu       sync.Mutex
	changed  chan struct{}
	faults   map[string][]Fault // "POST messages", "PATCH messages", "GET channel"
	calls    map[string]int
	channels map[string]map[string]any
	msgs     []*Posted
	byID     map[string]*Posted
	snow     int64
	seq      int64
	log      []dispatch // every dispatch, for RESUME replay
	conns    map[*websocket.Conn]*conn
	sessions int
	identify int
	resumes  int
	up       websocket.Upgrader
	firstTry map[string]time.Time // created content → its first attempt (faulted or not)
	refuse   int                  // gateway connections still to refuse (Refuse)
	refused  int
}

type dispatch struct {
	seq  int64
	t    string
	data any
}

type conn struct {
	mu      sync.Mutex
	ws      *websocket.Conn
	ready   bool
	session string
}

func (c *conn) send(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws.WriteJSON(v)
}

// Start listens on 127.0.0.1 with a random port.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Token: "fake-discord-token", BotID: "900000000000000001", GuildID: "800000000000000001",
		ln: ln, URL: "http://" + ln.Addr().String() + "/", changed: make(chan struct{}),
		faults: map[string][]Fault{}, calls: map[string]int{}, channels: map[string]map[string]any{},
		byID: map[string]*Posted{}, conns: map[*websocket.Conn]*conn{}, snow: 1_100_000_000_000_000_000, firstTry: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/{ver}/gateway", s.gatewayURL)
	mux.HandleFunc("GET /api/{ver}/channels/{id}", s.getChannel)
	mux.HandleFunc("POST /api/{ver}/channels/{id}/messages", s.createMessage)
	mux.HandleFunc("PATCH /api/{ver}/channels/{id}/messages/{mid}", s.editMessage)
	mux.HandleFunc("/gateway", s.gateway)
	mux.HandleFunc("/gateway/", s.gateway)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the fake.
func (s *Server) Close() {
	s.mu.Lock()
	for ws := range s.conns {
		ws.Close()
	}
	s.mu.Unlock()
	_ = s.srv.Close()
}

func (s *Server) notify() { close(s.changed); s.changed = make(chan struct{}) }

// Wait blocks until cond holds or ctx ends.
func (s *Server) Wait(ctx context.Context, cond func(v View) bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(View{s}), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("discordfake: waiting: %w", ctx.Err())
		}
	}
}

// Inspect runs f on the current state.
func (s *Server) Inspect(f func(v View)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(View{s})
}

// View reads the fake's state.
type View struct{ s *Server }

// Messages are the bot's messages in channel ("" = all), in creation order.
func (v View) Messages(channel string) []Posted {
	var out []Posted
	for _, m := range v.s.msgs {
		if channel == "" || m.ChannelID == channel {
			out = append(out, *m)
		}
	}
	return out
}

// FirstAttempt is when a message with content was first tried (a faulted try too).
func (v View) FirstAttempt(content string) (time.Time, bool) {
	t, ok := v.s.firstTry[content]
	return t, ok
}

// Calls counts a route's calls ("POST messages", "PATCH messages", "GET channel").
func (v View) Calls(route string) int { return v.s.calls[route] }

// Ready is the number of connections that completed IDENTIFY or RESUME.
func (v View) Ready() int {
	n := 0
	for _, c := range v.s.conns {
		if c.ready {
			n++
		}
	}
	return n
}

// Identifies and Resumes count the handshakes seen.
func (v View) Identifies() int { return v.s.identify }

// Faults is how many faults are queued for route's next calls.
func (v View) Faults(route string) int { return len(v.s.faults[route]) }

// Refused is how many gateway connections Refuse turned away.
func (v View) Refused() int { return v.s.refused }
func (v View) Resumes() int { return v.s.resumes }

// Fail queues faults for a route's next calls.
func (s *Server) Fail(route string, faults ...Fault) {
	s.mu.Lock()
	s.faults[route] = append(s.faults[route], faults...)
	s.mu.Unlock()
}

// AddChannel makes a channel known (a thread names its parent).
func (s *Server) AddChannel(id string, typ int, parent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := map[string]any{"id": id, "type": typ, "name": "ch-" + id}
	if typ != DMChannel {
		ch["guild_id"] = s.GuildID
	}
	if parent != "" {
		ch["parent_id"] = parent
	}
	s.channels[id] = ch
}

func (s *Server) nextID() string { // with s.mu held
	s.snow++
	return strconv.FormatInt(s.snow, 10)
}

func (s *Server) take(route string) *Fault { // with s.mu held
	s.calls[route]++
	if q := s.faults[route]; len(q) > 0 {
		s.faults[route] = q[1:]
		return &q[0]
	}
	return nil
}

func (s *Server) authed(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bot "+s.Token {
		writeJSON(w, 401, map[string]any{"message": "401: Unauthorized", "code": 0})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, f Fault) {
	if f.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.FormatFloat(f.RetryAfter, 'f', -1, 64))
		writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": f.RetryAfter, "global": false})
		return
	}
	st := f.Status
	if st == 0 {
		st = 500
	}
	writeJSON(w, st, map[string]any{"message": "Internal Server Error", "code": 0})
}

// pre applies a fault that comes before the call; it reports whether the request is answered.
func pre(w http.ResponseWriter, r *http.Request, f *Fault) bool {
	if f == nil || f.After {
		return false
	}
	if f.Hang {
		<-r.Context().Done()
		return true
	}
	fail(w, *f)
	return true
}

func (s *Server) gatewayURL(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"url": "ws://" + s.ln.Addr().String() + "/gateway"})
}

func (s *Server) getChannel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f := s.take("GET channel")
	ch := s.channels[r.PathValue("id")]
	s.notify()
	s.mu.Unlock()
	if pre(w, r, f) || !s.authed(w, r) {
		return
	}
	if ch == nil {
		writeJSON(w, 404, map[string]any{"message": "Unknown Channel", "code": 10003})
		return
	}
	writeJSON(w, 200, ch)
}

func (s *Server) message(m *Posted) map[string]any {
	return map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "type": 0, "nonce": m.Nonce,
		"timestamp": time.Now().UTC().Format(time.RFC3339), "tts": false, "mention_everyone": false,
		"mentions": []any{}, "attachments": []any{}, "embeds": []any{}, "pinned": false,
		"author": map[string]any{"id": s.BotID, "username": "spool", "bot": true, "discriminator": "0"}}
}

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content      string `json:"content"`
		Nonce        any    `json:"nonce"`
		EnforceNonce bool   `json:"enforce_nonce"`
	}
	decErr := json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	f := s.take("POST messages")
	if _, ok := s.firstTry[body.Content]; !ok && body.Content != "" {
		s.firstTry[body.Content] = time.Now()
	}
	s.notify()
	s.mu.Unlock()
	if pre(w, r, f) || !s.authed(w, r) {
		return
	}
	ch := r.PathValue("id")
	nonce := fmt.Sprint(body.Nonce)
	if body.Nonce == nil {
		nonce = ""
	}
	switch n := utf8.RuneCountInString(body.Content); {
	case decErr != nil:
		writeJSON(w, 400, map[string]any{"message": "400: Bad Request", "code": 50109})
		return
	case n == 0:
		writeJSON(w, 400, map[string]any{"message": "Cannot send an empty message", "code": 50006})
		return
	case n > 2000:
		writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035,
			"errors": map[string]any{"content": map[string]any{"_errors": []any{map[string]any{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}}}}})
		return
	}
	s.mu.Lock()
	var m *Posted
	if body.EnforceNonce && nonce != "" {
		for _, p := range s.msgs {
			if p.Nonce == nonce && p.ChannelID == ch {
				m = p // Discord returns the message that nonce already made
			}
		}
	}
	if m == nil {
		m = &Posted{ID: s.nextID(), ChannelID: ch, Content: body.Content, Nonce: nonce, At: time.Now()}
		s.msgs = append(s.msgs, m)
		s.byID[m.ID] = m
	}
	out := s.message(m)
	s.notify()
	s.mu.Unlock()
	if f != nil {
		fail(w, *f)
		return
	}
	writeJSON(w, 200, out)
}

func (s *Server) editMessage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content *string `json:"content"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	f := s.take("PATCH messages")
	s.notify()
	s.mu.Unlock()
	if pre(w, r, f) || !s.authed(w, r) {
		return
	}
	s.mu.Lock()
	m := s.byID[r.PathValue("mid")]
	if m == nil || m.ChannelID != r.PathValue("id") {
		s.mu.Unlock()
		writeJSON(w, 404, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	if body.Content != nil {
		if utf8.RuneCountInString(*body.Content) > 2000 {
			s.mu.Unlock()
			writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
			return
		}
		m.Content = *body.Content
		m.Edits++
	}
	out := s.message(m)
	s.notify()
	s.mu.Unlock()
	if f != nil {
		fail(w, *f)
		return
	}
	writeJSON(w, 200, out)
}

// gateway serves one gateway websocket connection.
func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	if v := r.URL.Query().Get("v"); (v != "9" && v != "10") || r.URL.Query().Get("encoding") != "json" {
		http.Error(w, "v=9 or 10 and encoding=json expected", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if s.refuse > 0 {
		s.refuse--
		s.refused++
		s.notify()
		s.mu.Unlock()
		http.Error(w, "the gateway is unavailable", http.StatusServiceUnavailable)
		return
	}
	s.mu.Unlock()
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws}
	s.mu.Lock()
	s.conns[ws] = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, ws)
		s.notify()
		s.mu.Unlock()
		ws.Close()
	}()
	if c.send(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 41250}, "s": nil, "t": nil}) != nil {
		return
	}
	for {
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := ws.ReadJSON(&p); err != nil {
			return
		}
		switch p.Op {
		case 1: // heartbeat
			if c.send(map[string]any{"op": 11}) != nil {
				return
			}
		case 2: // identify
			var id struct {
				Token   string `json:"token"`
				Intents int    `json:"intents"`
			}
			_ = json.Unmarshal(p.D, &id)
			if strings.TrimPrefix(id.Token, "Bot ") != s.Token {
				_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."), time.Now().Add(time.Second))
				return
			}
			if id.Intents&(1<<15) == 0 { // MESSAGE_CONTENT
				_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4014, "Disallowed intent(s)."), time.Now().Add(time.Second))
				return
			}
			s.mu.Lock()
			s.identify++
			s.sessions++
			c.session = fmt.Sprintf("fake-session-%d", s.sessions)
			s.seq++
			ready := map[string]any{"op": 0, "t": "READY", "s": s.seq, "d": map[string]any{"v": 10,
				"user":       map[string]any{"id": s.BotID, "username": "spool", "bot": true, "discriminator": "0"},
				"session_id": c.session, "resume_gateway_url": "ws://" + s.ln.Addr().String() + "/gateway",
				"guilds": []any{map[string]any{"id": s.GuildID, "unavailable": true}}, "private_channels": []any{}}}
			err := c.send(ready)
			c.ready = err == nil
			s.notify()
			s.mu.Unlock()
			if err != nil {
				return
			}
		case 6: // resume
			var rs struct {
				SessionID string `json:"session_id"`
				Seq       int64  `json:"seq"`
			}
			_ = json.Unmarshal(p.D, &rs)
			s.mu.Lock()
			s.resumes++
			c.session = rs.SessionID
			var err error
			for _, d := range s.log {
				if d.seq > rs.Seq && err == nil {
					err = c.send(map[string]any{"op": 0, "t": d.t, "s": d.seq, "d": d.data})
				}
			}
			s.seq++
			if err == nil {
				err = c.send(map[string]any{"op": 0, "t": "RESUMED", "s": s.seq, "d": map[string]any{}})
			}
			c.ready = err == nil
			s.notify()
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// UserMessage describes a person's message.
type UserMessage struct {
	ChannelID string
	DM        bool // no guild_id
	AuthorID  string
	Username  string
	Content   string
	ID        string // "" = a fresh snowflake
	Bot       bool
}

// Say dispatches MESSAGE_CREATE for m to every ready connection (it is logged for RESUME
// replay) and returns the message id.
func (s *Server) Say(m UserMessage) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ID == "" {
		m.ID = s.nextID()
	}
	d := map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339), "tts": false, "mention_everyone": false,
		"mentions": []any{}, "attachments": []any{}, "embeds": []any{}, "pinned": false,
		"author": map[string]any{"id": m.AuthorID, "username": m.Username, "bot": m.Bot, "discriminator": "0"}}
	if !m.DM {
		d["guild_id"] = s.GuildID
		d["member"] = map[string]any{"roles": []any{}, "joined_at": "2026-01-01T00:00:00Z"}
	}
	s.seq++
	s.log = append(s.log, dispatch{seq: s.seq, t: "MESSAGE_CREATE", data: d})
	for _, c := range s.conns {
		if c.ready {
			_ = c.send(map[string]any{"op": 0, "t": "MESSAGE_CREATE", "s": s.seq, "d": d})
		}
	}
	s.notify()
	return m.ID
}

// Redeliver sends the latest dispatch of message id again (a duplicate delivery).
func (s *Server) Redeliver(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.log) - 1; i >= 0; i-- {
		if d, ok := s.log[i].data.(map[string]any); ok && d["id"] == id {
			s.seq++
			for _, c := range s.conns {
				if c.ready {
					_ = c.send(map[string]any{"op": 0, "t": s.log[i].t, "s": s.seq, "d": d})
				}
			}
			return
		}
	}
}

// Refuse makes the next n gateway connections fail their handshake (503): Discord away while
// a bot starts.
func (s *Server) Refuse(n int) {
	s.mu.Lock()
	s.refuse += n
	s.mu.Unlock()
}

// Drop closes every gateway connection abruptly (the client resumes).
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ws, c := range s.conns {
		c.ready = false
		ws.Close()
	}
	s.notify()
}
