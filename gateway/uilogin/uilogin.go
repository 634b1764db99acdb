package uilogin

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/web/markup"
	"github.com/spoolhq/spool/web/signin"
)

// CookieName is the sign-in cookie's name (package web/signin's, shared with spool ui).
const CookieName = signin.CookieName

// Defaults of Options.
const (
	DefaultTTL         = signin.DefaultTTL
	DefaultMaxSessions = signin.DefaultMaxSessions
	DefaultAttempts    = gateway.DefaultKeyAttempts
	DefaultWindow      = gateway.DefaultKeyWindow
	DefaultMaxTracked  = gateway.DefaultKeyMaxTracked
)

// Options configure the sign-in. Zero fields take defaults.
type Options struct {
	// Prefix is the session browser's path ("/ui").
	Prefix string
	// SignIns is the table sign-ins are issued into; spool serve passes the session browser's
	// (web.Options.SignIns), so both check one cookie and one CSRF rule. Nil: a table of its
	// own, made with Prefix, TTL, MaxSessions and Now.
	SignIns *signin.Table
	// TTL is how long a sign-in lasts (only for a table of its own).
	TTL time.Duration
	// MaxSessions bounds the signed-in browsers kept (only for a table of its own).
	MaxSessions int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Limiter counts failed sign-ins (a wrong key on the login form, or a wrong Bearer key on a
	// guarded request) per client address; spool serve passes the one its API counts wrong
	// keys in, so both share one budget. Nil: a limiter of its own, made with Attempts,
	// Window, MaxTracked and Now.
	Limiter *gateway.KeyLimiter
	// Attempts is how many failed sign-ins one client address may make in a Window before
	// every sign-in from it is refused with 429 and Retry-After until the window ends (default
	// 10 in 5 min; only for a limiter of its own).
	Attempts int
	Window   time.Duration
	// MaxTracked bounds the addresses counted at once (default 10,000; only for a limiter of
	// its own).
	MaxTracked int
}

// Logins signs browsers in with an API key. Safe for concurrent use.
type Logins struct {
	keys    gateway.Keys
	o       Options
	signins *signin.Table
	limit   *gateway.KeyLimiter
}

// New returns the sign-in for keys.
func New(keys gateway.Keys, o Options) *Logins {
	if o.Prefix == "" {
		o.Prefix = "/ui"
	}
	o.Prefix = "/" + strings.Trim(o.Prefix, "/")
	if o.Now == nil {
		o.Now = time.Now
	}
	lim := o.Limiter
	if lim == nil {
		lim = gateway.NewKeyLimiter(gateway.KeyLimitOptions{Attempts: o.Attempts, Window: o.Window, MaxTracked: o.MaxTracked, Now: o.Now})
	}
	t := o.SignIns
	if t == nil {
		t = signin.New(signin.Options{Prefix: o.Prefix, TTL: o.TTL, MaxSessions: o.MaxSessions, Now: o.Now})
	}
	return &Logins{keys: keys, o: o, signins: t, limit: lim}
}

// Principal is whom a request acts for: its Bearer key's principal, else its sign-in's;
// gateway.Local without keys.
func (l *Logins) Principal(r *http.Request) (string, bool) {
	if !l.keys.Enabled() {
		return gateway.Local, true
	}
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return l.keys.Authenticate(strings.TrimSpace(key))
	}
	p, ok := l.signins.Principal(r)
	if !ok || p == "" {
		return "", false // "" is spool ui's sign-in (everyone), never a key's
	}
	return p, true
}

// Guard lets authenticated requests through to next; an unauthenticated page request is sent
// to the login page, anything else is 401.
func (l *Logins) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		addr := gateway.ClientAddr(r)
		if bearer && l.keys.Enabled() {
			// A Bearer key is a sign-in attempt like the login form's, and limited alike.
			if wait := l.limit.Blocked(addr); wait > 0 {
				refuse(w, l.o.Prefix, wait)
				return
			}
		}
		_, ok := l.Principal(r)
		if ok {
			next.ServeHTTP(w, r)
			return
		}
		if bearer && l.keys.Enabled() {
			l.limit.Fail(addr)
		}
		if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, l.o.Prefix+"/assets/") && !strings.HasSuffix(r.URL.Path, "/events") {
			http.Redirect(w, r, l.o.Prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		page(w, http.StatusUnauthorized, pageData{Prefix: l.o.Prefix, Title: "Not signed in", Error: "Sign in with your API key first."})
	})
}

