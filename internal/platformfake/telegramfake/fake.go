// Package telegramfake is a local fake of the Telegram Bot API for tests and soaks: an
// httptest server on 127.0.0.1 serving getUpdates (offsets, long polling, 409 for a second
// poller), getChat, sendMessage and editMessageText (the 4,096-character limit, HTML entity parsing,
// "message is not modified"), setWebhook and deleteWebhook, with Telegram's JSON bodies and
// error shapes, faults on demand (429 with retry_after, 5xx, requests that hang), and, when
// asked (SetLimits), Telegram's flood limits: a call over them is answered 429 and counted
// (Limited), so a soak can tell its client's own pacing from the faults it injected.
package telegramfake

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeAPI is a local Bot API on 127.0.0.1: getUpdates with offsets, sendMessage and
// editMessageText with Telegram's limits and error bodies, setWebhook; faults on demand.
type API struct {
	*httptest.Server
	token string

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	updates   []map[string]any
	nextUp    int64
	confirmed int64 // every update below this is confirmed
	nextMsg   map[int64]int64
	sent      []*Message
	faults    map[string][]Fault
	down      map[string]Fault // methods failing every call until Up
	calls     map[string]int
	polling   int
	conflicts int
	webhook   map[string]any
	chats     map[int64]chatInfo   // what getChat knows: every chat pushed to, and AddChat's
	firstTry  map[string]time.Time // sendMessage's shown text → its first attempt (faulted or not)
	limits    Limits
	flood     map[int64]*flood // per chat: the limits' state
	limited   map[string]int   // 429s answered for the limits, by method
}

// Limits are the flood limits the fake enforces (the zero value: none), as Telegram states
// them for bots: about one message a second per chat, with short bursts, and no more than 20
// messages a minute to one group. A call over a limit is answered 429 with retry_after (the
// seconds until it would pass) and is not counted; injected faults are served first and not
// counted either.
type Limits struct {
	// PerChat is the time per call (sendMessage and editMessageText) to one chat, after a
	// burst of Burst calls at once; Grace is how much early a call may come (the network's
	// jitter between the client's pacing and its arrival).
	PerChat time.Duration
	Burst   int
	Grace   time.Duration
	// GroupPerMinute is how many new messages (sendMessage) one group (a negative chat id)
	// takes in any minute; edits are not counted.
	GroupPerMinute int
}

// TelegramLimits are the limits as Telegram's bot FAQ states them (a burst of 3 assumed;
// 250 ms of grace).
var TelegramLimits = Limits{PerChat: time.Second, Burst: 3, Grace: 250 * time.Millisecond, GroupPerMinute: 20}

type flood struct {
	tokens float64
	at     time.Time
	sends  []time.Time // a group's accepted new messages in the last minute
}

// SetLimits makes the fake enforce l from now on.
func (f *API) SetLimits(l Limits) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits = l
}

// Limited counts the 429s answered for the limits (not injected) to method ("" all).
func (f *API) Limited(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if method != "" {
		return f.limited[method]
	}
	n := 0
	for _, c := range f.limited {
		n += c
	}
	return n
}

// overLimit reports, under f.mu, how long a call of method to chat must wait for the limits
// (0: it may go, and it is counted).
func (f *API) overLimit(method string, chat int64, now time.Time) time.Duration {
	l := f.limits
	if l.PerChat <= 0 && l.GroupPerMinute <= 0 {
		return 0
	}
	fl := f.flood[chat]
	if fl == nil {
		fl = &flood{tokens: float64(max(l.Burst, 1)), at: now}
		f.flood[chat] = fl
	}
	var wait time.Duration
	if l.PerChat > 0 {
		fl.tokens = min(float64(max(l.Burst, 1)), fl.tokens+float64(now.Sub(fl.at))/float64(l.PerChat))
		fl.at = now
		if need := 1 - fl.tokens - float64(l.Grace)/float64(l.PerChat); need > 0 {
			wait = time.Duration(need * float64(l.PerChat))
		}
	}
	if method == "sendMessage" && chat < 0 && l.GroupPerMinute > 0 {
		for len(fl.sends) > 0 && !fl.sends[0].Add(time.Minute).After(now) {
			fl.sends = fl.sends[1:]
		}
		if n := len(fl.sends); n >= l.GroupPerMinute {
			if w := fl.sends[n-l.GroupPerMinute].Add(time.Minute - l.Grace).Sub(now); w > wait {
				wait = w
			}
		}
	}
	if wait > 0 {
		return wait
	}
	if l.PerChat > 0 {
		fl.tokens--
	}
	if method == "sendMessage" && chat < 0 {
		fl.sends = append(fl.sends, now)
	}
	return 0
}

