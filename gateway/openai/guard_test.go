package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/internal/browsertest"
)

// keylessSession starts a keyless spool serve with one session made by the official SDK and
// returns the server and the session's id.
func keylessSession(t *testing.T, config string) (*server, string) {
	t.Helper()
	s := startServe(t, t.TempDir(), config)
	var resp *http.Response
	c := client(s)
	if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("the victim's own question")},
		option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	return s, resp.Header.Get("X-Spool-Session-Id")
}

// storeState is what the store holds, as the CLI shows it: every session's id and title, and
// the victim session's transcript.
func storeState(t *testing.T, s *server, sid string) string {
	t.Helper()
	var list []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	out := spoolCLI(t, s.home, "sessions", "list", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("sessions list --json: %v\n%s", err, out)
	}
	_, _, _, msgs := transcript(t, s.home, sid)
	b, _ := json.Marshal(map[string]any{"sessions": list, "messages": msgs})
	return string(b)
}

var signInRe = regexp.MustCompile(`session browser: open (http://\S+/ui/\?token=[0-9a-f]+)`)

// signInLink is the one-time link a keyless spool serve prints at start.
func signInLink(t *testing.T, s *server) string {
	t.Helper()
	s.waitLine(t, "session browser: open")
	m := signInRe.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no sign-in link in:\n%s", s.stderr.String())
	}
	return m[1]
}

// attackPage is a hostile page: it tries every state-changing route of the server at target
// with fetch (no-cors with a text/plain body, which needs no preflight; cors with JSON) and
// with form posts (text/plain forms shaped as JSON, and the browser's own actions), one after
// the other, then sets window.attackDone.
const attackPage = `<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="chatform" method="post" action="{{T}}/v1/chat/completions" enctype="text/plain" target="sink"><input name='{"model":"spool","messages":[{"role":"user","content":"planted by a form' value='"}]}'></form>
<form id="itemform" method="post" action="{{T}}/v1/conversations/{{SID}}/items" enctype="text/plain" target="sink"><input name='{"items":[{"type":"message","role":"user","content":"planted item by a form' value='"}]}'></form>
<form id="renameform" method="post" action="{{T}}/ui/sessions/{{SID}}/rename" target="sink"><input name="title" value="renamed by a hostile page"><input name="csrf" value="guess"></form>
<form id="branchform" method="post" action="{{T}}/ui/sessions/{{SID}}/branch" target="sink"><input name="csrf" value="guess"></form>
<form id="deleteform" method="post" action="{{T}}/ui/sessions/{{SID}}/delete" target="sink"><input name="csrf" value="guess"></form>
<script>
const T = "{{T}}", SID = "{{SID}}";
const chat = (text) => JSON.stringify({model: "spool", messages: [{role: "user", content: text}]});
const routes = [
  ["POST", "/v1/chat/completions", chat("planted by fetch")],
  ["POST", "/v1/chat/completions", JSON.stringify({model: "spool", stream: true, messages: [{role: "user", content: "planted stream"}]})],
  ["POST", "/v1/responses", JSON.stringify({model: "spool", input: "planted response"})],
  ["POST", "/v1/responses", JSON.stringify({model: "spool", input: "planted into the session", conversation: SID})],
  ["POST", "/v1/conversations", JSON.stringify({items: [{type: "message", role: "user", content: "planted conversation"}]})],
  ["POST", "/v1/conversations/" + SID, JSON.stringify({metadata: {title: "renamed by fetch"}})],
  ["POST", "/v1/conversations/" + SID + "/items", JSON.stringify({items: [{type: "message", role: "user", content: "planted item"}]})],
  ["POST", "/v1/responses/compact", JSON.stringify({model: "spool", conversation: SID})],
  ["DELETE", "/v1/conversations/" + SID, null],
  ["POST", "/ui/sessions/" + SID + "/rename", "title=renamed+by+fetch&csrf=guess"],
  ["POST", "/ui/sessions/" + SID + "/delete", "csrf=guess"],
];
const tries = [];
for (const [method, path, body] of routes) {
  tries.push(() => fetch(T + path, {method, mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body}));
  tries.push(() => fetch(T + path, {method, mode: "cors", credentials: "include", headers: {"Content-Type": "application/json"}, body}));
  tries.push(() => fetch(T + path, {method, mode: "no-cors", credentials: "include", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body}));
}
const sink = document.querySelector("iframe[name=sink]");
for (const id of ["chatform", "itemform", "renameform", "branchform", "deleteform"]) {
  tries.push(() => new Promise((done) => { sink.onload = done; document.getElementById(id).submit(); }));
}
(async () => {
  const log = [];
  for (const t of tries) {
    try { const r = await t(); log.push(r instanceof Response ? r.type + " " + r.status : "form posted"); } catch (e) { log.push("refused by the browser"); }
  }
  window.attackLog = log.join("\n");
  window.attackDone = true;
})();
</script></body></html>`

