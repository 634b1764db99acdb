package telegram

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
type fakeAPI struct {
	*httptest.Server
	token string

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	updates   []map[string]any
	nextUp    int64
	confirmed int64 // every update below this is confirmed
	nextMsg   map[int64]int64
	sent      []*sentMsg
	faults    map[string][]fault
	calls     map[string]int
	polling   int
	conflicts int
	webhook   map[string]any
}

type sentMsg struct {
	Chat, Thread, ID int64
	Text             string // as shown (tags stripped, entities decoded)
	Raw              string // as sent
	ParseMode        string
	Edits            int
}

type fault struct {
	status     int
	retryAfter int
	hang       bool // hold the request until the client gives up
}

func newFakeAPI(t *testing.T, token string) *fakeAPI {
	f := &fakeAPI{token: token, changed: make(chan struct{}), nextUp: 1, nextMsg: map[int64]int64{},
		faults: map[string][]fault{}, calls: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) bump() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// fail makes the next n calls of method fail with ft.
func (f *fakeAPI) fail(method string, n int, ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.faults[method] = append(f.faults[method], ft)
	}
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

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
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
	if q := f.faults[method]; len(q) > 0 {
		ft := q[0]
		f.faults[method] = q[1:]
		f.bump()
		f.mu.Unlock()
		switch {
		case ft.hang:
			<-r.Context().Done()
		case ft.retryAfter > 0:
			apiErr(w, 429, fmt.Sprintf("Too Many Requests: retry after %d", ft.retryAfter), map[string]any{"retry_after": ft.retryAfter})
		default:
			apiErr(w, ft.status, "Internal Server Error", nil)
		}
		return
	}
	defer f.mu.Unlock()
	num := func(k string) int64 {
		v, _ := p[k].(float64)
		return int64(v)
	}
	chatID := func() int64 {
		var id int64
		switch v := p["chat_id"].(type) {
		case string:
			fmt.Sscan(v, &id)
		case float64:
			id = int64(v)
		}
		return id
	}
	switch method {
	case "getUpdates":
		if f.polling > 0 {
			f.conflicts++
			apiErr(w, 409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", nil)
			return
		}
		if off := num("offset"); off > f.confirmed {
			f.confirmed = off
			f.bump()
		}
		f.polling++
		f.bump()
		defer func() { f.polling--; f.bump() }()
		deadline := time.After(time.Duration(num("timeout")) * time.Second) // the long poll's own timeout
		for {
			var out []map[string]any
			for _, u := range f.updates {
				if int64(u["update_id"].(int64)) >= f.confirmed {
					out = append(out, u)
				}
			}
			if len(out) > 0 || num("timeout") == 0 {
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
	case "sendMessage":
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
		c := chatID()
		f.nextMsg[c]++
		m := &sentMsg{Chat: c, Thread: num("message_thread_id"), ID: 1000 + f.nextMsg[c], Text: vis, Raw: text, ParseMode: mode}
		f.sent = append(f.sent, m)
		f.bump()
		reply(w, 200, map[string]any{"ok": true, "result": map[string]any{"message_id": m.ID, "date": time.Now().Unix(),
			"chat": map[string]any{"id": c, "type": "private"}, "text": vis}})
	case "editMessageText":
		text, _ := p["text"].(string)
		mode, _ := p["parse_mode"].(string)
		vis, ok := shown(text, mode)
		if !ok {
			apiErr(w, 400, "Bad Request: can't parse entities: unsupported start tag", nil)
			return
		}
		c, id := chatID(), num("message_id")
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
	case "setWebhook", "deleteWebhook":
		f.webhook = p
		f.bump()
		reply(w, 200, map[string]any{"ok": true, "result": true})
	default:
		apiErr(w, 404, "Not Found: method not found", nil)
	}
}

// push queues an update holding a message from user in chat; it returns the update id.
// chatType is private, group or supergroup; thread > 0 makes it a forum topic message.
func (f *fakeAPI) push(chat int64, chatType string, thread int64, userID int64, text string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextMsg[chat]++
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

// update is a raw update body (for webhook posts).
func (f *fakeAPI) updateJSON(id int64) []byte {
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

// waitFor waits until cond holds (under f.mu); the minute is a hang guard, not a verdict.
func (f *fakeAPI) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		f.mu.Lock()
		ok, ch := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: gave up", what)
		}
	}
}

// waitConfirmed waits until Telegram would consider update id handled (a later getUpdates
// named an offset past it).
func (f *fakeAPI) waitConfirmed(t *testing.T, id int64) {
	t.Helper()
	f.waitFor(t, fmt.Sprintf("update %d confirmed", id), func() bool { return f.confirmed > id })
}

// unconfirm forgets confirmations from id on: the process died before Telegram heard them.
func (f *fakeAPI) unconfirm(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confirmed = id
	f.bump()
}

func (f *fakeAPI) messages(chat, thread int64) []sentMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sentMsg
	for _, m := range f.sent {
		if m.Chat == chat && m.Thread == thread {
			out = append(out, *m)
		}
	}
	return out
}

func (f *fakeAPI) texts(chat, thread int64) []string {
	var out []string
	for _, m := range f.messages(chat, thread) {
		out = append(out, m.Text)
	}
	return out
}