type chatInfo struct {
	kind  string
	forum bool
}

// Message is one message the bot sent.
type Message struct {
	Chat, Thread, ID int64
	Text             string // as shown (tags stripped, entities decoded)
	Raw              string // as sent
	ParseMode        string
	Edits            int
	At               time.Time // when it was sent (its first text, maybe a streamed prefix)
}

// Fault is one injected failure.
type Fault struct {
	Status     int  // an error status (5xx)
	RetryAfter int  // a 429 with parameters.retry_after (seconds)
	Hang       bool // hold the request until the client gives up
}

// New starts a fake Bot API for token; it is closed when the test ends.
func New(t testing.TB, token string) *API {
	f := Start(token)
	t.Cleanup(f.Close)
	return f
}

// Start starts a fake Bot API for token (a soak's); Close stops it.
func Start(token string) *API {
	f := &API{token: token, changed: make(chan struct{}), nextUp: 1, nextMsg: map[int64]int64{},
		faults: map[string][]Fault{}, down: map[string]Fault{}, chats: map[int64]chatInfo{}, firstTry: map[string]time.Time{}, calls: map[string]int{},
		flood: map[int64]*flood{}, limited: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *API) bump() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Fail makes the next n calls of method fail with ft.
func (f *API) Fail(method string, n int, ft Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.faults[method] = append(f.faults[method], ft)
	}
}

// Down makes every call of method fail with ft until Up (an outage longer than any
// client's retries).
func (f *API) Down(method string, ft Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[method] = ft
	f.bump()
}

// Up ends Down's outage of method.
func (f *API) Up(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.down, method)
	f.bump()
}

// Pending counts the faults queued for method's next calls and not yet served.
func (f *API) Pending(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.faults[method])
}

func reply(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func apiErr(w http.ResponseWriter, status int, desc string, params map[string]any) {
	b := map[string]any{"ok": false, "error_code": status, "description": desc}
	if params != nil {
		b["parameters"] = params
	}
	reply(w, status, b)
}

var tagRe = regexp.MustCompile(`</?(b|i|s|u|code|pre|a)( [^>]*)?>`)

// shown is what Telegram displays of an HTML text, or false when it cannot parse it.
func shown(text, mode string) (string, bool) {
	if mode != "HTML" {
		return text, true
	}
	stripped := tagRe.ReplaceAllString(text, "")
	if strings.ContainsAny(stripped, "<>") {
		return "", false
	}
	return html.UnescapeString(stripped), true
}

func (f *API) serve(w http.ResponseWriter, r *http.Request) {
	prefix := "/bot" + f.token + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		apiErr(w, 401, "Unauthorized", nil)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, prefix)
	var p map[string]any
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		apiErr(w, 400, "Bad Request: invalid JSON", nil)
		return
	}
	f.mu.Lock()
	f.calls[method]++
	if method == "sendMessage" {
		text, _ := p["text"].(string)
		mode, _ := p["parse_mode"].(string)
		if vis, ok := shown(text, mode); ok {
			if _, seen := f.firstTry[vis]; !seen {
				f.firstTry[vis] = time.Now()
			}
		}
	}
	ft, faulted := f.down[method]
	if q := f.faults[method]; !faulted && len(q) > 0 {
		ft, faulted = q[0], true
		f.faults[method] = q[1:]
	}
	if faulted {
		f.bump()
		f.mu.Unlock()
		switch {
		case ft.Hang:
			<-r.Context().Done()
		case ft.RetryAfter > 0:
			apiErr(w, 429, fmt.Sprintf("Too Many Requests: retry after %d", ft.RetryAfter), map[string]any{"retry_after": ft.RetryAfter})
		default:
			apiErr(w, ft.Status, "Internal Server Error", nil)
		}
		return
	}
	defer f.mu.Unlock()
	if method == "sendMessage" || method == "editMessageText" {
		if wait := f.overLimit(method, parseChat(p["chat_id"]), time.Now()); wait > 0 {
			f.limited[method]++
			secs := int((wait + time.Second - 1) / time.Second)
			apiErr(w, 429, fmt.Sprintf("Too Many Requests: retry after %d", secs), map[string]any{"retry_after": secs})
			return
		}
	}
	switch method {
	case "getUpdates":
		f.getUpdates(w, r, p)
	case "sendMessage":
		f.sendMessage(w, p)
	case "editMessageText":
		f.editMessageText(w, p)
	case "getChat":
		f.getChat(w, p)
	case "setWebhook", "deleteWebhook":
		f.webhook = p
		f.bump()
		reply(w, 200, map[string]any{"ok": true, "result": true})
	default:
		apiErr(w, 404, "Not Found: method not found", nil)
	}
}

