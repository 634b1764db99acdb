package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/signin"
)

// client talks to a real HTTP server running the browser.
type client struct {
	t    testing.TB
	base string
	c    *http.Client
	user string // X-Test-User header, for the scoped server
}

func newServer(t testing.TB, st Store, opts Options) (*Server, string) {
	t.Helper()
	s := New(st, opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); ts.Close() })
	return s, ts.URL
}

func newClient(t testing.TB, base string) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (c *client) do(method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.user != "" {
		req.Header.Set("X-Test-User", c.user)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, string(b)
}

func (c *client) get(path string) (int, string) {
	c.t.Helper()
	resp, body := c.do("GET", path, nil, nil)
	return resp.StatusCode, body
}

func (c *client) mustGet(path string) string {
	c.t.Helper()
	code, body := c.get(path)
	if code != http.StatusOK {
		c.t.Fatalf("GET %s = %d: %s", path, code, shorten(body, 300))
	}
	return body
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func (c *client) csrf(page string) string {
	c.t.Helper()
	m := csrfRe.FindStringSubmatch(c.mustGet(page))
	if m == nil {
		c.t.Fatalf("no CSRF token on %s", page)
	}
	return m[1]
}

func (c *client) post(path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	return c.do("POST", path, form, nil)
}

func TestPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{})
	c := newClient(t, base)
	for _, p := range []struct {
		path string
		want []string
	}{
		{"/ui/", []string{"Refactor the parser", "gpt-4o", "/home/dev/parser", "⎇ main", "↳ branch", "Try the other fix", "71%"}},
		{"/ui/?q=PARSER", []string{"Refactor the parser"}},
		{"/ui/?model=gpt-4o&cwd=/home/dev/parser", []string{"Refactor the parser"}},
		{"/ui/sessions/" + f.demo, []string{
			"archived message",                                 // the archived span
			"⟳ Compaction", "Fix the zebra bug in the parser.", // the marker and its summary
			"Working set", "src/file_a.go", // the ledger
			"read_file", "src/file_d.go", // a tool call and its arguments
			"reasoning",
			"cache break: first change at message 1 of the request: a compaction rewrote the history; 10,000 cached tokens lost",
			`id="m` + fmt.Sprint(f.toolCall) + `"`,
			"Try the other fix", "branch", // the lineage tree
			"/prompt",
			"1.9 s", // the slowest call's latency
		}},
		{"/ui/sessions/" + f.demo + "/prompt", []string{"You are spool, a careful coding agent."}},
		{"/ui/search?q=zebra", []string{"<mark>zebra</mark>", "archived", "?at="}},
		{"/ui/search?q=zebra&role=tool", []string{"<mark>zebra</mark>"}},
		{"/ui/usage", []string{"<svg", "gpt-4o", "48 prompt tokens", "model calls"}},
		{"/ui/sessions/" + f.demo + "/delete", []string{"Delete for good"}},
	} {
		body := c.mustGet(p.path)
		for _, w := range p.want {
			if w == "48 prompt tokens" {
				w = "48,000 prompt tokens"
			}
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: missing %q", p.path, w)
			}
		}
	}
	// The filtered list leaves out what does not match.
	if body := c.mustGet("/ui/?q=nothing-like-this"); strings.Contains(body, "Refactor the parser") {
		t.Error("the title query did not filter")
	}
	if body := c.mustGet("/ui/?model=claude"); strings.Contains(body, "Refactor the parser") {
		t.Error("the model filter did not filter")
	}
	// A search hit links to its message, which the linked page shows with its anchor.
	body := c.mustGet("/ui/search?q=zebra&role=user")
	m := regexp.MustCompile(`href="(/ui/sessions/[^"?]+\?at=(\d+))#m(\d+)"`).FindStringSubmatch(body)
	if m == nil || m[2] != m[3] {
		t.Fatalf("no hit link in %s", shorten(body, 2000))
	}
	if page := c.mustGet(strings.ReplaceAll(m[1], "&amp;", "&")); !strings.Contains(page, `id="m`+m[2]+`"`) {
		t.Fatalf("the hit's page has no anchor m%s", m[2])
	}
	// Bad input answers 4xx with one line.
	for _, p := range []string{"/ui/sessions/nope", "/ui/sessions/" + f.demo + "?after=-3", "/ui/search?q=x&role=root", "/ui/nothing"} {
		if code, _ := c.get(p); code < 400 || code >= 500 {
			t.Errorf("GET %s = %d, want 4xx", p, code)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{})
	c := newClient(t, base)
	for _, p := range []string{"/ui/", "/ui/sessions/" + f.demo, "/ui/nothing", "/ui/assets/app.js"} {
		resp, _ := c.do("GET", p, nil, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", p, resp.Header)
		}
	}
	// The page itself has no inline script or style for the CSP to block.
	body := c.mustGet("/ui/sessions/" + f.demo)
	if n := strings.Count(body, "<script"); n != 2 || strings.Contains(body, "style=") || strings.Contains(body, " onclick=") {
		t.Errorf("page has inline script or style (%d script tags)", n)
	}
	if js := c.mustGet("/ui/assets/htmx.min.js"); !strings.Contains(js, "htmx") {
		t.Error("htmx asset missing")
	}
}

