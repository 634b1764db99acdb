package uilogin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/web"
	"github.com/spoolhq/spool/web/signin"
)

// TestOneCookieOneCSRF mounts the sign-in in front of the real session browser over one
// sign-in table, as spool serve does: the key login's cookie admits the pages, the token a
// page's forms carry is the sign-out's too (one rule, bound to the sign-in), and another
// sign-in's token is refused by both.
func TestOneCookieOneCSRF(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateSession(ctx, store.NewSession{ID: "s-alice", UserID: "alice", Title: "before"}); err != nil {
		t.Fatal(err)
	}
	table := signin.New(signin.Options{Prefix: "/ui"})
	l := New(mustKeys(t), Options{Prefix: "/ui", SignIns: table})
	ui := web.New(st, web.Options{Prefix: "/ui", SignOut: "/ui/logout", SignIns: table, Principal: func(r *http.Request) (web.Principal, error) {
		p, ok := l.Principal(r)
		if !ok {
			return web.Principal{}, errors.New("not signed in")
		}
		return web.Principal{UserID: p, Scoped: true}, nil
	}})
	t.Cleanup(func() { ui.Close() })
	m := http.NewServeMux()
	m.Handle("/ui/", l.Guard(ui))
	m.Handle("/ui/login", l.Handler())
	m.Handle("/ui/logout", l.Handler())
	s := httptest.NewServer(m)
	t.Cleanup(s.Close)
	c := client{t, s.URL}

	tokenOn := func(path string, ck *http.Cookie) string {
		t.Helper()
		res, body := c.do("GET", path, "", nil, ck)
		mm := csrfField.FindStringSubmatch(body)
		if res.StatusCode != 200 || mm == nil {
			t.Fatalf("GET %s: %d, no CSRF field", path, res.StatusCode)
		}
		return mm[1]
	}
	alice, alice2 := signIn(t, c, "sk-alice-secret"), signIn(t, c, "sk-alice-secret")
	page, other := tokenOn("/ui/sessions/s-alice", alice), tokenOn("/ui/sessions/s-alice", alice2)
	if page == other {
		t.Fatal("two sign-ins of one principal share a CSRF token")
	}
	if out := tokenOn("/ui/logout", alice); out != page {
		t.Fatalf("the sign-out form's token %s is not the pages' %s", out, page)
	}
	rename := func(tok string) int {
		res, _ := c.do("POST", "/ui/sessions/s-alice/rename", s.URL, url.Values{"csrf": {tok}, "title": {"after " + tok[:4]}}, alice)
		return res.StatusCode
	}
	if code := rename(other); code != http.StatusForbidden {
		t.Fatalf("rename with another sign-in's token: %d, want 403", code)
	}
	if code := rename(page); code != http.StatusSeeOther {
		t.Fatalf("rename with the page's token: %d, want 303", code)
	}
	if sess, _ := st.GetSession(ctx, "s-alice"); sess.Title != "after "+page[:4] {
		t.Fatalf("title = %q", sess.Title)
	}
	if res, _ := c.do("POST", "/ui/logout", s.URL, url.Values{"csrf": {other}}, alice); res.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-out with another sign-in's token: %d, want 403", res.StatusCode)
	}
	if res, _ := c.do("POST", "/ui/logout", s.URL, url.Values{"csrf": {page}}, alice); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out with the page's token: %d, want 303", res.StatusCode)
	}
	if res, _ := c.do("GET", "/ui/sessions/s-alice", "", nil, alice); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a page after sign-out: %d, want the redirect to the login page", res.StatusCode)
	}
	if res, _ := c.do("GET", "/ui/sessions/s-alice", "", nil, alice2); res.StatusCode != 200 {
		t.Fatalf("the other sign-in after alice's sign-out: %d", res.StatusCode)
	}
}