// TestKeylessServeRefusesOtherSites: a keyless spool serve, in a real Chromium whose person is
// signed in to the session browser, is attacked by a page on another origin (same site:
// 127.0.0.1 on another port; another site: localhost) that tries every state-changing route;
// nothing is stored, renamed or deleted.
func TestKeylessServeRefusesOtherSites(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t)
	s, sid := keylessSession(t, "")
	link := signInLink(t, s)
	before := storeState(t, s, sid)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, strings.NewReplacer("{{T}}", s.url, "{{SID}}", sid).Replace(attackPage))
	}))
	t.Cleanup(attacker.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(attacker.URL, "http://"))
	// The person signs in with the printed link and sees the session.
	if err := chromedp.Run(ctx, chromedp.Navigate(link), browsertest.WaitJS(`document.documentElement.innerHTML.includes("`+sid+`")`)); err != nil {
		t.Fatal(err)
	}
	for _, origin := range []string{"http://127.0.0.1:" + port, "http://localhost:" + port} {
		var log string
		if err := chromedp.Run(ctx, chromedp.Navigate(origin+"/"), browsertest.WaitJS(`window.attackDone === true`),
			chromedp.Evaluate(`window.attackLog`, &log)); err != nil {
			t.Fatalf("attack page on %s: %v", origin, err)
		}
		t.Logf("attack from %s:\n%s", origin, log)
		if after := storeState(t, s, sid); after != before {
			t.Fatalf("a page on %s changed the store:\nbefore %s\nafter  %s", origin, before, after)
		}
	}
	// The person's own browser still works on the server's own pages.
	var page string
	if err := chromedp.Run(ctx, chromedp.Navigate(s.url+"/ui/sessions/"+sid), browsertest.Loaded("main"), browsertest.Text(&page)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "the victim's own question") {
		t.Fatalf("the signed-in session page:\n%s", page)
	}
}

// do sends one request to s with extra headers ("K", "V" pairs; "Host" sets the Host) and
// returns the status, the headers and the body.
func do(t *testing.T, c *http.Client, method, u, body string, kv ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "Host" {
			req.Host = kv[i+1]
		} else {
			req.Header.Set(kv[i], kv[i+1])
		}
	}
	if c == nil {
		c = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// openAIError is the code of an OpenAI error body ("" when it is not one).
func openAIError(body string) string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.Error.Message == "" {
		return ""
	}
	return e.Error.Code
}

