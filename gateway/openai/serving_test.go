package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spoolhq/spool/gateway"
)

// TestAuthIsolation: two principals, each with its key; neither can read or continue the
// other's session (404, as if it did not exist); a missing or wrong key is 401.
func TestAuthIsolation(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := fmt.Sprintf("serve:\n  keys:\n    alice: %s\n    bob: %s\n", gateway.HashKey("sk-alice"), gateway.HashKey("sk-bob"))
	s := startServe(t, home, cfg)
	alice := client(s, option.WithAPIKey("sk-alice"))
	bob := client(s, option.WithAPIKey("sk-bob"))

	var resp *http.Response
	if _, err := alice.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("alice's secret plan")},
		option.WithResponseInto(&resp), option.WithHeader("X-Spool-Session-Key", "lane-1")); err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("X-Spool-Session-Id")
	if _, uid, _, _ := transcript(t, home, sid); uid != "alice" {
		t.Fatalf("session %s belongs to %q, want alice", sid, uid)
	}

	_, err := bob.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("let me in")}, option.WithHeader("X-Spool-Session-Id", sid))
	apiError(t, err, 404, "not_found")
	// The same session key is another lane for bob: a session of his own.
	if _, err := bob.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("my own lane")},
		option.WithResponseInto(&resp), option.WithHeader("X-Spool-Session-Key", "lane-1")); err != nil {
		t.Fatal(err)
	}
	if bobs := resp.Header.Get("X-Spool-Session-Id"); bobs == sid {
		t.Fatal("bob's session key landed in alice's session")
	}
	mallory := client(s, option.WithAPIKey("sk-mallory"))
	_, err = mallory.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hi")})
	apiError(t, err, 401, "invalid_api_key")
	_, err = mallory.Models.List(bg)
	apiError(t, err, 401, "invalid_api_key")

	// Alice continues her lane; her session alone grew.
	if _, err := alice.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("go on")},
		option.WithHeader("X-Spool-Session-Key", "lane-1")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, msgs := transcript(t, home, sid); len(msgs) != 4 || msgs[2].Content != "go on" {
		t.Fatalf("alice's session: %+v", msgs)
	}
}

// TestBusyRetriedBySDK: a second request for a session whose turn is running gets 409 with
// Retry-After; the official SDK retries it by itself and the retry succeeds once the first
// turn is done. Nothing interleaves.
func TestBusyRetriedBySDK(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	home := t.TempDir()
	s := startServe(t, home, up.providerConfig()+"serve:\n  busy_wait: 0s\n  retry_after: 20ms\n")
	c := client(s)
	var resp *http.Response
	if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("first")}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("X-Spool-Session-Id")

	slow := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("slow one gate:busy")}, option.WithHeader("X-Spool-Session-Id", sid))
		slow <- err
	}()
	up.arrived(t, "busy") // the first turn holds the session now

	var mu sync.Mutex
	var statuses []int
	var retryAfter string
	observe := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if err == nil {
			mu.Lock()
			statuses = append(statuses, res.StatusCode)
			if res.StatusCode == http.StatusConflict && retryAfter == "" {
				retryAfter = res.Header.Get("Retry-After")
				mu.Unlock()
				// Let the running turn finish before the SDK sees the 409, so its retry finds
				// the session free.
				up.open("busy")
				if err := <-slow; err != nil {
					t.Errorf("the running turn failed: %v", err)
				}
				return res, nil
			}
			mu.Unlock()
		}
		return res, err
	})
	got, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("second")},
		option.WithHeader("X-Spool-Session-Id", sid), observe, option.WithMaxRetries(2))
	if err != nil {
		t.Fatalf("the SDK's retry did not succeed: %v (statuses %v)", err, statuses)
	}
	wantAnswer(t, got.Choices[0].Message.Content, "second")
	mu.Lock()
	if len(statuses) != 2 || statuses[0] != 409 || statuses[1] != 200 || retryAfter == "" {
		t.Fatalf("statuses %v, Retry-After %q; want 409 (with Retry-After) then 200", statuses, retryAfter)
	}
	mu.Unlock()
	_, _, _, msgs := transcript(t, home, sid)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,user,assistant,user,assistant" || msgs[2].Content != "slow one gate:busy" || msgs[4].Content != "second" {
		t.Fatalf("transcript interleaved or lost a turn: %+v", msgs)
	}

	// X-Spool-Busy: reject answers 409 at once, even with a long busy_wait.
	go func() {
		_, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hold gate:reject")}, option.WithHeader("X-Spool-Session-Id", sid))
		slow <- err
	}()
	up.arrived(t, "reject")
	_, err = c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("rejected")},
		option.WithHeader("X-Spool-Session-Id", sid), option.WithHeader("X-Spool-Busy", "reject"), option.WithMaxRetries(0))
	apiError(t, err, 409, "session_busy")
	// X-Spool-Busy: queue waits for the running turn instead.
	queued := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("queued")},
			option.WithHeader("X-Spool-Session-Id", sid), option.WithHeader("X-Spool-Busy", "queue"), option.WithMaxRetries(0))
		queued <- err
	}()
	up.open("reject")
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if err := <-queued; err != nil {
		t.Fatalf("queued request: %v", err)
	}
	if _, _, _, msgs = transcript(t, home, sid); len(msgs) != 10 || msgs[8].Content != "queued" {
		t.Fatalf("after reject and queue: %+v", msgs)
	}
}

