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
