package signin

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

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

// issue signs a request in as principal and returns the cookie set.
func issue(t *testing.T, tb *Table, principal string, overTLS bool) *http.Cookie {
	t.Helper()
	r := httptest.NewRequest("GET", "http://spool.test/ui/", nil)
	if overTLS {
		r.TLS = &tls.ConnectionState{}
	}
	rec := httptest.NewRecorder()
	tb.Issue(rec, r, principal)
	cs := rec.Result().Cookies()
	if len(cs) != 1 || cs[0].Name != CookieName {
		t.Fatalf("Issue set %+v", cs)
	}
	return cs[0]
}

func with(c *http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", "http://spool.test/ui/", nil)
	if c != nil {
		r.AddCookie(c)
	}
	return r
}

func TestIssueAndLookup(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tb := New(Options{Prefix: "ui/", TTL: time.Hour, Now: clk.now})
	alice := issue(t, tb, "alice", false)
	if !alice.HttpOnly || alice.SameSite != http.SameSiteStrictMode || alice.Secure || alice.Path != "/ui/" ||
		alice.MaxAge != 3600 || len(alice.Value) != 64 {
		t.Fatalf("cookie over plain HTTP: %+v", alice)
	}
	if c := issue(t, tb, "bob", true); !c.Secure {
		t.Fatalf("cookie over TLS is not Secure: %+v", c)
	}
	if p, ok := tb.Principal(with(alice)); !ok || p != "alice" {
		t.Fatalf("alice's cookie = %q, %v", p, ok)
	}
	for _, c := range []*http.Cookie{nil, {Name: CookieName, Value: strings.Repeat("ab", 32)}, {Name: CookieName, Value: "zz"},
		{Name: "other", Value: alice.Value}} {
		if _, ok := tb.Principal(with(c)); ok {
			t.Fatalf("cookie %+v signs in", c)
		}
	}
	clk.add(time.Hour - time.Second)
	if !tb.SignedIn(with(alice)) {
		t.Fatal("signed out before the TTL")
	}
	clk.add(time.Second)
	if tb.SignedIn(with(alice)) {
		t.Fatal("still signed in at the TTL")
	}
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	tb := New(Options{})
	alice, bob := issue(t, tb, "alice", false), issue(t, tb, "bob", false)
	rec := httptest.NewRecorder()
	tb.SignOut(rec, with(alice))
	if cs := rec.Result().Cookies(); len(cs) != 1 || cs[0].Name != CookieName || cs[0].MaxAge >= 0 || cs[0].Value != "" {
		t.Fatalf("sign-out cookie = %+v", cs)
	}
	if tb.SignedIn(with(alice)) || !tb.SignedIn(with(bob)) {
		t.Fatal("sign-out did not end alice's sign-in alone")
	}
}

func TestBounded(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tb := New(Options{MaxSessions: 3, Now: clk.now})
	var cs []*http.Cookie
	for i := 0; i < 5; i++ {
		cs = append(cs, issue(t, tb, "p", false))
		clk.add(time.Second)
	}
	if n := len(tb.sessions); n != 3 {
		t.Fatalf("%d sign-ins kept, want 3", n)
	}
	if tb.SignedIn(with(cs[0])) || tb.SignedIn(with(cs[1])) || !tb.SignedIn(with(cs[4])) {
		t.Fatal("the oldest sign-ins are not the ones dropped")
	}
}

// TestCSRF: one rule. With a live sign-in the token is bound to it (two sign-ins of one
// principal differ; the same sign-in keeps its token; whom it acts for does not matter);
// without one it is bound to whom the request acts for; another table's secret differs.
func TestCSRF(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tb := New(Options{TTL: time.Hour, Now: clk.now})
	a1, a2 := issue(t, tb, "alice", false), issue(t, tb, "alice", false)
	t1, t2 := tb.CSRF(with(a1), "x"), tb.CSRF(with(a2), "x")
	if t1 == t2 || len(t1) != 64 {
		t.Fatalf("two sign-ins share a CSRF token (%s)", t1)
	}
	if tb.CSRF(with(a1), "y") != t1 || !tb.CheckCSRF(with(a1), "", t1) || tb.CheckCSRF(with(a1), "", t2) || tb.CheckCSRF(with(a1), "", "") {
		t.Fatal("a sign-in's token is not its own, stable one")
	}
	none := tb.CSRF(with(nil), "alice")
	if none == t1 || none == tb.CSRF(with(nil), "bob") || !tb.CheckCSRF(with(nil), "alice", none) {
		t.Fatal("without a sign-in the token is not bound to whom the request acts for")
	}
	if New(Options{}).CSRF(with(nil), "alice") == none {
		t.Fatal("two tables share a CSRF secret")
	}
	// An expired sign-in binds nothing: the request is one without a sign-in.
	clk.add(time.Hour)
	if tb.CheckCSRF(with(a1), "", t1) || tb.CSRF(with(a1), "alice") != none {
		t.Fatal("an expired sign-in's token still passes")
	}
}
