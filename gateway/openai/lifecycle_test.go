package openai_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spoolhq/spool/gateway"
)

// TestDrainOnSIGTERM: SIGTERM stops new work, lets the running turn finish and store its
// reply, and the process exits cleanly.
func TestDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	home := t.TempDir()
	s := startServe(t, home, up.providerConfig()+"serve:\n  drain_timeout: 2m\n")
	c := client(s)
	type answer struct {
		text, sid string
		err       error
	}
	done := make(chan answer, 1)
	go func() {
		var resp *http.Response
		got, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("SAY finished during the drain\ngate:term")},
			option.WithResponseInto(&resp), option.WithMaxRetries(0))
		a := answer{err: err}
		if err == nil {
			a.text, a.sid = got.Choices[0].Message.Content, resp.Header.Get("X-Spool-Session-Id")
		}
		done <- a
	}()
	up.arrived(t, "term")
	if err := s.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	s.waitLine(t, "draining")
	up.open("term")
	a := <-done
	if a.err != nil || a.text != "finished during the drain" {
		t.Fatalf("the running turn during the drain: %q, %v", a.text, a.err)
	}
	if err := <-s.waited; err != nil {
		t.Fatalf("spool serve exited with %v after SIGTERM:\n%s", err, s.stderr.String())
	}
	s.waited <- nil
	if !strings.Contains(s.stderr.String(), "spool serve: stopped") {
		t.Fatalf("no clean stop:\n%s", s.stderr.String())
	}
	if _, _, _, msgs := transcript(t, home, a.sid); len(msgs) != 2 || msgs[1].Content != "finished during the drain" {
		t.Fatalf("stored after the drain: %+v", msgs)
	}
}

// TestConcurrencyLimitAndMetrics: a principal over serve.max_concurrent gets 429 with a JSON
// error; /metrics counts what happened.
func TestConcurrencyLimitAndMetrics(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	home := t.TempDir()
	s := startServe(t, home, up.providerConfig()+"serve:\n  max_concurrent: 1\n")
	c := client(s)
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hold gate:lim")})
		done <- err
	}()
	up.arrived(t, "lim")
	_, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("another session")}, option.WithMaxRetries(0))
	apiError(t, err, 429, "rate_limit_exceeded")
	up.open("lim")
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	res, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`spool_turns_total{outcome="ok"} 1`,
		`spool_http_requests_total{code="200",route="chat_completions"} 1`,
		`spool_http_requests_total{code="429",route="chat_completions"} 1`,
		`spool_limited_requests_total 1`,
		`spool_turn_duration_seconds_count 1`,
		`spool_prompt_tokens_total`, `spool_prompt_cached_tokens_total`, `spool_compactions_total 0`,
		`spool_turn_slot_wait_seconds_count`, `spool_store_operation_seconds`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, path := range []string{"/health", "/ready"} {
		res, err := http.Get(s.url + path)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", path, res, err)
		}
		res.Body.Close()
	}
}

// TestBrowserScopedByPrincipal: /ui/ is mounted and shows a key only its own sessions.
func TestBrowserScopedByPrincipal(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := fmt.Sprintf("serve:\n  keys:\n    alice: %s\n    bob: %s\n", gateway.HashKey("sk-alice"), gateway.HashKey("sk-bob"))
	s := startServe(t, home, cfg)
	ids := map[string]string{}
	for _, who := range []string{"alice", "bob"} {
		c := client(s, option.WithAPIKey("sk-"+who))
		var resp *http.Response
		if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hello from " + who)}, option.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		ids[who] = resp.Header.Get("X-Spool-Session-Id")
	}
	get := func(key, path string) (int, string) {
		req, _ := http.NewRequest("GET", s.url+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, page := get("sk-alice", "/ui/")
	if code != 200 || !strings.Contains(page, ids["alice"]) || strings.Contains(page, ids["bob"]) {
		t.Fatalf("alice's /ui/: %d, lists alice %v, bob %v", code, strings.Contains(page, ids["alice"]), strings.Contains(page, ids["bob"]))
	}
	if code, _ := get("sk-alice", "/ui/sessions/"+ids["bob"]); code != 404 {
		t.Fatalf("alice reading bob's session page: %d, want 404", code)
	}
	if code, _ := get("", "/ui/"); code != 401 {
		t.Fatalf("/ui/ without a key: %d, want 401", code)
	}
}