// TestEscaping stores messages with script, javascript: links, markup breakouts and terminal
// escape sequences, and checks that none of it reaches any page as markup or raw bytes.
func TestEscaping(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{})
	c := newClient(t, base)
	pages := []string{"/ui/", "/ui/sessions/" + f.evil, "/ui/search?q=pwned", "/ui/search?q=" + url.QueryEscape("<script>"),
		"/ui/sessions/" + f.evil + "/delete", "/ui/?q=" + url.QueryEscape("<b>bold")}
	for _, p := range pages {
		body := c.mustGet(p)
		for _, bad := range []string{"<script>alert", "</script><script>", "<img src=x", "<svg onload", `href="javascript:`,
			"<b>bold title</b>", "<i>m</i>", "\x1b", "\x07", "\u202e", "</textarea></pre>\"'>"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: contains %q unescaped", p, bad)
			}
		}
		if strings.Count(body, "<script") != 2 {
			t.Errorf("GET %s: %d script tags, want only the two assets", p, strings.Count(body, "<script"))
		}
	}
	body := c.mustGet("/ui/sessions/" + f.evil)
	for _, want := range []string{"&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;", "␛[31mred␛[0m", "U+202E",
		`href="https://example.com/"`, "[click me](javascript:alert(2))", "&lt;b&gt;bold title&lt;/b&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("session page: missing %q (escaped form)", want)
		}
	}
	// The transcript still has its structure after the hostile rows: the page did not break.
	if !strings.Contains(body, `class="side"`) || !strings.Contains(body, "</html>") {
		t.Error("the page after hostile content is cut short")
	}
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{})
	c := newClient(t, base)
	path := "/ui/sessions/" + f.demo + "/rename"
	tok := c.csrf("/ui/sessions/" + f.demo)
	for _, x := range []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no token", url.Values{"title": {"hijacked"}}, nil},
		{"wrong token", url.Values{"title": {"hijacked"}, "csrf": {strings.Repeat("0", 64)}}, nil},
		{"cross-site", url.Values{"title": {"hijacked"}, "csrf": {tok}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"foreign origin", url.Values{"title": {"hijacked"}, "csrf": {tok}}, map[string]string{"Origin": "https://evil.example"}},
	} {
		resp, _ := c.do("POST", path, x.form, x.hdr)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", x.name, resp.StatusCode)
		}
	}
	for _, p := range []string{"/delete", "/export", "/branch"} {
		resp, _ := c.post("/ui/sessions/"+f.demo+p, url.Values{"confirm": {f.demo}})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s without a token: %d", p, resp.StatusCode)
		}
	}
	if s, _ := f.st.GetSession(bg, f.demo); s.Title != "Refactor the parser" {
		t.Fatalf("a refused request renamed the session to %q", s.Title)
	}
	resp, _ := c.do("POST", path, url.Values{"title": {"Renamed here"}, "csrf": {tok}}, map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("rename with the token: %d", resp.StatusCode)
	}
	if s, _ := f.st.GetSession(bg, f.demo); s.Title != "Renamed here" {
		t.Fatalf("title = %q", s.Title)
	}
	// Renaming onto a taken title is a 409 naming it; the title stays.
	resp, body := c.post(path, url.Values{"title": {"Try the other fix"}, "csrf": {tok}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "already in use") {
		t.Fatalf("rename onto a taken title: %d %s", resp.StatusCode, shorten(body, 200))
	}
}

