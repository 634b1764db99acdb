package uilogin

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway"
)

// clock is a settable time source for the sign-in's expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testServer mounts the sign-in in front of a page that prints its principal, as spool serve
// mounts it in front of the session browser.
func testServer(t *testing.T, keys gateway.Keys, clk *clock) (*httptest.Server, *Logins) {
	t.Helper()
	l := New(keys, Options{Prefix: "/ui", Now: clk.now})
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := l.Principal(r)
		io.WriteString(w, "principal="+p)
	})
	m := http.NewServeMux()
	m.Handle("/ui/", l.Guard(inner))
	m.Handle("/ui/login", l.Handler())
	m.Handle("/ui/logout", l.Handler())
	s := httptest.NewServer(m)
	t.Cleanup(s.Close)
	return s, l
}

type client struct {
	t   *testing.T
	url string
}

func (c client) do(method, path, origin string, form url.Values, cookie *http.Cookie, header ...string) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.url+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func sessionCookie(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	return nil
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func mustKeys(t *testing.T) gateway.Keys {
	t.Helper()
	keys, err := gateway.ParseKeys(map[string]string{"alice": gateway.HashKey("sk-alice-secret"), "bob": gateway.HashKey("sk-bob-secret")})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func signIn(t *testing.T, c client, key string) *http.Cookie {
	t.Helper()
	res, _ := c.do("POST", "/ui/login", c.url, url.Values{"key": {key}, "next": {"/ui/"}}, nil)
	ck := sessionCookie(res)
	if res.StatusCode != http.StatusSeeOther || ck == nil {
		t.Fatalf("sign in with %s: %d, cookie %v", key[:5], res.StatusCode, ck)
	}
	return ck
}

func TestLoginAndScope(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := testServer(t, mustKeys(t), clk)
	c := client{t, s.URL}

	// A wrong key: 401, no cookie, one line of error, the key never echoed.
	res, body := c.do("POST", "/ui/login", s.URL, url.Values{"key": {"sk-alice-secreT"}, "next": {"/ui/"}}, nil)
	if res.StatusCode != http.StatusUnauthorized || sessionCookie(res) != nil || strings.Contains(body, "sk-alice") ||
		strings.Count(body, `role="alert"`) != 1 {
		t.Fatalf("wrong key: %d, cookie %v, body:\n%s", res.StatusCode, sessionCookie(res), body)
	}
	// No sign-in: a page redirects to the login page, anything else is 401.
	if res, _ := c.do("GET", "/ui/sessions/x", "", nil, nil); res.StatusCode != http.StatusSeeOther ||
		res.Header.Get("Location") != "/ui/login?next=%2Fui%2Fsessions%2Fx" {
		t.Fatalf("GET without sign-in: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := c.do("POST", "/ui/sessions/x/rename", s.URL, url.Values{}, nil); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST without sign-in: %d, want 401", res.StatusCode)
	}
	// A forged cookie is no sign-in.
	if res, _ := c.do("GET", "/ui/", "", nil, &http.Cookie{Name: CookieName, Value: strings.Repeat("ab", 32)}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("forged cookie: %d, want a redirect", res.StatusCode)
	}

	alice := signIn(t, c, "sk-alice-secret")
	if !alice.HttpOnly || alice.SameSite != http.SameSiteStrictMode || alice.Secure || alice.Path != "/ui/" ||
		alice.MaxAge != int(DefaultTTL/time.Second) || strings.Contains(alice.Value, "sk-alice") || len(alice.Value) != 64 {
		t.Fatalf("cookie over plain HTTP: %+v", alice)
	}
	bob := signIn(t, c, "  sk-bob-secret\n") // pasted with whitespace
	for _, tc := range []struct {
		cookie *http.Cookie
		want   string
	}{{alice, "principal=alice"}, {bob, "principal=bob"}} {
		if res, body := c.do("GET", "/ui/", "", nil, tc.cookie); res.StatusCode != 200 || body != tc.want {
			t.Fatalf("signed in: %d %q, want %q", res.StatusCode, body, tc.want)
		}
	}
	// Scripts keep sending the key as a Bearer header.
	if res, body := c.do("GET", "/ui/", "", nil, nil, "Authorization", "Bearer sk-bob-secret"); res.StatusCode != 200 || body != "principal=bob" {
		t.Fatalf("bearer: %d %q", res.StatusCode, body)
	}

	// The sign-in ends after the TTL.
	clk.add(DefaultTTL - time.Second)
	if res, _ := c.do("GET", "/ui/", "", nil, alice); res.StatusCode != 200 {
		t.Fatalf("before expiry: %d", res.StatusCode)
	}
	clk.add(time.Second)
	if res, _ := c.do("GET", "/ui/", "", nil, alice); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after expiry: %d, want a redirect to the login page", res.StatusCode)
	}
}

func TestSecureCookieOverTLS(t *testing.T) {
	t.Parallel()
	l := New(mustKeys(t), Options{})
	req := httptest.NewRequest("POST", "https://spool.example/ui/login", strings.NewReader("key=sk-alice-secret"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://spool.example")
	req.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	l.Handler().ServeHTTP(rec, req)
	ck := sessionCookie(rec.Result())
	if rec.Code != http.StatusSeeOther || ck == nil || !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("TLS sign-in: %d, cookie %+v", rec.Code, ck)
	}
}

func TestLogoutNeedsCSRF(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := testServer(t, mustKeys(t), clk)
	c := client{t, s.URL}
	alice := signIn(t, c, "sk-alice-secret")
	bob := signIn(t, c, "sk-bob-secret")

	tokenOf := func(ck *http.Cookie) string {
		t.Helper()
		res, body := c.do("GET", "/ui/logout", "", nil, ck)
		m := csrfField.FindStringSubmatch(body)
		if res.StatusCode != 200 || m == nil {
			t.Fatalf("sign-out page: %d\n%s", res.StatusCode, body)
		}
		return m[1]
	}
	aliceTok, bobTok := tokenOf(alice), tokenOf(bob)
	if aliceTok == bobTok {
		t.Fatal("two sign-ins share a sign-out token")
	}
	// Without a sign-in the sign-out page sends the person to the login page.
	if res, _ := c.do("GET", "/ui/logout", "", nil, nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out page without a sign-in: %d", res.StatusCode)
	}
	for _, tc := range []struct {
		name, origin string
		form         url.Values
		status       int
	}{
		{"no token", s.URL, url.Values{}, http.StatusForbidden},
		{"wrong token", s.URL, url.Values{"csrf": {strings.Repeat("0", 64)}}, http.StatusForbidden},
		{"another sign-in's token", s.URL, url.Values{"csrf": {bobTok}}, http.StatusForbidden},
		{"another site", "https://evil.example", url.Values{"csrf": {aliceTok}}, http.StatusForbidden},
	} {
		res, _ := c.do("POST", "/ui/logout", tc.origin, tc.form, alice)
		if res.StatusCode != tc.status {
			t.Fatalf("%s: %d, want %d", tc.name, res.StatusCode, tc.status)
		}
		if res, body := c.do("GET", "/ui/", "", nil, alice); res.StatusCode != 200 || body != "principal=alice" {
			t.Fatalf("after a refused sign-out (%s), alice is signed out: %d", tc.name, res.StatusCode)
		}
	}
	res, _ := c.do("POST", "/ui/logout", s.URL, url.Values{"csrf": {aliceTok}}, alice)
	if ck := sessionCookie(res); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/login" || ck == nil || ck.MaxAge >= 0 {
		t.Fatalf("sign-out: %d %q, cookie %+v", res.StatusCode, res.Header.Get("Location"), ck)
	}
	// The old cookie is dead server-side (a browser that kept it gets the login page); bob's lives.
	if res, _ := c.do("GET", "/ui/", "", nil, alice); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice's cookie after sign-out: %d, want a redirect", res.StatusCode)
	}
	if res, body := c.do("GET", "/ui/", "", nil, bob); res.StatusCode != 200 || body != "principal=bob" {
		t.Fatalf("bob after alice signed out: %d %q", res.StatusCode, body)
	}
}

