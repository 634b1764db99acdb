// Package discordfake is a local fake of Discord on 127.0.0.1 for tests and the platform soak:
// the REST routes spool's adapter uses, under /api/v{9,10}/ (discordgo v0.29 speaks v9):
// GET gateway, GET channels/{id}, GET channels/{id}/messages (a channel's history, as
// Discord documents it: before/after/around a message id, limit 1-100 (default 50), always
// sorted newest first, so a page after an id holds the oldest messages after it, newest
// first; REST message objects carry no guild_id), POST channels/{id}/messages with
// nonce/enforce_nonce, PATCH channels/{id}/messages/{id}, PUT and DELETE
// channels/{id}/messages/{id}/reactions/{emoji}/@me (the bot's own reaction; 204), with Discord's JSON error shapes (429
// with retry_after and Retry-After; {"message","code"} otherwise), and the gateway websocket:
// HELLO (op 10), IDENTIFY (op 2) answered by READY and the guild's GUILD_CREATE (its channels
// and active threads with their last_message_id; ids are time-based snowflakes), heartbeats (op 1 → op 11), RESUME (op 6)
// replaying the dispatches after the client's sequence then RESUMED (or, for a session
// Discord no longer knows, op 9 INVALID_SESSION with d=false, after which the client
// identifies as a new session that gets no replay), and MESSAGE_CREATE dispatches.
//
// Rate limits (SetLimits, off by default): Discord's per-route buckets per channel (message
// create, message edit, reactions, every other route) and a global limit per bot, each answered as
// Discord does — X-RateLimit-Limit/Remaining/Reset/Reset-After/Bucket on every limited
// route's answer, and over a limit a 429 with {"message", "retry_after", "global"}, a
// Retry-After header and X-RateLimit-Scope (plus X-RateLimit-Global for the global one).
// Those 429s are counted apart from injected faults (View.Limited).
//
// Faults are queued per route; a connection can be dropped (Drop: the client resumes), its
// session forgotten too (Expire: the client starts a new session), the next connections
// refused (Refuse, Accept). Wait blocks on a condition.
package discordfake

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
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
	// Until holds the request until it is closed (or the client gives up), then answers
	// Status, or with no Status performs the call.
	Until <-chan struct{}
}

// Posted is a message the bot created.
type Posted struct {
	ID, ChannelID, Content, Nonce string
	Edits                         int
	// Sends are the message's create and then each edit, as received.
	Sends []Sent
	At    time.Time // when it was created
}

// Sent is a message's content as one create or edit set it, and the mentions Discord parses
// in it (highlights, and on a create notifies): @everyone, @here, <@user> and <@&role> in
// the content, as that call's allowed_mentions lets them through (none given: every one).
type Sent struct {
	Content  string
	Mentions []string
}

// AllowedMentions is a call's allowed_mentions object.
type AllowedMentions struct {
	Parse []string `json:"parse"`
	Users []string `json:"users"`
	Roles []string `json:"roles"`
}

var mentionRE = regexp.MustCompile(`@everyone|@here|<@!?\d+>|<@&\d+>`)