func scopedOptions() Options {
	return Options{Principal: func(r *http.Request) (Principal, error) {
		u := r.Header.Get("X-Test-User")
		if u == "" {
			return Principal{}, fmt.Errorf("no API key")
		}
		return Principal{UserID: u, Scoped: true}, nil
	}}
}

// TestPrincipalScoping: under spool serve every key sees only its principal's sessions; another
// principal's session answers 404 on every route, exactly like a missing one.
func TestPrincipalScoping(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, scopedOptions())
	alice := newClient(t, base)
	alice.user = "alice"
	anon := newClient(t, base)
	if code, _ := anon.get("/ui/"); code != http.StatusUnauthorized {
		t.Fatalf("no principal: %d", code)
	}
	if body := alice.mustGet("/ui/"); strings.Contains(body, "Bob") || !strings.Contains(body, "Refactor the parser") {
		t.Fatal("alice's list shows bob's session or not her own")
	}
	if body := alice.mustGet("/ui/search?q=zebra"); strings.Contains(body, f.bobs) || strings.Contains(body, "launch") {
		t.Fatal("alice's search finds bob's message")
	}
	tok := alice.csrf("/ui/sessions/" + f.demo)
	for _, p := range []string{"", "/prompt", "/delete", "/events"} {
		code, body := alice.get("/ui/sessions/" + f.bobs + p)
		_, missing := alice.get("/ui/sessions/no-such-session" + p)
		if code != http.StatusNotFound || body != missing {
			t.Errorf("GET bob's %q as alice = %d; want the same 404 page as a missing session", p, code)
		}
	}
	for _, p := range []string{"/rename", "/delete", "/export", "/branch"} {
		resp, _ := alice.post("/ui/sessions/"+f.bobs+p, url.Values{"csrf": {tok}, "title": {"mine"}, "confirm": {f.bobs}})
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST bob's %s as alice = %d", p, resp.StatusCode)
		}
	}
	if s, err := f.st.GetSession(bg, f.bobs); err != nil || s.Title != "Bob's secret plans" {
		t.Fatalf("bob's session changed: %+v %v", s, err)
	}
	// A token minted for alice is worthless to bob.
	bob := newClient(t, base)
	bob.user = "bob"
	if resp, _ := bob.post("/ui/sessions/"+f.bobs+"/rename", url.Values{"csrf": {tok}, "title": {"x"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("alice's CSRF token accepted for bob: %d", resp.StatusCode)
	}
	if body := alice.mustGet("/ui/usage"); !strings.Contains(body, "48,000 prompt tokens") {
		t.Error("alice's usage is not her own")
	}
}

func TestLoginToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{LoginToken: "s3cret"})
	c := newClient(t, base)
	if code, _ := c.get("/ui/"); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	if code, _ := c.get("/ui/?token=wrong"); code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", code)
	}
	resp, _ := c.do("GET", "/ui/sessions/"+f.demo+"?token=s3cret", nil, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/sessions/"+f.demo {
		t.Fatalf("token exchange: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The one sign-in cookie (web/signin), as spool serve's key login sets it.
	ck := resp.Cookies()
	if len(ck) != 1 || ck[0].Name != signin.CookieName || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode ||
		ck[0].Path != "/ui/" || ck[0].MaxAge != int(OwnSignInTTL/time.Second) || len(ck[0].Value) != 64 {
		t.Fatalf("cookie = %+v", ck)
	}
	c.mustGet("/ui/sessions/" + f.demo)
	// The token works once: a second browser cannot use it.
	other := newClient(t, base)
	if code, _ := other.get("/ui/?token=s3cret"); code != http.StatusUnauthorized {
		t.Fatalf("token reused: %d", code)
	}
	// The pages' CSRF token is bound to this sign-in: it renames; a forged cookie is no sign-in.
	tok := c.csrf("/ui/sessions/" + f.demo)
	if resp, _ := c.post("/ui/sessions/"+f.demo+"/rename", url.Values{"csrf": {tok}, "title": {"renamed by the link"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("rename after the one-time sign-in: %d", resp.StatusCode)
	}
	forged := newClient(t, base)
	u, _ := url.Parse(base + "/ui/")
	forged.c.Jar.SetCookies(u, []*http.Cookie{{Name: signin.CookieName, Value: strings.Repeat("ab", 32)}})
	if code, _ := forged.get("/ui/"); code != http.StatusUnauthorized {
		t.Fatalf("forged cookie: %d", code)
	}
}

// TestSharedSignIns: with Options.SignIns, a sign-in issued into the table by another entry
// point (spool serve's key login) binds the pages' CSRF tokens: each sign-in its own.
func TestSharedSignIns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	table := signin.New(signin.Options{Prefix: "/ui"})
	s := New(f.st, Options{SignIns: table})
	signedIn := func() *http.Cookie {
		rec := httptest.NewRecorder()
		table.Issue(rec, httptest.NewRequest("GET", "/ui/login", nil), "alice")
		return rec.Result().Cookies()[0]
	}
	tokenOf := func(ck *http.Cookie) string {
		req := httptest.NewRequest("GET", "/ui/sessions/"+f.demo, nil)
		if ck != nil {
			req.AddCookie(ck)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		m := csrfRe.FindStringSubmatch(rec.Body.String())
		if rec.Code != 200 || m == nil {
			t.Fatalf("page: %d, no CSRF token", rec.Code)
		}
		return m[1]
	}
	a, b := signedIn(), signedIn()
	ta, tb, none := tokenOf(a), tokenOf(b), tokenOf(nil)
	if ta == tb || ta == none || tb == none || tokenOf(a) != ta {
		t.Fatal("the pages' CSRF token is not bound to the sign-in")
	}
	post := func(ck *http.Cookie, tok string) int {
		req := httptest.NewRequest("POST", "/ui/sessions/"+f.demo+"/rename", strings.NewReader(url.Values{"csrf": {tok}, "title": {"shared " + tok[:6]}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(ck)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := post(a, tb); code != http.StatusForbidden {
		t.Fatalf("another sign-in's token: %d, want 403", code)
	}
	if code := post(a, ta); code != http.StatusSeeOther {
		t.Fatalf("the sign-in's own token: %d, want 303", code)
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{})
	c := newClient(t, base)
	tok := c.csrf("/ui/sessions/" + f.demo)

	// Export: one session, then the tree (the branch rides along).
	resp, body := c.post("/ui/sessions/"+f.demo+"/export", url.Values{"csrf": {tok}})
	if resp.StatusCode != 200 || !strings.HasPrefix(body, `{"spool_export":1`) || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("export: %d %q", resp.StatusCode, shorten(body, 100))
	}
	if strings.Contains(body, f.branch) {
		t.Fatal("a one-session export carries the branch")
	}
	_, tree := c.post("/ui/sessions/"+f.demo+"/export", url.Values{"csrf": {tok}, "tree": {"1"}})
	if !strings.Contains(tree, `"id":"`+f.branch+`"`) {
		t.Fatal("the tree export lacks the branch")
	}
	// The bundle imports into a fresh store whole.
	st2 := openStore(t)
	if _, err := store.Import(bg, st2, strings.NewReader(tree), nil); err != nil {
		t.Fatalf("import the exported tree: %v", err)
	}

	// Branch from a chosen message: the copy ends there.
	active, _ := f.st.Conversation(bg, f.demo, store.ViewActive)
	resp, _ = c.post("/ui/sessions/"+f.demo+"/branch", url.Values{"csrf": {tok}, "at": {fmt.Sprint(f.toolCall)}, "title": {"from the call"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("branch: %d", resp.StatusCode)
	}
	child := strings.TrimPrefix(resp.Header.Get("Location"), "/ui/sessions/")
	cs, err := f.st.GetSession(bg, child)
	if err != nil || cs.ParentID != f.demo || cs.Relation != store.RelationBranch || cs.Title != "from the call" || cs.UserID != "alice" {
		t.Fatalf("branch session = %+v, %v", cs, err)
	}
	got, _ := f.st.Conversation(bg, child, store.ViewActive)
	want := 0
	for i, m := range active {
		if m.ID == f.toolCall {
			want = i + 1
		}
	}
	if len(got) != want || got[len(got)-1].Content != active[want-1].Content || len(got[len(got)-1].ToolCalls) != 1 {
		t.Fatalf("branch has %d messages, want %d ending with the tool call", len(got), want)
	}
	if p, _ := f.st.SystemPrompt(bg, child); !strings.Contains(p, "careful coding agent") {
		t.Fatal("branch lost the system prompt")
	}
	// Branching from an archived message is refused: only the active history can continue.
	resp, body = c.post("/ui/sessions/"+f.demo+"/branch", url.Values{"csrf": {tok}, "at": {fmt.Sprint(f.archived)}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not in the active history") {
		t.Fatalf("branch from an archived message: %d", resp.StatusCode)
	}
	// Branch from the latest message goes through store.Branch.
	resp, _ = c.post("/ui/sessions/"+f.demo+"/branch", url.Values{"csrf": {tok}})
	whole := strings.TrimPrefix(resp.Header.Get("Location"), "/ui/sessions/")
	if got, _ := f.st.Conversation(bg, whole, store.ViewActive); len(got) != len(active) {
		t.Fatalf("whole branch has %d of %d messages", len(got), len(active))
	}

	// Delete: needs the confirmation field, refused while a turn runs.
	if resp, _ := c.post("/ui/sessions/"+f.evil+"/delete", url.Values{"csrf": {tok}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("delete without confirm: %d", resp.StatusCode)
	}
	l, err := f.st.AcquireLease(bg, f.evil, "pid=1:host=elsewhere:start=1:nonce=x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := c.post("/ui/sessions/"+f.evil+"/delete", url.Values{"csrf": {tok}, "confirm": {f.evil}}); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "turn is running") {
		t.Fatalf("delete during a turn: %d", resp.StatusCode)
	}
	if err := f.st.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}
	if resp, _ := c.post("/ui/sessions/"+f.evil+"/delete", url.Values{"csrf": {tok}, "confirm": {f.evil}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if _, err := f.st.GetSession(bg, f.evil); err == nil {
		t.Fatal("session still there after delete")
	}
}

func TestLiveBadge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{})
	c := newClient(t, base)
	if body := c.mustGet("/ui/"); strings.Contains(body, "● live") {
		t.Fatal("live badge without a lease")
	}
	if _, err := f.st.AcquireLease(bg, f.demo, "pid=42:host=worker-7:start=1:nonce=ab", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/ui/", "/ui/sessions/" + f.demo} {
		if body := c.mustGet(p); !strings.Contains(body, "● live") || !strings.Contains(body, "host=worker-7") {
			t.Errorf("%s: no live badge naming the holder", p)
		}
	}
}

// TestLiveStream reads the event stream of a session while rows are appended by the store, as a
// running turn in another process would.
func TestLiveStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{PollInterval: 20 * time.Millisecond})
	active, _ := f.st.Conversation(bg, f.demo, store.ViewDisplay)
	last := active[len(active)-1].ID
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute) // a hang guard, not a verdict
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/ui/sessions/%s/events?from=%d&after=%d", base, f.demo, active[0].ID, last), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan [2]string)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name string
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			case line == "" && name != "":
				select {
				case events <- [2]string{name, strings.Join(data, "\n")}:
				case <-ctx.Done():
					return
				}
				name, data = "", nil
			}
		}
	}()
	next := func(want string) string {
		t.Helper()
		for ev := range events {
			if ev[0] == want {
				return ev[1]
			}
		}
		t.Fatalf("stream ended before a %q event", want)
		return ""
	}
	// The first lease event says no turn is running.
	if b := next("lease"); b != "" {
		t.Fatalf("first lease event = %q", b)
	}
	l, err := f.st.AcquireLease(bg, f.demo, "pid=7:host=h:start=1:nonce=n", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b := next("lease"); !strings.Contains(b, "● live") {
		t.Fatalf("lease event after acquire = %q", b)
	}
	mustAppend(t, f.st, f.demo, store.Message{Role: store.RoleUser, Content: "a <new> question"},
		store.Message{Role: store.RoleAssistant, Content: "calling", ToolCalls: []store.ToolCall{{ID: "live-1", Type: "function",
			Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"make"}`}}}})
	got := next("messages")
	for !strings.Contains(got, "terminal") {
		got += next("messages")
	}
	if !strings.Contains(got, "a &lt;new&gt; question") || !strings.Contains(got, "terminal") {
		t.Fatalf("messages event = %q", got)
	}
	// A compaction as it happens: its marker streams in.
	all, _ := f.st.Conversation(bg, f.demo, store.ViewActive)
	if _, err := f.st.ArchiveAndCompact(bg, store.CompactRequest{SessionID: f.demo, Watermark: all[len(all)-1].ID,
		Messages: []store.Message{{Role: store.RoleUser, Content: "## Goal\nlive summary", Summary: true}}}, l.Fence()); err != nil {
		t.Fatal(err)
	}
	got = next("messages")
	if !strings.Contains(got, "⟳ Compaction") || !strings.Contains(got, "live summary") {
		t.Fatalf("compaction event = %q", got)
	}
	// With it, the ids of the rows on the page it archived, for the page to restyle.
	var want []string
	every, _ := f.st.Conversation(bg, f.demo, store.ViewAll)
	for _, m := range every {
		if !m.Active && m.Compacted && m.ID >= active[0].ID && m.ID <= all[len(all)-1].ID {
			want = append(want, fmt.Sprint(m.ID))
		}
	}
	if got := next("archived"); len(want) == 0 || got != strings.Join(want, " ") {
		t.Fatalf("archived event = %q, want %q", got, strings.Join(want, " "))
	}
	if err := f.st.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}
	if b := next("lease"); b != "" {
		t.Fatalf("lease event after release = %q", b)
	}
}

func TestPaging(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	s, err := st.CreateSession(bg, store.NewSession{Title: "long"})
	if err != nil {
		t.Fatal(err)
	}
	var ms []store.Message
	for i := 0; i < 450; i++ {
		ms = append(ms, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("message number %d", i)})
	}
	ids := mustAppend(t, st, s.ID, ms...)
	_, base := newServer(t, st, Options{})
	c := newClient(t, base)
	first := c.mustGet("/ui/sessions/" + s.ID)
	if !strings.Contains(first, "message number 0<") || strings.Contains(first, "message number 200<") || !strings.Contains(first, "?after=") {
		t.Fatal("first page is not the first 200 rows with a link to the next")
	}
	next := c.mustGet(fmt.Sprintf("/ui/sessions/%s?after=%d", s.ID, ids[199]))
	if !strings.Contains(next, "message number 200<") || strings.Contains(next, "message number 199<") {
		t.Fatal("second page")
	}
	last := c.mustGet("/ui/sessions/" + s.ID + "?last=1")
	if !strings.Contains(last, "message number 449<") || strings.Contains(last, "message number 249<") || !strings.Contains(last, "data-live") {
		t.Fatal("last page")
	}
	at := c.mustGet(fmt.Sprintf("/ui/sessions/%s?at=%d", s.ID, ids[300]))
	if !strings.Contains(at, "message number 300<") || !strings.Contains(at, "message number 281<") || strings.Contains(at, "message number 279<") {
		t.Fatal("page around a message")
	}
}

// TestBranchGrouping nests branches under their parents at every depth, whatever the order the
// page lists them in.
func TestBranchGrouping(t *testing.T) {
	t.Parallel()
	l := func(id, parent string) store.SessionListing {
		s := store.SessionListing{}
		s.ID, s.ParentID, s.TreeParent = id, parent, parent
		if parent != "" {
			s.Relation = store.RelationBranch
		}
		return s
	}
	// c (a branch of b, itself a branch of a) is listed before b; x's parent is not on the page.
	rows := groupBranches([]store.SessionListing{l("c", "b"), l("a", ""), l("x", "gone"), l("b", "a")}, nil)
	if len(rows) != 2 || rows[0].ID != "a" || rows[1].ID != "x" || rows[1].BranchOf != "gone" {
		t.Fatalf("top rows = %+v", rows)
	}
	a := rows[0]
	if len(a.Branches) != 1 || a.Branches[0].ID != "b" || len(a.Branches[0].Branches) != 1 || a.Branches[0].Branches[0].ID != "c" {
		t.Fatalf("a's tree = %+v", a)
	}
	if c := a.Branches[0].Branches[0]; c.Group != "a" || c.Depth != 2 || a.Descendants() != 2 {
		t.Fatalf("c = %+v, descendants %d", c, a.Descendants())
	}
}

// TestBranchOnRootsPage lists a branch under its root on the root's page, however old the
// branch's activity: the list pages over branch trees, not over sessions. A filter that
// matches only the branch still shows it under its root, the root marked as not matching.
func TestBranchOnRootsPage(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	now := time.Now()
	mk := func(ns store.NewSession) {
		t.Helper()
		if _, err := st.CreateSession(bg, ns); err != nil {
			t.Fatal(err)
		}
	}
	mk(store.NewSession{ID: "tree-root", Title: "the root", StartedAt: now.Add(-time.Minute)})
	for i := 0; i < listPageSize+5; i++ {
		mk(store.NewSession{ID: fmt.Sprintf("other-%02d", i), StartedAt: now.Add(-time.Duration(10+i) * time.Minute)})
	}
	mk(store.NewSession{ID: "old-branch", Title: "the old branch", Source: "telegram", ParentID: "tree-root",
		Relation: store.RelationBranch, StartedAt: now.Add(-120 * time.Hour)})
	_, base := newServer(t, st, Options{})
	c := newClient(t, base)
	nested := regexp.MustCompile(`<tr class="srow sub depth1" data-nav data-in-group="tree-root">\s*<td class="name"><span class="edge">↳ branch</span> <a href="/ui/sessions/old-branch"`)
	one, two := c.mustGet("/ui/"), c.mustGet("/ui/?page=2")
	if !nested.MatchString(one) {
		i := max(strings.Index(one, "old-branch")-300, 0)
		t.Fatalf("page 1 does not nest old-branch under tree-root:\n%s", one[i:min(i+600, len(one))])
	}
	if strings.Contains(two, "old-branch") || !strings.Contains(two, "other-54") || strings.Contains(one, "other-54") {
		t.Fatal("page 2 lists old-branch, or the pages do not hold 50 trees each")
	}
	// Only the branch matches the source filter: it is still nested, under its root.
	f := c.mustGet("/ui/?source=telegram")
	if !nested.MatchString(f) || !strings.Contains(f, `class="srow unmatched"`) || strings.Contains(f, "other-0") {
		t.Fatalf("source filter: want the root (marked unmatched) with its branch and nothing else:\n%s", shorten(f, 3000))
	}
	if q := c.mustGet("/ui/?q=old+branch"); !nested.MatchString(q) {
		t.Fatal("title query matching only the branch does not show it under its root")
	}
}
