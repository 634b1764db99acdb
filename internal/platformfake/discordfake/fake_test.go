package discordfake_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/platformfake/discordfake"
)

// start starts a fake, closed when the test ends, with guild text channels.
func start(t *testing.T, channels ...string) *discordfake.Server {
	t.Helper()
	f, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	for _, c := range channels {
		f.AddChannel(c, discordfake.GuildText, "")
	}
	return f
}

func get(t *testing.T, f *discordfake.Server, path string) (*http.Response, []byte) {
	t.Helper()
	return call(t, f, http.MethodGet, path)
}

func call(t *testing.T, f *discordfake.Server, method, path string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, f.URL+"api/v9/"+path, nil)
	req.Header.Set("Authorization", "Bot "+f.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestHistory: GET /channels/{id}/messages as Discord documents it — newest first whatever the
// query; after=X gives the oldest `limit` messages after X; before=X the newest before X; no
// guild_id in REST messages; the bot's own messages are in the history too; limit over 100 and
// an unknown channel refused.
func TestHistory(t *testing.T) {
	t.Parallel()
	f := start(t, "500", "501")
	var ids []string
	for i := range 7 {
		ids = append(ids, f.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "42", Content: fmt.Sprint("m", i)}))
	}
	f.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "42", Content: "elsewhere"})
	page := func(q string) []string {
		t.Helper()
		resp, body := get(t, f, "channels/500/messages?"+q)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", q, resp.StatusCode, body)
		}
		var ms []map[string]any
		if err := json.Unmarshal(body, &ms); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			if _, ok := m["guild_id"]; ok {
				t.Errorf("%s: a REST message with guild_id: %v", q, m)
			}
			out = append(out, m["content"].(string))
		}
		return out
	}
	for _, c := range []struct{ q, want string }{
		{"after=" + ids[1] + "&limit=3", "m4 m3 m2"},
		{"after=" + ids[5] + "&limit=3", "m6"},
		{"after=" + ids[6], ""},
		{"after=0&limit=2", "m1 m0"},
		{"before=" + ids[3] + "&limit=2", "m2 m1"},
		{"limit=2", "m6 m5"},
		{"", "m6 m5 m4 m3 m2 m1 m0"},
	} {
		if got := strings.Join(page(c.q), " "); got != c.want {
			t.Errorf("%q: %q, want %q", c.q, got, c.want)
		}
	}
	if resp, _ := get(t, f, "channels/500/messages?limit=101"); resp.StatusCode != 400 {
		t.Errorf("limit=101: %d, want 400", resp.StatusCode)
	}
	if resp, _ := get(t, f, "channels/999/messages"); resp.StatusCode != 404 {
		t.Errorf("unknown channel: %d, want 404", resp.StatusCode)
	}
	var n int
	f.Inspect(func(v discordfake.View) { n = len(v.History("500")) })
	if n != 7 {
		t.Errorf("history of 500: %d, want 7", n)
	}
}