func TestWithoutKeys(t *testing.T) {
	t.Parallel()
	s, _ := testServer(t, gateway.Keys{}, &clock{t: time.Now()})
	c := client{t, s.URL}
	if res, body := c.do("GET", "/ui/", "", nil, nil); res.StatusCode != 200 || body != "principal="+gateway.Local {
		t.Fatalf("no keys: %d %q", res.StatusCode, body)
	}
	if res, _ := c.do("GET", "/ui/login", "", nil, nil); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("login page without keys: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := c.do("POST", "/ui/login", s.URL, url.Values{"key": {"anything"}}, nil); res.StatusCode != http.StatusUnauthorized || sessionCookie(res) != nil {
		t.Fatalf("sign-in without keys: %d", res.StatusCode)
	}
}

// TestSignInRateLimit: failed sign-ins are counted per client address in a window; past the
// limit every sign-in from that address (the right key too) is 429 with Retry-After until the
// window ends, other addresses are unaffected, and a wrong Bearer key counts like the form.
func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(mustKeys(t), Options{Prefix: "/ui", Now: clk.now, Attempts: 3, Window: time.Minute})
	m := http.NewServeMux()
	m.Handle("/ui/", l.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })))
	m.Handle("/ui/login", l.Handler())
	login := func(addr, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "http://spool.test/ui/login", strings.NewReader(url.Values{"key": {key}, "next": {"/ui/"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://spool.test")
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		return rec
	}
	bearer := func(addr, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "http://spool.test/ui/", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		return rec
	}
	const attacker, other = "192.0.2.7:40001", "198.51.100.9:5000"
	for i := 0; i < 3; i++ {
		if rec := login(attacker, "sk-guess"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failed attempt %d: %d, want 401", i+1, rec.Code)
		}
		clk.add(10 * time.Second)
	}
	// The limit is reached: refused whatever the key, from any port of that address.
	for _, tc := range []struct {
		name string
		rec  *httptest.ResponseRecorder
	}{
		{"wrong key", login(attacker, "sk-guess")},
		{"right key", login("192.0.2.7:40002", "sk-alice-secret")},
		{"bearer", bearer(attacker, "sk-alice-secret")},
	} {
		if tc.rec.Code != http.StatusTooManyRequests || tc.rec.Header().Get("Retry-After") != "30" || sessionCookie(tc.rec.Result()) != nil ||
			strings.Contains(tc.rec.Body.String(), "sk-") {
			t.Fatalf("%s past the limit: %d Retry-After %q cookie %v\n%s", tc.name, tc.rec.Code, tc.rec.Header().Get("Retry-After"),
				sessionCookie(tc.rec.Result()), tc.rec.Body.String())
		}
	}
	// Another address signs in as usual.
	if rec := login(other, "sk-alice-secret"); rec.Code != http.StatusSeeOther || sessionCookie(rec.Result()) == nil {
		t.Fatalf("other address: %d", rec.Code)
	}
	// The window ends: the address may try again, and a right key signs in.
	clk.add(30 * time.Second)
	if rec := login(attacker, "sk-alice-secret"); rec.Code != http.StatusSeeOther || sessionCookie(rec.Result()) == nil {
		t.Fatalf("after the window: %d", rec.Code)
	}
	// Wrong Bearer keys count too.
	for i := 0; i < 3; i++ {
		if rec := bearer(other, "sk-guess"); rec.Code != http.StatusSeeOther {
			t.Fatalf("wrong bearer %d: %d, want the redirect to the login page", i+1, rec.Code)
		}
	}
	if rec := bearer(other, "sk-bob-secret"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "60" {
		t.Fatalf("bearer past the limit: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}