// mentions are the mentions in content that Discord parses under am (nil: the call had
// none, so every one is parsed).
func mentions(content string, am *AllowedMentions) []string {
	allowed := func(kind, id string, ids []string) bool {
		return am == nil || slices.Contains(am.Parse, kind) || (id != "" && slices.Contains(ids, id))
	}
	var out []string
	for _, m := range mentionRE.FindAllString(content, -1) {
		var ok bool
		switch {
		case m == "@everyone" || m == "@here":
			ok = allowed("everyone", "", nil)
		case strings.HasPrefix(m, "<@&"):
			ok = allowed("roles", strings.Trim(m, "<@&>"), rolesOf(am))
		default:
			ok = allowed("users", strings.Trim(m, "<@!>"), usersOf(am))
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

func rolesOf(am *AllowedMentions) []string {
	if am == nil {
		return nil
	}
	return am.Roles
}

func usersOf(am *AllowedMentions) []string {
	if am == nil {
		return nil
	}
	return am.Users
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
	history  map[string][]string       // channel → its message ids, people's and the bot's, in order
	said     map[string]map[string]any // a person's message by id (its MESSAGE_CREATE payload)
	expired  map[string]bool           // sessions Discord no longer resumes
	limits   Limits
	buckets  map[string]*bucket // route bucket and channel → its window
	global   bucket
	limited  map[string]int // route → 429s of the fake's own limits
	// reactions are the bot's own: message id → emoji → on; reactAdds counts each add that
	// put one on (an add of one already there changes nothing, as on Discord)
	reactions map[string]map[string]bool
	reactAdds int
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
		byID: map[string]*Posted{}, conns: map[*websocket.Conn]*conn{}, snow: 1_100_000_000_000_000_000, firstTry: map[string]time.Time{},
		history: map[string][]string{}, said: map[string]map[string]any{}, expired: map[string]bool{},
		buckets: map[string]*bucket{}, limited: map[string]int{}, reactions: map[string]map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/{ver}/gateway", s.gatewayURL)
	mux.HandleFunc("GET /api/{ver}/channels/{id}", s.getChannel)
	mux.HandleFunc("GET /api/{ver}/channels/{id}/messages", s.getMessages)
	mux.HandleFunc("POST /api/{ver}/channels/{id}/messages", s.createMessage)
	mux.HandleFunc("PATCH /api/{ver}/channels/{id}/messages/{mid}", s.editMessage)
	mux.HandleFunc("PUT /api/{ver}/channels/{id}/messages/{mid}/reactions/{emoji}/@me", s.react)
	mux.HandleFunc("DELETE /api/{ver}/channels/{id}/messages/{mid}/reactions/{emoji}/@me", s.react)
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
			p := *m
			p.Sends = slices.Clone(m.Sends)
			out = append(out, p)
		}
	}
	return out
}

// HasPosted reports whether the bot has posted a message with each of contents, in any channel
// (a condition for Wait).
func HasPosted(contents ...string) func(v View) bool {
	return func(v View) bool {
		have := map[string]bool{}
		for _, m := range v.Messages("") {
			have[m.Content] = true
		}
		for _, c := range contents {
			if !have[c] {
				return false
			}
		}
		return true
	}
}

// FirstAttempt is when a message with content was first tried (a faulted try too).
func (v View) FirstAttempt(content string) (time.Time, bool) {
	t, ok := v.s.firstTry[content]
	return t, ok
}

// Calls counts a route's calls ("POST messages", "PATCH messages", "GET channel", "GET
// messages"); a call the fake's rate limits refused is not one.
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

// Limited counts the 429s the fake's own rate limits gave route ("" = all routes).
func (v View) Limited(route string) int {
	if route != "" {
		return v.s.limited[route]
	}
	n := 0
	for _, c := range v.s.limited {
		n += c
	}
	return n
}

// LimitedByRoute is Limited for every route that had one.
func (v View) LimitedByRoute() map[string]int {
	out := map[string]int{}
	for r, n := range v.s.limited {
		out[r] = n
	}
	return out
}

// Reacted reports whether the bot's reaction emoji is on message id now.
func (v View) Reacted(id, emoji string) bool { return v.s.reactions[id][emoji] }

// ReactionsAdded counts the bot's reactions put on (an add of one already there is not one).
func (v View) ReactionsAdded() int { return v.s.reactAdds }

// History is a channel's messages, people's and the bot's, oldest first, as their ids.
func (v View) History(channel string) []string {
	return append([]string(nil), v.s.history[channel]...)
}

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

// nextID is a fresh snowflake, as Discord makes them: milliseconds since 2015 in the top 42
// bits, so ids grow with time across channels (and never repeat here). With s.mu held.
func (s *Server) nextID() string {
	s.snow = max(s.snow+1, (time.Now().UnixMilli()-1420070400000)<<22)
	return strconv.FormatInt(s.snow, 10)
}

// guildCreate is the GUILD_CREATE Discord sends after READY for each guild (it lists the
// guild's channels and active threads, each with the id of its newest message). With s.mu held.
func (s *Server) guildCreate() map[string]any {
	chans, threads := []any{}, []any{}
	ids := make([]string, 0, len(s.channels))
	for id := range s.channels {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ch := s.channels[id]
		if ch["guild_id"] == nil {
			continue // a DM: Discord lists none to a bot
		}
		c := map[string]any{}
		for k, v := range ch {
			c[k] = v
		}
		if h := s.history[id]; len(h) > 0 {
			c["last_message_id"] = h[len(h)-1]
		} else {
			c["last_message_id"] = nil
		}
		switch ch["type"] {
		case 10, 11, 12:
			c["thread_metadata"] = map[string]any{"archived": false, "auto_archive_duration": 1440, "locked": false}
			threads = append(threads, c)
		default:
			chans = append(chans, c)
		}
	}
	return map[string]any{"id": s.GuildID, "name": "fake guild", "unavailable": false, "member_count": 2,
		"channels": chans, "threads": threads, "members": []any{}, "roles": []any{}, "emojis": []any{},
		"voice_states": []any{}, "presences": []any{}, "stage_instances": []any{}}
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
	switch st {
	case 0:
		st = 500
	case http.StatusForbidden: // a permission the bot lacks (Add Reactions, Send Messages ...)
		writeJSON(w, st, map[string]any{"message": "Missing Permissions", "code": 50013})
		return
	}
	writeJSON(w, st, map[string]any{"message": "Internal Server Error", "code": 0})
}

// pre applies a fault that comes before the call; it reports whether the request is answered.
func pre(w http.ResponseWriter, r *http.Request, f *Fault) bool {
	if f == nil || f.After {
		return false
	}
	if f.Until != nil {
		select {
		case <-f.Until:
		case <-r.Context().Done():
			return true
		}
		if f.Status == 0 {
			return false
		}
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
	if s.limit(w, "GET channel", r.PathValue("id")) {
		s.mu.Unlock()
		return
	}
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
		Content         string           `json:"content"`
		Nonce           any              `json:"nonce"`
		EnforceNonce    bool             `json:"enforce_nonce"`
		AllowedMentions *AllowedMentions `json:"allowed_mentions"`
	}
	decErr := json.NewDecoder(r.Body).Decode(&body)
	ch := r.PathValue("id")
	s.mu.Lock()
	if _, ok := s.firstTry[body.Content]; !ok && body.Content != "" {
		s.firstTry[body.Content] = time.Now()
	}
	if s.limit(w, "POST messages", ch) {
		s.mu.Unlock()
		return
	}
	f := s.take("POST messages")
	s.notify()
	s.mu.Unlock()
	if pre(w, r, f) || !s.authed(w, r) {
		return
	}
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
		m = &Posted{ID: s.nextID(), ChannelID: ch, Content: body.Content, Nonce: nonce, At: time.Now(),
			Sends: []Sent{{Content: body.Content, Mentions: mentions(body.Content, body.AllowedMentions)}}}
		s.msgs = append(s.msgs, m)
		s.byID[m.ID] = m
		s.history[ch] = append(s.history[ch], m.ID)
	}
	out := s.message(m)
	s.notify()
	s.mu.Unlock()
	if f != nil && f.After {
		fail(w, *f)
		return
	}
	writeJSON(w, 200, out)
}