// num reads a numeric parameter (0 when absent).
func num(p map[string]any, k string) int64 {
	v, _ := p[k].(float64)
	return int64(v)
}

// getUpdates answers a long poll, f.mu held (it is released while the poll waits).
func (f *API) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]any) {
	if f.polling > 0 {
		f.conflicts++
		apiErr(w, 409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", nil)
		return
	}
	if off := num(p, "offset"); off > f.confirmed {
		f.confirmed = off
		f.bump()
	}
	f.polling++
	f.bump()
	defer func() { f.polling--; f.bump() }()
	deadline := time.After(time.Duration(num(p, "timeout")) * time.Second) // the long poll's own timeout
	for {
		var out []map[string]any
		for _, u := range f.updates {
			if int64(u["update_id"].(int64)) >= f.confirmed {
				out = append(out, u)
			}
		}
		if len(out) > 0 || num(p, "timeout") == 0 {
			if out == nil {
				out = []map[string]any{}
			}
			reply(w, 200, map[string]any{"ok": true, "result": out})
			return
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			f.mu.Lock()
			reply(w, 200, map[string]any{"ok": true, "result": []map[string]any{}})
			return
		case <-r.Context().Done():
			f.mu.Lock()
			return
		}
		f.mu.Lock()
	}
}

// sendMessage records a sent message, f.mu held.
func (f *API) sendMessage(w http.ResponseWriter, p map[string]any) {
	text, _ := p["text"].(string)
	mode, _ := p["parse_mode"].(string)
	vis, ok := shown(text, mode)
	if !ok {
		apiErr(w, 400, "Bad Request: can't parse entities: unsupported start tag", nil)
		return
	}
	if n := utf8.RuneCountInString(vis); n == 0 || n > 4096 {
		apiErr(w, 400, "Bad Request: message is too long", nil)
		return
	}
	c := parseChat(p["chat_id"])
	f.nextMsg[c]++
	m := &Message{Chat: c, Thread: num(p, "message_thread_id"), ID: 1000 + f.nextMsg[c], Text: vis, Raw: text, ParseMode: mode, At: time.Now()}
	f.sent = append(f.sent, m)
	f.bump()
	reply(w, 200, map[string]any{"ok": true, "result": map[string]any{"message_id": m.ID, "date": time.Now().Unix(),
		"chat": map[string]any{"id": c, "type": "private"}, "text": vis}})
}

// editMessageText edits a sent message, f.mu held.
func (f *API) editMessageText(w http.ResponseWriter, p map[string]any) {
	text, _ := p["text"].(string)
	mode, _ := p["parse_mode"].(string)
	vis, ok := shown(text, mode)
	if !ok {
		apiErr(w, 400, "Bad Request: can't parse entities: unsupported start tag", nil)
		return
	}
	c, id := parseChat(p["chat_id"]), num(p, "message_id")
	for _, m := range f.sent {
		if m.Chat == c && m.ID == id {
			if m.Raw == text {
				apiErr(w, 400, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message", nil)
				return
			}
			m.Text, m.Raw, m.Edits = vis, text, m.Edits+1
			f.bump()
			reply(w, 200, map[string]any{"ok": true, "result": map[string]any{"message_id": id}})
			return
		}
	}
	apiErr(w, 400, "Bad Request: message to edit not found", nil)
}

// getChat describes a known chat, f.mu held.
func (f *API) getChat(w http.ResponseWriter, p map[string]any) {
	c := parseChat(p["chat_id"])
	ci, ok := f.chats[c]
	if !ok {
		apiErr(w, 400, "Bad Request: chat not found", nil)
		return
	}
	res := map[string]any{"id": c, "type": ci.kind}
	if ci.forum {
		res["is_forum"] = true
	}
	if ci.kind == "private" {
		res["first_name"] = fmt.Sprintf("User%d", c)
	} else {
		res["title"] = fmt.Sprintf("Chat %d", c)
	}
	reply(w, 200, map[string]any{"ok": true, "result": res})
}

// parseChat reads a chat_id (a number or a numeric string).
func parseChat(v any) int64 {
	var id int64
	switch v := v.(type) {
	case string:
		fmt.Sscan(v, &id)
	case float64:
		id = int64(v)
	}
	return id
}

// AddChat makes a chat known to getChat: kind is private, group, supergroup or channel;
// forum marks a supergroup with topics. (Push adds the chats it writes to.)
func (f *API) AddChat(chat int64, kind string, forum bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chats[chat] = chatInfo{kind: kind, forum: forum}
}

// Push queues an update holding a message from user in chat; it returns the update id.
// chatType is private, group or supergroup; thread > 0 makes it a forum topic message.
func (f *API) Push(chat int64, chatType string, thread int64, userID int64, text string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextMsg[chat]++
	if ci := f.chats[chat]; !ci.forum {
		f.chats[chat] = chatInfo{kind: chatType, forum: thread > 0}
	}
	msg := map[string]any{
		"message_id": f.nextMsg[chat], "date": 1764590000,
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": fmt.Sprintf("User%d", userID)},
		"chat": map[string]any{"id": chat, "type": chatType, "is_forum": thread > 0},
		"text": text,
	}
	if thread > 0 {
		msg["message_thread_id"], msg["is_topic_message"] = thread, true
	}
	id := f.nextUp
	f.nextUp++
	f.updates = append(f.updates, map[string]any{"update_id": id, "message": msg})
	f.bump()
	return id
}

// UpdateJSON is a raw update body (for webhook posts).
func (f *API) UpdateJSON(id int64) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.updates {
		if u["update_id"].(int64) == id {
			b, _ := json.Marshal(u)
			return b
		}
	}
	return nil
}

// WaitFor waits until cond holds (it is called without the fake's lock: use its getters); the minute is a hang guard, not a verdict.
func (f *API) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: gave up", what)
		}
	}
}