// Handler serves <prefix>/login (GET: the form; POST: sign in) and <prefix>/logout (GET: a
// confirmation form carrying a CSRF token; POST: sign out, refused with 403 when the signed-in
// session's token is missing or wrong).
func (l *Logins) Handler() http.Handler {
	m := http.NewServeMux()
	p := l.o.Prefix
	m.HandleFunc("GET "+p+"/login", func(w http.ResponseWriter, r *http.Request) {
		if !l.keys.Enabled() {
			http.Redirect(w, r, p+"/", http.StatusSeeOther)
			return
		}
		page(w, http.StatusOK, pageData{Prefix: p, Title: "Sign in", Login: true, Next: l.next(r.URL.Query().Get("next"))})
	})
	m.HandleFunc("POST "+p+"/login", func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			page(w, http.StatusForbidden, pageData{Prefix: p, Title: "Refused", Error: "Sign-in is accepted only from this site's own page."})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if err := r.ParseForm(); err != nil {
			page(w, http.StatusBadRequest, pageData{Prefix: p, Title: "Sign in", Login: true, Error: "The form could not be read."})
			return
		}
		next := l.next(r.PostForm.Get("next"))
		addr := gateway.ClientAddr(r)
		if wait := l.limit.Blocked(addr); wait > 0 {
			refuse(w, p, wait)
			return
		}
		principal, ok := l.keys.Authenticate(strings.TrimSpace(r.PostForm.Get("key")))
		if !ok || !l.keys.Enabled() {
			l.limit.Fail(addr)
			page(w, http.StatusUnauthorized, pageData{Prefix: p, Title: "Sign in", Login: true, Next: next, Error: "That API key is not known here."})
			return
		}
		l.signins.Issue(w, r, principal)
		http.Redirect(w, r, next, http.StatusSeeOther)
	})
	m.HandleFunc("GET "+p+"/logout", func(w http.ResponseWriter, r *http.Request) {
		if !l.signins.SignedIn(r) {
			http.Redirect(w, r, p+"/login", http.StatusSeeOther)
			return
		}
		page(w, http.StatusOK, pageData{Prefix: p, Title: "Sign out", Logout: true, CSRF: l.signins.CSRF(r, "")})
	})
	m.HandleFunc("POST "+p+"/logout", func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			page(w, http.StatusForbidden, pageData{Prefix: p, Title: "Refused", Error: "Sign-out is accepted only from this site's own page."})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if err := r.ParseForm(); err != nil {
			page(w, http.StatusBadRequest, pageData{Prefix: p, Title: "Sign out", Error: "The form could not be read."})
			return
		}
		// The sign-out form carries the one CSRF token of the sign-in (every page's forms carry
		// the same one).
		if l.signins.SignedIn(r) && !l.signins.CheckCSRF(r, "", r.PostForm.Get("csrf")) {
			page(w, http.StatusForbidden, pageData{Prefix: p, Title: "Refused", Error: "Missing or stale sign-out token: open " + p + "/logout and try again."})
			return
		}
		l.signins.SignOut(w, r)
		http.Redirect(w, r, p+"/login", http.StatusSeeOther)
	})
	return m
}

// next is where a sign-in goes on to: a path under the prefix, else the browser's start page.
func (l *Logins) next(s string) string {
	u, err := url.Parse(s)
	if err != nil || s == "" || u.Scheme != "" || u.Host != "" || strings.HasPrefix(s, "//") || strings.Contains(s, "\\") ||
		!strings.HasPrefix(u.Path, l.o.Prefix+"/") || strings.HasPrefix(u.Path, l.o.Prefix+"/login") || strings.HasPrefix(u.Path, l.o.Prefix+"/logout") {
		return l.o.Prefix + "/"
	}
	return u.RequestURI()
}

// sameOrigin reports whether a POST comes from this site's own pages: its Origin names this
// host, or (no Origin) the browser says the request is same-origin or user-initiated.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && u.Host == r.Host && (u.Scheme == "http" || u.Scheme == "https")
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

type pageData struct {
	Prefix, Title, Error, Next, CSRF string
	Login, Logout                    bool
}

// render writes the sign-in page of d through the browser's escaping writer.
func render(d pageData) string {
	var m markup.Writer
	m.F(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s · spool</title><link rel="stylesheet" href="%s/assets/style.css"></head>
<body><main class="login">
<h1>%s</h1>
`, d.Title, d.Prefix, d.Title)
	if d.Error != "" {
		m.F(`<p class="error" role="alert">%s</p>`, d.Error)
	}
	m.Raw("\n")
	if d.Login {
		m.F(`<form method="post" action="%s/login">
<label for="key">API key</label>
<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="%s">
<button type="submit">Sign in</button>
</form>
<p>The key is one of <code>serve.keys</code>; the browser then sees that key's sessions only.</p>`, d.Prefix, d.Next)
	}
	m.Raw("\n")
	if d.Logout {
		m.F(`<form method="post" action="%s/logout"><input type="hidden" name="csrf" value="%s"><button type="submit">Sign out</button></form>
<p><a href="%s/">Back to the sessions</a></p>`, d.Prefix, d.CSRF, d.Prefix)
	}
	m.Raw("\n</main></body></html>\n")
	return m.String()
}

func page(w http.ResponseWriter, status int, d pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, render(d))
}