// TestLimits: with SetLimits, a route's bucket answers its X-RateLimit headers and, once
// spent, a 429 with retry_after, Retry-After and global false, counted by Limited and not as
// a call; a bucket per channel; the global limit answers global true.
func TestLimits(t *testing.T) {
	t.Parallel()
	f := start(t, "500", "501")
	f.SetLimits(discordfake.Limits{Other: discordfake.Limit{N: 2, Per: time.Hour}})
	for i, want := range []string{"1", "0"} {
		resp, _ := get(t, f, "channels/500")
		if resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Remaining") != want || resp.Header.Get("X-RateLimit-Limit") != "2" ||
			resp.Header.Get("X-RateLimit-Bucket") == "" || resp.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("call %d: %d %v", i, resp.StatusCode, resp.Header)
		}
		if ra, _ := strconv.ParseFloat(resp.Header.Get("X-RateLimit-Reset-After"), 64); ra <= 0 || ra > 3600 {
			t.Fatalf("call %d: reset after %v", i, resp.Header.Get("X-RateLimit-Reset-After"))
		}
	}
	resp, body := get(t, f, "channels/500")
	var rl struct {
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
		Global     *bool   `json:"global"`
	}
	if err := json.Unmarshal(body, &rl); err != nil || resp.StatusCode != 429 || rl.RetryAfter <= 0 || rl.Global == nil || *rl.Global ||
		rl.Message == "" || resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-RateLimit-Scope") != "user" {
		t.Fatalf("over the limit: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ := get(t, f, "channels/501"); resp.StatusCode != 200 {
		t.Fatalf("another channel's bucket: %d", resp.StatusCode)
	}
	f.Inspect(func(v discordfake.View) {
		if v.Limited("GET channel") != 1 || v.Limited("") != 1 || v.Calls("GET channel") != 3 {
			t.Errorf("limited %d, calls %d; want 1 and 3", v.Limited("GET channel"), v.Calls("GET channel"))
		}
	})
	f.SetLimits(discordfake.Limits{Global: discordfake.Limit{N: 1, Per: time.Hour}})
	get(t, f, "channels/500")
	resp, body = get(t, f, "channels/501")
	if resp.StatusCode != 429 || !strings.Contains(string(body), `"global":true`) || resp.Header.Get("X-RateLimit-Global") != "true" {
		t.Fatalf("global: %d %s %v", resp.StatusCode, body, resp.Header)
	}
}

// TestReactions: the bot's own reaction goes on (PUT, 204) and off (DELETE) once however often
// it is put; an unknown message is 404 code 10008; adding and removing share one bucket per
// channel (Discord's: 1 per 250 ms), answered 429 past it.
func TestReactions(t *testing.T) {
	t.Parallel()
	f := start(t, "500")
	id := f.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "42", Content: "hello"})
	path := "channels/500/messages/" + id + "/reactions/%E2%8F%B3/@me"
	state := func() (bool, int) {
		var on bool
		var n int
		f.Inspect(func(v discordfake.View) { on, n = v.Reacted(id, "⏳"), v.ReactionsAdded() })
		return on, n
	}
	for i, step := range []struct {
		method string
		status int
		on     bool
		adds   int
	}{{http.MethodPut, 204, true, 1}, {http.MethodPut, 204, true, 1}, {http.MethodDelete, 204, false, 1}, {http.MethodPut, 204, true, 2}} {
		if resp, body := call(t, f, step.method, path); resp.StatusCode != step.status {
			t.Fatalf("step %d %s: %d %s", i, step.method, resp.StatusCode, body)
		}
		if on, n := state(); on != step.on || n != step.adds {
			t.Fatalf("step %d %s: on %v, adds %d; want %v, %d", i, step.method, on, n, step.on, step.adds)
		}
	}
	if resp, body := call(t, f, http.MethodPut, "channels/500/messages/1/reactions/%E2%8F%B3/@me"); resp.StatusCode != 404 || !strings.Contains(string(body), "10008") {
		t.Fatalf("unknown message: %d %s", resp.StatusCode, body)
	}
	if l := discordfake.DiscordLimits.Reaction; l.N != 1 || l.Per != 250*time.Millisecond {
		t.Fatalf("DiscordLimits.Reaction = %+v, want 1 per 250 ms", l)
	}
	// a window no run outlasts, so the verdict does not hang on the machine's speed
	f.SetLimits(discordfake.Limits{Reaction: discordfake.Limit{N: 1, Per: time.Hour}})
	if resp, body := call(t, f, http.MethodDelete, path); resp.StatusCode != 204 || resp.Header.Get("X-RateLimit-Limit") != "1" {
		t.Fatalf("first under the limit: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	if resp, body := call(t, f, http.MethodPut, path); resp.StatusCode != 429 || !strings.Contains(string(body), "retry_after") {
		t.Fatalf("second in the window (adding and removing share a bucket): %d %s", resp.StatusCode, body)
	}
}