// WaitConfirmed waits until Telegram would consider update id handled (a later getUpdates
// named an offset past it).
func (f *API) WaitConfirmed(t testing.TB, id int64) {
	t.Helper()
	f.WaitFor(t, fmt.Sprintf("update %d confirmed", id), func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.confirmed > id
	})
}

// Unconfirm forgets confirmations from id on: the process died before Telegram heard them.
func (f *API) Unconfirm(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confirmed = id
	f.bump()
}

// Messages lists the messages sent to a chat (and thread), oldest first.
func (f *API) Messages(chat, thread int64) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Message
	for _, m := range f.sent {
		if m.Chat == chat && m.Thread == thread {
			out = append(out, *m)
		}
	}
	return out
}

// Texts lists the texts shown in a chat (and thread), oldest first.
func (f *API) Texts(chat, thread int64) []string {
	var out []string
	for _, m := range f.Messages(chat, thread) {
		out = append(out, m.Text)
	}
	return out
}

// Webhook is the last setWebhook's parameters (nil before one).
func (f *API) Webhook() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.webhook
}

// Conflicts counts getUpdates calls refused because another was in flight (two pollers).
func (f *API) Conflicts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conflicts
}

// Polling reports how many getUpdates calls are in flight.
func (f *API) Polling() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polling
}

// Calls counts the calls of a method (faulted ones included).
func (f *API) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// All lists every message the bot sent, oldest first.
func (f *API) All() []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Message, len(f.sent))
	for i, m := range f.sent {
		out[i] = *m
	}
	return out
}

// FirstAttempt is when a sendMessage showing text was first tried (a faulted try too).
func (f *API) FirstAttempt(text string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.firstTry[text]
	return t, ok
}

// Confirmed is the offset Telegram holds: every update below it is confirmed.
func (f *API) Confirmed() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.confirmed
}