func (s *Server) editMessage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content         *string          `json:"content"`
		AllowedMentions *AllowedMentions `json:"allowed_mentions"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	if s.limit(w, "PATCH messages", r.PathValue("id")) {
		s.mu.Unlock()
		return
	}
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
		m.Sends = append(m.Sends, Sent{Content: m.Content, Mentions: mentions(m.Content, body.AllowedMentions)})
		m.Edits++
	}
	out := s.message(m)
	s.notify()
	s.mu.Unlock()
	if f != nil && f.After {
		fail(w, *f)
		return
	}
	writeJSON(w, 200, out)
}

// react serves PUT and DELETE /channels/{id}/messages/{message}/reactions/{emoji}/@me: the
// bot's own reaction on or off (204), 404 Unknown Message (10008) for a message not in the
// channel, 400 Unknown Emoji (10014) for an empty one.
func (s *Server) react(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " reactions"
	ch, id, emoji := r.PathValue("id"), r.PathValue("mid"), r.PathValue("emoji")
	s.mu.Lock()
	if s.limit(w, route, ch) {
		s.mu.Unlock()
		return
	}
	f := s.take(route)
	s.notify()
	s.mu.Unlock()
	if pre(w, r, f) || !s.authed(w, r) {
		return
	}
	s.mu.Lock()
	known := false
	for _, h := range s.history[ch] {
		known = known || h == id
	}
	switch {
	case !known:
		s.mu.Unlock()
		writeJSON(w, 404, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	case emoji == "":
		s.mu.Unlock()
		writeJSON(w, 400, map[string]any{"message": "Unknown Emoji", "code": 10014})
		return
	}
	if s.reactions[id] == nil {
		s.reactions[id] = map[string]bool{}
	}
	on := r.Method == http.MethodPut
	if on && !s.reactions[id][emoji] {
		s.reactAdds++
	}
	s.reactions[id][emoji] = on
	s.notify()
	s.mu.Unlock()
	if f != nil && f.After {
		fail(w, *f)
		return
	}
	w.WriteHeader(http.StatusNoContent)
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
			if err == nil {
				s.seq++
				err = c.send(map[string]any{"op": 0, "t": "GUILD_CREATE", "s": s.seq, "d": s.guildCreate()})
			}
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
			if s.expired[rs.SessionID] || !strings.HasPrefix(rs.SessionID, "fake-session-") {
				// Discord no longer knows the session: op 9, not resumable; the client identifies.
				err := c.send(map[string]any{"op": 9, "d": false, "s": nil, "t": nil})
				s.notify()
				s.mu.Unlock()
				if err != nil {
					return
				}
				continue
			}
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
// replay, and kept in the channel's history) and returns the message id. A message said while
// no connection is ready reaches no bot: only the history has it.
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
	s.history[m.ChannelID] = append(s.history[m.ChannelID], m.ID)
	s.said[m.ID] = d
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

// Expire drops every gateway connection, as Drop does, and forgets their sessions: the
// clients' RESUME is refused (op 9, not resumable) and they identify as new sessions, which
// Discord replays nothing to. What was said in between is only in the channels' history.
func (s *Server) Expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i <= s.sessions; i++ {
		s.expired[fmt.Sprintf("fake-session-%d", i)] = true
	}
	for ws, c := range s.conns {
		c.ready = false
		ws.Close()
	}
	s.notify()
}

// Accept ends a Refuse: the next gateway connections are taken.
func (s *Server) Accept() {
	s.mu.Lock()
	s.refuse = 0
	s.notify()
	s.mu.Unlock()
}

// getMessages is GET /channels/{id}/messages: before, after or around a message id (one of
// them), limit 1-100 (default 50), newest first whatever the query: after=X gives the limit
// oldest messages after X, newest first.
func (s *Server) getMessages(w http.ResponseWriter, r *http.Request) {
	ch := r.PathValue("id")
	s.mu.Lock()
	if s.limit(w, "GET messages", ch) {
		s.mu.Unlock()
		return
	}
	f := s.take("GET messages")
	s.notify()
	s.mu.Unlock()
	if pre(w, r, f) || !s.authed(w, r) {
		return
	}
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035,
				"errors": map[string]any{"limit": map[string]any{"_errors": []any{map[string]any{"code": "NUMBER_TYPE_MAX", "message": "int value should be less than or equal to 100."}}}}})
			return
		}
		limit = n
	}
	set := 0
	for _, k := range []string{"before", "after", "around"} {
		if q.Has(k) {
			set++
		}
	}
	if set > 1 {
		writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	s.mu.Lock()
	_, known := s.channels[ch]
	ids := append([]string(nil), s.history[ch]...)
	s.mu.Unlock()
	if !known && len(ids) == 0 {
		writeJSON(w, 404, map[string]any{"message": "Unknown Channel", "code": 10003})
		return
	}
	sort.Slice(ids, func(i, j int) bool { return later(ids[j], ids[i]) }) // oldest first
	var pick []string
	switch {
	case q.Has("after"):
		a := q.Get("after")
		for _, id := range ids {
			if later(id, a) && len(pick) < limit {
				pick = append(pick, id)
			}
		}
	case q.Has("before"):
		b := q.Get("before")
		var older []string
		for _, id := range ids {
			if later(b, id) {
				older = append(older, id)
			}
		}
		pick = older[max(0, len(older)-limit):]
	case q.Has("around"):
		c := q.Get("around")
		i := sort.Search(len(ids), func(i int) bool { return !later(c, ids[i]) })
		lo := max(0, i-limit/2)
		pick = ids[lo:min(len(ids), lo+limit)]
	default:
		pick = ids[max(0, len(ids)-limit):]
	}
	out := make([]any, 0, len(pick))
	s.mu.Lock()
	for i := len(pick) - 1; i >= 0; i-- { // newest first
		id := pick[i]
		if m := s.byID[id]; m != nil {
			out = append(out, s.message(m))
			continue
		}
		d := map[string]any{}
		for k, v := range s.said[id] {
			if k != "guild_id" && k != "member" { // gateway-only fields
				d[k] = v
			}
		}
		out = append(out, d)
	}
	s.mu.Unlock()
	writeJSON(w, 200, out)
}

// later reports whether snowflake a comes after b (decimal ids: longer is later).
func later(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// Limit is one rate limit: N requests per window of Per, the window starting at the first
// request after the previous one ended (Discord's buckets reset at a time, not gradually).
type Limit struct {
	N   int
	Per time.Duration
}

// Limits are the rate limits the fake enforces (SetLimits); a zero Limit is none.
type Limits struct {
	Create Limit // POST /channels/{id}/messages, per channel
	Edit   Limit // PATCH /channels/{id}/messages/{id}, per channel
	// Reaction is the bot's reactions, adding and removing together, per channel
	Reaction Limit
	Other    Limit // every other REST route, per route and channel
	Global   Limit // per bot, all routes together (Discord: 50 a second)
}

// DiscordLimits are Discord's documented limits: message sends about 5 per 5 s per channel
// (edits likewise, in a bucket of their own) and 50 requests a second per bot; reactions get
// 1 per 250 ms per channel (what Discord's headers report for them; the figure is not
// documented, and discordgo alone paces them at 1 per 200 ms), the other routes 5 per second
// per channel here.
var DiscordLimits = Limits{Create: Limit{5, 5 * time.Second}, Edit: Limit{5, 5 * time.Second},
	Reaction: Limit{1, 250 * time.Millisecond}, Other: Limit{5, time.Second}, Global: Limit{50, time.Second}}

// SetLimits makes the fake enforce l (the zero Limits: none, the default).
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	s.limits = l
	s.buckets = map[string]*bucket{}
	s.global = bucket{}
	s.mu.Unlock()
}

type bucket struct {
	remaining int
	reset     time.Time
}

// take spends one request of l from b at now; it returns the wait when none is left.
func (b *bucket) take(l Limit, now time.Time) (time.Duration, bool) {
	if !now.Before(b.reset) {
		b.remaining, b.reset = l.N, now.Add(l.Per)
	}
	if b.remaining <= 0 {
		return b.reset.Sub(now), false
	}
	b.remaining--
	return 0, true
}

// limit applies the rate limits to one request of route on channel, with s.mu held: it sets
// the route's X-RateLimit headers and reports whether it answered 429.
func (s *Server) limit(w http.ResponseWriter, route, channel string) bool {
	l, name := s.limits.Other, strings.ReplaceAll(route, " ", "-")
	switch route {
	case "POST messages":
		l = s.limits.Create
	case "PATCH messages":
		l = s.limits.Edit
	case "PUT reactions", "DELETE reactions":
		l, name = s.limits.Reaction, "reactions" // one bucket for both
	}
	now := time.Now()
	if g := s.limits.Global; g.N > 0 && g.Per > 0 {
		if wait, ok := s.global.take(g, now); !ok {
			s.limited[route]++
			s.notify()
			h := w.Header()
			h.Set("X-RateLimit-Global", "true")
			h.Set("X-RateLimit-Scope", "global")
			tooMany(w, wait, true)
			return true
		}
	}
	if l.N <= 0 || l.Per <= 0 {
		return false
	}
	b := s.buckets[name+"/"+channel]
	if b == nil {
		b = &bucket{}
		s.buckets[name+"/"+channel] = b
	}
	wait, ok := b.take(l, now)
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(l.N))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, b.remaining)))
	resetAfter := b.reset.Sub(now).Seconds()
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(b.reset.UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(resetAfter, 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", fmt.Sprintf("%x", name))
	if ok {
		return false
	}
	s.limited[route]++
	s.notify()
	h.Set("X-RateLimit-Scope", "user")
	tooMany(w, wait, false)
	return true
}

// tooMany answers Discord's 429 for a wait.
func tooMany(w http.ResponseWriter, wait time.Duration, global bool) {
	secs := math.Ceil(wait.Seconds()*1000) / 1000
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": global})
}