// TestKeylessServeRebinding: a request naming a Host that is not loopback (what a rebound DNS
// name sends) reads and changes nothing, on the API and the session browser alike; the
// loopback names and serve.allowed_hosts are answered.
func TestKeylessServeRebinding(t *testing.T) {
	t.Parallel()
	s, sid := keylessSession(t, "serve:\n  allowed_hosts: spool.lan, Box.Example:8642\n")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))
	before := storeState(t, s, sid)
	chat := `{"model":"spool","messages":[{"role":"user","content":"rebound"}]}`
	for _, host := range []string{"attacker.example", "attacker.example:" + port, "127.0.0.1.attacker.example", "localhost.attacker.example:" + port, "box.example:1"} {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/ui/", ""},
			{"GET", "/ui/sessions/" + sid, ""},
			{"GET", "/v1/conversations/" + sid + "/items", ""},
			{"GET", "/v1/conversations/" + sid, ""},
			{"GET", "/metrics", ""},
			{"POST", "/v1/chat/completions", chat},
			{"POST", "/v1/conversations/" + sid + "/items", `{"items":[{"type":"message","role":"user","content":"rebound item"}]}`},
			{"DELETE", "/v1/conversations/" + sid, ""},
			{"POST", "/ui/sessions/" + sid + "/rename", "title=rebound"},
		} {
			code, _, body := do(t, nil, r.method, s.url+r.path, r.body, "Host", host, "Content-Type", "application/json")
			if code != http.StatusForbidden || openAIError(body) != "host_not_allowed" || strings.Contains(body, "victim") {
				t.Fatalf("%s %s with Host %q: %d\n%s", r.method, r.path, host, code, body)
			}
		}
	}
	if after := storeState(t, s, sid); after != before {
		t.Fatalf("a rebound Host changed the store:\nbefore %s\nafter  %s", before, after)
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "127.8.9.10", "[::1]:" + port, "[::1]", "app.localhost",
		"spool.lan", "SPOOL.LAN:" + port, "box.example:8642"} {
		if code, _, body := do(t, nil, "GET", s.url+"/v1/conversations/"+sid+"/items", "", "Host", host); code != 200 || !strings.Contains(body, "victim") {
			t.Fatalf("GET items with Host %q: %d\n%s", host, code, body)
		}
	}
	// The session browser needs its sign-in even on a loopback name (as spool ui).
	if code, _, _ := do(t, nil, "GET", s.url+"/ui/", ""); code != http.StatusUnauthorized {
		t.Fatalf("/ui/ without the sign-in link: %d, want 401", code)
	}
}

// TestKeylessServeSignInLink: the session browser of a keyless spool serve is behind spool ui's
// sign-in: the printed link signs one browser in, once.
func TestKeylessServeSignInLink(t *testing.T) {
	t.Parallel()
	s, sid := keylessSession(t, "")
	link := signInLink(t, s)
	code, h, _ := do(t, nil, "GET", link, "")
	cookie := ""
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == "spool_session" && c.HttpOnly && c.SameSite == http.SameSiteStrictMode {
			cookie = c.Name + "=" + c.Value
		}
	}
	if code != http.StatusSeeOther || cookie == "" {
		t.Fatalf("the sign-in link: %d, cookie %q", code, cookie)
	}
	if code, _, body := do(t, nil, "GET", s.url+"/ui/", "", "Cookie", cookie); code != 200 || !strings.Contains(body, sid) {
		t.Fatalf("signed in /ui/: %d", code)
	}
	if code, h, _ := do(t, nil, "GET", link, ""); code != http.StatusUnauthorized || h.Get("Set-Cookie") != "" {
		t.Fatalf("the link used twice: %d %q", code, h.Get("Set-Cookie"))
	}
}

// TestJSONBodiesOnly: a POST to /v1 whose body is not declared JSON is 415 in OpenAI's error
// shape and stores nothing; JSON with a charset and a bodiless POST pass.
func TestJSONBodiesOnly(t *testing.T) {
	t.Parallel()
	s, sid := keylessSession(t, "")
	before := storeState(t, s, sid)
	chat := `{"model":"spool","messages":[{"role":"user","content":"not json by its type"}]}`
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonp", "application/json-seq"} {
		for _, path := range []string{"/v1/chat/completions", "/v1/responses", "/v1/conversations", "/v1/conversations/" + sid + "/items"} {
			var kv []string
			if ct != "" {
				kv = []string{"Content-Type", ct}
			}
			code, h, body := do(t, nil, "POST", s.url+path, chat, kv...)
			if code != http.StatusUnsupportedMediaType || openAIError(body) != "unsupported_media_type" || h.Get("x-should-retry") != "false" {
				t.Fatalf("POST %s as %q: %d\n%s", path, ct, code, body)
			}
		}
	}
	if after := storeState(t, s, sid); after != before {
		t.Fatalf("non-JSON bodies changed the store:\nbefore %s\nafter  %s", before, after)
	}
	if code, _, body := do(t, nil, "POST", s.url+"/v1/chat/completions", chat, "Content-Type", "application/json; charset=utf-8"); code != 200 {
		t.Fatalf("JSON with a charset: %d\n%s", code, body)
	}
}

