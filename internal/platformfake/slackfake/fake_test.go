package slackfake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func call(t *testing.T, s *Server, method string, body map[string]any) (int, http.Header, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, s.URL+method, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.BotToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// The rate limits: a channel takes a burst of posts, then 429 with Retry-After in whole
// seconds and {"ok":false,"error":"ratelimited"}, and the post is not made; another channel
// is not held by it; a tier caps a method's calls across the workspace; injected 429s are not
// counted as the limits'. (The periods are hours, so no pause of the machine refills them.)
func TestLimits(t *testing.T) {
	t.Parallel()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetLimits(Limits{PostEvery: time.Hour, PostBurst: 2, PerMinute: map[string]int{"chat.update": 3}, Window: 2 * time.Hour})
	var ts string
	for i := range 2 {
		st, _, out := call(t, s, "chat.postMessage", map[string]any{"channel": "C1", "text": "hi"})
		if st != 200 || out["ok"] != true {
			t.Fatalf("post %d within the burst: %d %v", i+1, st, out)
		}
		ts, _ = out["ts"].(string)
	}
	st, h, out := call(t, s, "chat.postMessage", map[string]any{"channel": "C1", "text": "over"})
	if ra, _ := strconv.Atoi(h.Get("Retry-After")); st != 429 || out["error"] != "ratelimited" || ra < 3500 || ra > 3600 {
		t.Fatalf("the 3rd post: %d Retry-After %q %v, want 429 ratelimited, about an hour", st, h.Get("Retry-After"), out)
	}
	if st, _, _ := call(t, s, "chat.postMessage", map[string]any{"channel": "C2", "text": "hi"}); st != 200 {
		t.Fatalf("another channel: %d", st)
	}
	for i, ch := range []string{"C1", "C1", "C2"} {
		id := ts
		if ch == "C2" {
			id = "nope"
		}
		if st, _, _ := call(t, s, "chat.update", map[string]any{"channel": ch, "ts": id, "text": "edited"}); st != 200 {
			t.Fatalf("update %d within the tier: %d", i+1, st)
		}
	}
	if st, h, _ := call(t, s, "chat.update", map[string]any{"channel": "C3", "ts": ts, "text": "x"}); st != 429 || h.Get("Retry-After") == "" {
		t.Fatalf("the 4th update in the workspace (another channel): %d, want 429", st)
	}
	s.Fail("chat.postMessage", Fault{Status: 429, RetryAfter: 1})
	call(t, s, "chat.postMessage", map[string]any{"channel": "C9", "text": "hi"})
	s.Inspect(func(v View) {
		if v.Limited("") != 2 || v.Limited("chat.postMessage") != 1 || v.Limited("chat.update") != 1 {
			t.Errorf("limited %d (posts %d, updates %d), want 2: one post, one update (the injected 429 apart)",
				v.Limited(""), v.Limited("chat.postMessage"), v.Limited("chat.update"))
		}
		var over int
		for _, m := range v.Messages("C1") {
			if m.Text == "over" {
				over++
			}
		}
		if over != 0 {
			t.Errorf("the refused post was made")
		}
	})
}