// TestIdempotentRetry: the same Idempotency-Key and body replays the stored answer without a
// second turn; another body with the key is 409 idempotency_key_conflict.
func TestIdempotentRetry(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "")
	c := client(s)
	params := sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("exactly once")}
	key := option.WithHeader("Idempotency-Key", "req-1")
	var r1, r2 *http.Response
	a, err := c.Chat.Completions.New(bg, params, key, option.WithResponseInto(&r1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Chat.Completions.New(bg, params, key, option.WithResponseInto(&r2))
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || a.Choices[0].Message.Content != b.Choices[0].Message.Content || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry was not a replay: %s vs %s", a.RawJSON(), b.RawJSON())
	}
	sid := r1.Header.Get("X-Spool-Session-Id")
	if r2.Header.Get("X-Spool-Session-Id") != sid {
		t.Fatal("the replay names another session")
	}
	// A streamed request with a key replays as a stream.
	sp := sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("streamed once")}
	var texts []string
	for i := 0; i < 2; i++ {
		st := c.Chat.Completions.NewStreaming(bg, sp, option.WithHeader("Idempotency-Key", "req-2"))
		var acc sdk.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, acc.Choices[0].Message.Content)
	}
	if texts[0] != texts[1] {
		t.Fatalf("streamed replay differs: %q vs %q", texts[0], texts[1])
	}
	wantAnswer(t, texts[1], "streamed once")

	_, err = c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("something else")}, key)
	apiError(t, err, 409, "idempotency_key_conflict")
	if _, _, _, msgs := transcript(t, home, sid); len(msgs) != 2 {
		t.Fatalf("a replayed request ran a second turn: %+v", msgs)
	}
}

// TestDisconnectThenFetch: a client that drops mid-stream does not cancel its turn: the reply
// is stored whole and the next request sees it.
func TestDisconnectThenFetch(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	home := t.TempDir()
	s := startServe(t, home, up.providerConfig())
	c := client(s)
	var resp *http.Response
	if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("open")}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("X-Spool-Session-Id")

	ctx, cancel := context.WithCancel(bg)
	st := c.Chat.Completions.NewStreaming(ctx, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("SAY the whole reply survives\ngate:drop")},
		option.WithHeader("X-Spool-Session-Id", sid), option.WithMaxRetries(0))
	if !st.Next() {
		t.Fatalf("no first chunk: %v", st.Err())
	}
	up.arrived(t, "drop")
	cancel() // the client goes away while the model is still answering
	for st.Next() {
	}
	st.Close()
	up.open("drop")

	// A queued request waits for the dropped turn to finish; then the reply is in the session.
	if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("after")},
		option.WithHeader("X-Spool-Session-Id", sid), option.WithHeader("X-Spool-Busy", "queue")); err != nil {
		t.Fatal(err)
	}
	_, _, _, msgs := transcript(t, home, sid)
	if len(msgs) != 6 || msgs[3].Role != "assistant" || msgs[3].Content != "the whole reply survives" {
		t.Fatalf("the dropped turn's reply was not stored whole: %+v", msgs)
	}
}

