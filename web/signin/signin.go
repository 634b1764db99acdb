package signin

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"
)

// CookieName is the sign-in cookie's name.
const CookieName = "spool_session"

// Defaults of Options.
const (
	DefaultTTL         = 12 * time.Hour
	DefaultMaxSessions = 10000
)

// Options configure a Table. Zero fields take defaults.
type Options struct {
	// Prefix is the session browser's path ("/ui"); the cookie's Path is Prefix + "/".
	Prefix string
	// TTL is how long a sign-in lasts.
	TTL time.Duration
	// MaxSessions bounds the sign-ins kept.
	MaxSessions int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Table is the set of signed-in browsers. Safe for concurrent use.
type Table struct {
	o      Options
	secret [32]byte // keys the CSRF tokens

	mu       sync.Mutex
	sessions map[[32]byte]entry
}

type entry struct {
	principal string
	expires   time.Time
}

// New returns an empty table.
func New(o Options) *Table {
	if o.Prefix == "" {
		o.Prefix = "/ui"
	}
	o.Prefix = "/" + strings.Trim(o.Prefix, "/")
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	t := &Table{o: o, sessions: map[[32]byte]entry{}}
	if _, err := rand.Read(t.secret[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return t
}

// TTL is how long a sign-in of this table lasts.
func (t *Table) TTL() time.Duration { return t.o.TTL }

// Issue signs the browser behind r in as principal: a new entry and its cookie on w.
func (t *Table) Issue(w http.ResponseWriter, r *http.Request, principal string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b[:])
	now := t.o.Now()
	exp := now.Add(t.o.TTL)
	t.mu.Lock()
	if len(t.sessions) >= t.o.MaxSessions {
		t.evict(now)
	}
	t.sessions[sum] = entry{principal: principal, expires: exp}
	t.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: hex.EncodeToString(b[:]), Path: t.o.Prefix + "/", Expires: exp,
		MaxAge: int(t.o.TTL / time.Second), HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// evict drops the expired entries and, when the table is still full, the one closest to
// expiry. Called with t.mu held.
func (t *Table) evict(now time.Time) {
	var oldest [32]byte
	first := true
	for k, e := range t.sessions {
		if !now.Before(e.expires) {
			delete(t.sessions, k)
			continue
		}
		if first || e.expires.Before(t.sessions[oldest].expires) {
			oldest, first = k, false
		}
	}
	if len(t.sessions) >= t.o.MaxSessions && !first {
		delete(t.sessions, oldest)
	}
}

// token returns the request's cookie value and the key of its live entry.
func (t *Table) token(r *http.Request) (string, [32]byte, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return "", [32]byte{}, false
	}
	b, err := hex.DecodeString(c.Value)
	if err != nil || len(b) != 32 {
		return "", [32]byte{}, false
	}
	return c.Value, sha256.Sum256(b), true
}

// Principal is whom the request's sign-in cookie signs in, when it is live.
func (t *Table) Principal(r *http.Request) (string, bool) {
	_, key, ok := t.token(r)
	if !ok {
		return "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.sessions[key]
	if !ok {
		return "", false
	}
	if !t.o.Now().Before(e.expires) {
		delete(t.sessions, key)
		return "", false
	}
	return e.principal, true
}

// SignedIn reports whether the request carries a live sign-in.
func (t *Table) SignedIn(r *http.Request) bool {
	_, ok := t.Principal(r)
	return ok
}

// SignOut forgets the request's sign-in (if any) and clears its cookie on w.
func (t *Table) SignOut(w http.ResponseWriter, r *http.Request) {
	if _, key, ok := t.token(r); ok {
		t.mu.Lock()
		delete(t.sessions, key)
		t.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: t.o.Prefix + "/", MaxAge: -1, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// CSRF is the token the request's forms carry: bound to its live sign-in, else to actsFor
// (whom a request without one acts for).
func (t *Table) CSRF(r *http.Request, actsFor string) string {
	mac := hmac.New(sha256.New, t.secret[:])
	if tok, _, ok := t.token(r); ok && t.SignedIn(r) {
		mac.Write([]byte("signin\x00" + tok))
	} else {
		mac.Write([]byte("actsfor\x00" + actsFor))
	}
	return hex.EncodeToString(mac.Sum(nil))
}

// CheckCSRF reports whether got is the request's CSRF token (constant time).
func (t *Table) CheckCSRF(r *http.Request, actsFor, got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(t.CSRF(r, actsFor))) == 1
}
