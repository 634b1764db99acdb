package telegramfake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func post(t *testing.T, f *API, method string, body map[string]any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(f.URL+"/bot"+f.token+"/"+method, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// The flood limits: a chat takes a burst of calls (sends and edits), then 429 with
// retry_after; a group takes GroupPerMinute new messages a minute, edits beside them; a call
// refused for the limits is counted apart from injected faults. (The periods are an hour and
// a minute, so no pause of the machine refills them.)
func TestLimits(t *testing.T) {
	t.Parallel()
	f := New(t, "1:x")
	f.SetLimits(Limits{PerChat: time.Hour, Burst: 3})
	for i := range 3 {
		if st, out := post(t, f, "sendMessage", map[string]any{"chat_id": 5, "text": "hi"}); st != 200 {
			t.Fatalf("call %d within the burst: %d %v", i+1, st, out)
		}
	}
	st, out := post(t, f, "editMessageText", map[string]any{"chat_id": 5, "message_id": 1001, "text": "hello"})
	params, _ := out["parameters"].(map[string]any)
	if ra, _ := params["retry_after"].(float64); st != 429 || ra < 3500 {
		t.Fatalf("the 4th call: %d %v, want 429 with retry_after about an hour", st, out)
	}
	if st, _ := post(t, f, "sendMessage", map[string]any{"chat_id": 6, "text": "hi"}); st != 200 {
		t.Fatalf("another chat: %d", st)
	}
	f.Fail("sendMessage", 1, Fault{RetryAfter: 1})
	post(t, f, "sendMessage", map[string]any{"chat_id": 7, "text": "hi"})
	if n := f.Limited(""); n != 1 || f.Limited("editMessageText") != 1 {
		t.Fatalf("limited %d, want the one edit over the burst (the injected 429 is not counted)", n)
	}

	g := New(t, "1:x")
	g.SetLimits(Limits{GroupPerMinute: 2})
	for i := range 2 {
		if st, _ := post(t, g, "sendMessage", map[string]any{"chat_id": -100, "text": "hi"}); st != 200 {
			t.Fatalf("group message %d: %d", i+1, st)
		}
	}
	if st, _ := post(t, g, "editMessageText", map[string]any{"chat_id": -100, "message_id": 1001, "text": "edited"}); st != 200 {
		t.Fatalf("an edit in the group: %d, want it not counted", st)
	}
	if st, _ := post(t, g, "sendMessage", map[string]any{"chat_id": 100, "text": "hi"}); st != 200 {
		t.Fatalf("a DM: %d", st)
	}
	if st, _ := post(t, g, "sendMessage", map[string]any{"chat_id": -100, "text": "third"}); st != 429 || g.Limited("sendMessage") != 1 {
		t.Fatalf("the group's 3rd message in a minute: %d, want 429", st)
	}
}