// TestResentHistory: a client that resends its whole history continues one session; an
// edited earlier message becomes a branch at the divergence, the original left intact.
func TestResentHistory(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "")
	c := client(s)
	var resp *http.Response
	a1, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("plan the trip")}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("X-Spool-Session-Id")
	h := []string{"plan the trip", a1.Choices[0].Message.Content, "to Lisbon"}
	a2, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs(h...)}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("X-Spool-Session-Id"); got != sid {
		t.Fatalf("resent history went to %s, want %s", got, sid)
	}
	h = append(h, a2.Choices[0].Message.Content, "in May")
	if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs(h...)}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, msgs := transcript(t, home, sid); len(msgs) != 6 {
		t.Fatalf("three resent turns: %d messages, want 6: %+v", len(msgs), msgs)
	}

	// The user edits the second message: a branch holding the first exchange and the edit.
	edited := []string{h[0], h[1], "to Porto"}
	if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs(edited...)}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	branch := resp.Header.Get("X-Spool-Session-Id")
	if branch == sid || resp.Header.Get("X-Spool-Branched-From") != sid {
		t.Fatalf("edit: session %s, branched from %q; want a branch of %s", branch, resp.Header.Get("X-Spool-Branched-From"), sid)
	}
	_, _, parent, msgs := transcript(t, home, branch)
	if parent != sid || len(msgs) != 4 || msgs[0].Content != "plan the trip" || msgs[2].Content != "to Porto" {
		t.Fatalf("branch %s (parent %q): %+v", branch, parent, msgs)
	}
	if _, _, _, orig := transcript(t, home, sid); len(orig) != 6 || orig[2].Content != "to Lisbon" {
		t.Fatalf("the original was changed by the edit: %+v", orig)
	}
	// Going on from the edit continues the branch.
	a3 := msgs[3].Content
	if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs(append(edited, a3, "by train")...)}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("X-Spool-Session-Id"); got != branch {
		t.Fatalf("continuing the edit went to %s, want the branch %s", got, branch)
	}
}

// TestLeaseHeldByAnotherProcess: two spool serve processes on one database. While the first
// runs a turn on a session, a streamed request for it to the second is answered 409 with
// Retry-After before any stream header goes out (the lease is decided first), and nothing of
// it is stored.
func TestLeaseHeldByAnotherProcess(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	home := t.TempDir()
	cfg := up.providerConfig() + "serve:\n  busy_wait: 0s\n  retry_after: 3s\n"
	a := startServe(t, home, cfg)
	b := startServe(t, home, "")
	ca := client(a)
	var resp *http.Response
	if _, err := ca.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("first")}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("X-Spool-Session-Id")
	slow := make(chan error, 1)
	go func() {
		_, err := ca.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("slow gate:lease")}, option.WithHeader("X-Spool-Session-Id", sid))
		slow <- err
	}()
	up.arrived(t, "lease")

	req, _ := http.NewRequest("POST", b.url+"/v1/chat/completions", strings.NewReader(`{"model":"spool","stream":true,"messages":[{"role":"user","content":"meanwhile"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Spool-Session-Id", sid)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusConflict || res.Header.Get("Retry-After") == "" || strings.Contains(res.Header.Get("Content-Type"), "event-stream") ||
		!strings.Contains(string(body), `"error"`) {
		t.Fatalf("second process: %d %v\n%s", res.StatusCode, res.Header, body)
	}
	up.open("lease")
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	_, _, _, msgs := transcript(t, home, sid)
	for _, m := range msgs {
		if m.Content == "meanwhile" {
			t.Fatalf("the refused request was stored: %+v", msgs)
		}
	}
	if len(msgs) != 4 {
		t.Fatalf("session holds %d messages, want 4: %+v", len(msgs), msgs)
	}
}

// TestStreamKeepAlive: a stream silent for serve.keepalive gets ": keepalive" comments (from a
// timer, an idle stream holds no goroutine for them), and the answer still follows whole.
func TestStreamKeepAlive(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	s := startServe(t, t.TempDir(), up.providerConfig()+"serve:\n  keepalive: 1s\n")
	body := `{"model":"spool","stream":true,"messages":[{"role":"user","content":"SAY after the silence\ngate:ka"}]}`
	res, err := http.Post(s.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	up.arrived(t, "ka")
	var before []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before a keep-alive: %v (read %q)", err, before)
		}
		if strings.HasPrefix(line, ": keepalive") {
			break
		}
		before = append(before, line)
	}
	up.open("ka")
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	text := string(rest)
	var said strings.Builder
	for _, line := range strings.Split(text, "\n") {
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if data, ok := strings.CutPrefix(line, "data: {"); ok && json.Unmarshal([]byte("{"+data), &c) == nil && len(c.Choices) > 0 {
			said.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if said.String() != "after the silence" || !strings.HasSuffix(strings.TrimSpace(text), "data: [DONE]") {
		t.Fatalf("after the keep-alive, said %q: %q", said.String(), text)
	}
}