// TestCrossSiteHeaders: what a browser says about a request decides for state-changing ones
// (Sec-Fetch-Site, else Origin against Host); serve.cors_origins are trusted; reads and
// clients that send neither pass.
func TestCrossSiteHeaders(t *testing.T) {
	t.Parallel()
	s, sid := keylessSession(t, "serve:\n  cors_origins: http://app.localhost:3000\n")
	chat := `{"model":"spool","messages":[{"role":"user","content":"from a browser"}]}`
	for _, tc := range []struct {
		name   string
		kv     []string
		status int
	}{
		{"cross-site", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"same-site", []string{"Sec-Fetch-Site", "same-site"}, 403},
		{"foreign Origin", []string{"Origin", "http://evil.example"}, 403},
		{"null Origin", []string{"Origin", "null"}, 403},
		{"other port", []string{"Origin", "http://127.0.0.1:1"}, 403},
		{"same-origin", []string{"Sec-Fetch-Site", "same-origin", "Origin", s.url}, 200},
		{"own Origin", []string{"Origin", s.url}, 200},
		{"CORS origin", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://app.localhost:3000"}, 200},
	} {
		code, _, body := do(t, nil, "POST", s.url+"/v1/chat/completions", chat, append([]string{"Content-Type", "application/json"}, tc.kv...)...)
		if code != tc.status || (code == 403 && openAIError(body) != "cross_site_request") {
			t.Fatalf("%s: %d, want %d\n%s", tc.name, code, tc.status, body)
		}
	}
	if code, _, _ := do(t, nil, "GET", s.url+"/v1/conversations/"+sid+"/items", "", "Sec-Fetch-Site", "cross-site"); code != 200 {
		t.Fatalf("a cross-site read: %d (it is the browser's CORS that keeps its answer from the page)", code)
	}
}

// TestFailedKeysLimited: wrong API keys are counted per client address, /v1 and /ui/login
// together: past 10 in the window every key from that address (a right one too) is 429 with
// Retry-After; another address is unaffected. /metrics needs a key.
func TestFailedKeysLimited(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir(), fmt.Sprintf("serve:\n  keys:\n    alice: %s\n", gateway.HashKey("sk-alice")))
	if code, _, body := do(t, nil, "GET", s.url+"/metrics", ""); code != http.StatusUnauthorized || strings.Contains(body, "spool_") {
		t.Fatalf("/metrics without a key: %d", code)
	}
	if code, _, body := do(t, nil, "GET", s.url+"/metrics", "", "Authorization", "Bearer sk-alice"); code != 200 || !strings.Contains(body, "spool_http_requests_total") {
		t.Fatalf("/metrics with a key: %d", code)
	}
	for i := 0; i < 10; i++ {
		var code int
		if i%2 == 0 {
			code, _, _ = do(t, nil, "GET", s.url+"/v1/models", "", "Authorization", fmt.Sprintf("Bearer sk-guess-%d", i))
		} else {
			code, _, _ = do(t, nil, "POST", s.url+"/ui/login", url.Values{"key": {fmt.Sprintf("sk-guess-%d", i)}}.Encode(),
				"Content-Type", "application/x-www-form-urlencoded", "Origin", s.url)
		}
		if code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d, want 401", i+1, code)
		}
	}
	for _, key := range []string{"sk-guess-11", "sk-alice"} {
		code, h, body := do(t, nil, "GET", s.url+"/v1/models", "", "Authorization", "Bearer "+key)
		if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" || h.Get("Retry-After") == "0" || openAIError(body) != "too_many_failed_keys" {
			t.Fatalf("%s past the limit: %d Retry-After %q\n%s", key, code, h.Get("Retry-After"), body)
		}
	}
	if code, _, _ := do(t, nil, "GET", s.url+"/metrics", "", "Authorization", "Bearer sk-alice"); code != http.StatusTooManyRequests {
		t.Fatalf("/metrics past the limit: %d", code)
	}
	// The official SDK hears the refusal at once (no retries) and in OpenAI's shape.
	c := client(s, option.WithAPIKey("sk-alice"))
	_, err := c.Models.List(bg)
	apiError(t, err, http.StatusTooManyRequests, "too_many_failed_keys")
	// Another client address (127.0.0.2 is this machine's loopback too) is not limited.
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: time.Minute}).DialContext}}
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer sk-alice")
	res, err := other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("the right key from another address: %d", res.StatusCode)
	}
}
