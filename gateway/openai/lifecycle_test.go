package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
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
	// While the turn drains, the server still answers: not ready, and no new turns.
	ready, err := http.Get(s.url + "/ready")
	if err != nil {
		t.Fatalf("/ready during the drain: %v; want 503 while the running turn finishes", err)
	}
	ready.Body.Close()
	if ready.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/ready during the drain answered %d, want 503", ready.StatusCode)
	}
	if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("SAY too late")},
		option.WithMaxRetries(0)); err == nil {
		t.Fatal("a new turn was started during the drain")
	}
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
	// Without a key or a sign-in, a page sends the person to the login page.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(s.url + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/login?next=%2Fui%2F" {
		t.Fatalf("/ui/ without a key: %d %q, want 303 to the login page", res.StatusCode, res.Header.Get("Location"))
	}
}

// TestBrowserLogin: a person pastes an API key into /ui/login and gets a session cookie
// (HttpOnly, SameSite=Strict) that shows that principal's sessions only; a wrong key or a
// sign-in posted from another site sets nothing; logout ends the cookie server-side.
func TestBrowserLogin(t *testing.T) {
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
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, origin string, form url.Values, cookie *http.Cookie) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, s.url+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, page := do("GET", "/ui/login?next=%2Fui%2Fusage", "", nil, nil)
	if res.StatusCode != 200 || !strings.Contains(page, `action="/ui/login"`) || !strings.Contains(page, `type="password"`) {
		t.Fatalf("login page: %d\n%s", res.StatusCode, page)
	}
	self := s.url
	login := url.Values{"key": {"sk-alice"}, "next": {"/ui/usage"}}
	for _, c := range []struct {
		name, origin string
		form         url.Values
		status       int
	}{
		{"wrong key", self, url.Values{"key": {"sk-mallory"}}, 401},
		{"another site", "https://evil.example", login, 403},
	} {
		res, _ := do("POST", "/ui/login", c.origin, c.form, nil)
		if res.StatusCode != c.status || len(res.Cookies()) != 0 {
			t.Fatalf("%s: %d with cookies %v, want %d and none", c.name, res.StatusCode, res.Cookies(), c.status)
		}
	}
	res, _ = do("POST", "/ui/login", self, login, nil)
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "spool_session" {
			cookie = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/usage" || cookie == nil || !cookie.HttpOnly ||
		cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/ui/" || cookie.MaxAge <= 0 || len(cookie.Value) != 64 {
		t.Fatalf("sign-in: %d %q, cookie %+v", res.StatusCode, res.Header.Get("Location"), cookie)
	}
	res, page = do("GET", "/ui/", "", nil, cookie)
	if res.StatusCode != 200 || !strings.Contains(page, ids["alice"]) || strings.Contains(page, ids["bob"]) {
		t.Fatalf("alice's signed-in /ui/: %d, lists alice %v, bob %v", res.StatusCode, strings.Contains(page, ids["alice"]), strings.Contains(page, ids["bob"]))
	}
	if res, _ := do("GET", "/ui/sessions/"+ids["bob"], "", nil, cookie); res.StatusCode != 404 {
		t.Fatalf("alice's cookie on bob's session: %d, want 404", res.StatusCode)
	}
	// A next that leaves the browser is replaced by its start page.
	res, _ = do("POST", "/ui/login", self, url.Values{"key": {"sk-bob"}, "next": {"//evil.example/x"}}, nil)
	if res.Header.Get("Location") != "/ui/" {
		t.Fatalf("open redirect: %q", res.Header.Get("Location"))
	}
	// The pages link to the sign-out page, whose form carries a CSRF token.
	if !strings.Contains(page, `href="/ui/logout"`) {
		t.Fatalf("signed-in page without a sign-out link:\n%s", page)
	}
	res, page = do("GET", "/ui/logout", "", nil, cookie)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if res.StatusCode != 200 || m == nil {
		t.Fatalf("sign-out page: %d\n%s", res.StatusCode, page)
	}
	// Logout from another site or without the token is refused and the sign-in stays; from the
	// page it ends the sign-in server-side.
	for _, c := range []struct {
		origin string
		form   url.Values
	}{{"https://evil.example", url.Values{"csrf": {m[1]}}}, {self, url.Values{}}} {
		if res, _ := do("POST", "/ui/logout", c.origin, c.form, cookie); res.StatusCode != 403 {
			t.Fatalf("logout from %s with %v: %d, want 403", c.origin, c.form, res.StatusCode)
		}
	}
	if res, _ := do("GET", "/ui/", "", nil, cookie); res.StatusCode != 200 {
		t.Fatalf("a refused logout signed alice out: %d", res.StatusCode)
	}
	if res, _ := do("POST", "/ui/logout", self, url.Values{"csrf": {m[1]}}, cookie); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	if res, _ := do("GET", "/ui/", "", nil, cookie); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the old cookie after logout: %d, want a redirect to the login page", res.StatusCode)
	}
}

// TestTitlesScopedByPrincipal: a session's automatic title is numbered among its own
// principal's titles only: bob asking what alice asked gets the same title, not "… #2" (which
// told bob that someone else had asked it).
func TestTitlesScopedByPrincipal(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := fmt.Sprintf("serve:\n  keys:\n    alice: %s\n    bob: %s\n", gateway.HashKey("sk-alice"), gateway.HashKey("sk-bob"))
	s := startServe(t, home, cfg)
	titles := map[string]string{}
	for _, who := range []string{"alice", "bob"} {
		c := client(s, option.WithAPIKey("sk-"+who))
		var resp *http.Response
		if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("Alice secret chat ZEBRA42")},
			option.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		var v struct {
			Title string `json:"title"`
		}
		id := resp.Header.Get("X-Spool-Session-Id")
		if err := json.Unmarshal([]byte(spoolCLI(t, home, "sessions", "show", id, "--json")), &v); err != nil {
			t.Fatal(err)
		}
		titles[who] = v.Title
	}
	if titles["alice"] == "" || titles["bob"] != titles["alice"] {
		t.Fatalf("titles = %q; want bob's equal to alice's", titles)
	}
}
