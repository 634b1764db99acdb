package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
	"github.com/spoolhq/spool/web/signin"
)

// Store is the part of store.Backend the browser uses; every store.Backend satisfies it.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	ListSessions(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error)
	Conversation(ctx context.Context, sessionID string, v store.View) ([]store.Message, error)
	ConversationPage(ctx context.Context, sessionID string, q store.PageQuery) ([]store.Message, error)
	Children(ctx context.Context, id string) ([]store.Session, error)
	Root(ctx context.Context, id string) (string, error)
	Chain(ctx context.Context, id string) ([]store.Session, error)
	Requests(ctx context.Context, id string, limit int) ([]store.RequestRecord, error)
	SystemPrompt(ctx context.Context, id string) (string, error)
	Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error)
	HeldLeases(ctx context.Context) ([]store.HeldLease, error)
	UsageByDay(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error)

	// The writes, each the one the CLI makes for the same action.
	SetTitle(ctx context.Context, id, title string, opts ...store.WriteOption) error
	DeleteSession(ctx context.Context, id string) error
	Branch(ctx context.Context, parentID string, child store.NewSession) (store.Session, error)
	CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error)
}

var _ Store = store.Backend(nil)

// Principal is whom a request acts for.
type Principal struct {
	// UserID is the user whose sessions the request sees when Scoped (sessions.user_id).
	UserID string
	// Scoped limits the request to UserID's sessions; false sees every session (spool ui).
	Scoped bool
}

// Options configure a Server.
type Options struct {
	// Prefix is the path the pages live under; default "/ui". The handler expects full paths.
	Prefix string
	// Principal names whom a request acts for; an error answers 401 with its text. Nil: every
	// request sees every session.
	Principal func(r *http.Request) (Principal, error)
	// LoginToken, when set, is a one-time token: the first request carrying ?token=LoginToken
	// is signed in (a sign-in cookie of SignIns) and every later request needs a live sign-in.
	// spool ui prints the URL with it.
	LoginToken string
	// SignIns is the table of signed-in browsers whose cookie binds the pages' CSRF tokens (and,
	// with LoginToken, admits requests). spool serve passes the one its key login
	// (gateway/uilogin) issues into, so the browser and the sign-out share one cookie and one
	// CSRF rule. Nil: a table of the Server's own, whose sign-ins last OwnSignInTTL.
	SignIns *signin.Table
	// SignOut, when set, is the path of a sign-out page (spool serve's /ui/logout); every page's
	// header links to it.
	SignOut string
	// PollInterval is how often a live view asks the store for new rows; default 500 ms.
	PollInterval time.Duration
	// Now is the clock for relative times; default time.Now.
	Now func() time.Time
	// Logger receives handler errors; default discards.
	Logger *slog.Logger
}

//go:embed assets
var assetFS embed.FS

// Server serves the browser's pages. Close ends its live streams.
type Server struct {
	st      Store
	opts    Options
	mux     *http.ServeMux
	signins *signin.Table

	mu        sync.Mutex
	tokenUsed bool

	done      chan struct{}
	closeOnce sync.Once
}

// New builds the browser over st.
func New(st Store, opts Options) *Server {
	if opts.Prefix == "" {
		opts.Prefix = "/ui"
	}
	opts.Prefix = "/" + strings.Trim(opts.Prefix, "/")
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{st: st, opts: opts, signins: opts.SignIns, done: make(chan struct{})}
	if s.signins == nil {
		s.signins = signin.New(signin.Options{Prefix: opts.Prefix, TTL: OwnSignInTTL})
	}
	p := opts.Prefix
	m := http.NewServeMux()
	assets, _ := fs.Sub(assetFS, "assets")
	m.Handle("GET "+p+"/assets/", http.StripPrefix(p+"/assets/", assetHandler(http.FileServerFS(assets))))
	m.HandleFunc("GET "+p+"/{$}", s.page(s.sessionsPage))
	m.HandleFunc("GET "+p+"/search", s.page(s.searchPage))
	m.HandleFunc("GET "+p+"/usage", s.page(s.usagePage))
	m.HandleFunc("GET "+p+"/sessions/{id}", s.page(s.sessionPage))
	m.HandleFunc("GET "+p+"/sessions/{id}/prompt", s.page(s.promptPage))
	m.HandleFunc("GET "+p+"/sessions/{id}/delete", s.page(s.deleteConfirmPage))
	m.HandleFunc("GET "+p+"/sessions/{id}/events", s.page(s.events))
	m.HandleFunc("POST "+p+"/sessions/{id}/rename", s.action(s.rename))
	m.HandleFunc("POST "+p+"/sessions/{id}/delete", s.action(s.deleteSession))
	m.HandleFunc("POST "+p+"/sessions/{id}/export", s.action(s.export))
	m.HandleFunc("POST "+p+"/sessions/{id}/branch", s.action(s.branch))
	m.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no such page")
	})
	if p != "" {
		m.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, p+"/", http.StatusMovedPermanently)
		})
	}
	s.mux = m
	return s
}

// Close ends every live stream; pages keep working.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	return nil
}

// contentSecurityPolicy allows only this origin's script, style and images; no inline script or
// style, no plugins, no framing, forms posting only here.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with a
	// form POST, which the origin check must refuse.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if s.opts.LoginToken != "" && !strings.HasPrefix(r.URL.Path, s.opts.Prefix+"/assets/") {
		if !s.login(w, r) {
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// OwnSignInTTL is how long a sign-in of a Server's own table (Options.SignIns nil) lasts: the
// one-time link of spool ui works once, so its sign-in lasts as long as a browser plausibly
// stays open on it; a restart of spool ui prints a new link.
const OwnSignInTTL = 30 * 24 * time.Hour

// login enforces the one-time token: it exchanges the token for a sign-in (redirecting to the
// same URL without it) or checks the sign-in. It reports whether the request may go on.
func (s *Server) login(w http.ResponseWriter, r *http.Request) bool {
	if s.signins.SignedIn(r) {
		return true
	}
	tok := r.URL.Query().Get("token")
	if tok != "" && r.Method == http.MethodGet {
		s.mu.Lock()
		ok := !s.tokenUsed && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.LoginToken)) == 1
		if ok {
			s.tokenUsed = true
		}
		s.mu.Unlock()
		if ok {
			s.signins.Issue(w, r, "") // spool ui's sign-in sees every session
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return false
		}
	}
	s.fail(w, r, http.StatusUnauthorized, "not signed in: open the sign-in link that `spool ui` (or `spool serve` without keys) printed (its token works once)")
	return false
}

type ctxKey struct{}

// viewer is the request's principal and its CSRF token.
type viewer struct {
	Principal
	csrf string
}

func (s *Server) viewerOf(r *http.Request) (viewer, error) {
	p := Principal{}
	if s.opts.Principal != nil {
		var err error
		if p, err = s.opts.Principal(r); err != nil {
			return viewer{}, err
		}
	}
	// One CSRF rule for every form, sign-out included (package web/signin).
	return viewer{Principal: p, csrf: s.signins.CSRF(r, fmt.Sprintf("%t\x00%s", p.Scoped, p.UserID))}, nil
}

// handlerFunc is a page or action handler; an error it returns becomes the error page.
type handlerFunc func(w http.ResponseWriter, r *http.Request, v viewer) error

// httpError is an error with the status it answers.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func errStatus(status int, format string, args ...any) error {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

var errNotFound = &httpError{status: http.StatusNotFound, msg: "session not found"}

func (s *Server) page(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := s.viewerOf(r)
		if err != nil {
			s.fail(w, r, http.StatusUnauthorized, err.Error())
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		s.finish(w, r, h(w, r, v))
	}
}

// action wraps a state-changing handler: same origin and a valid CSRF token, or 403.
func (s *Server) action(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := s.viewerOf(r)
		if err != nil {
			s.fail(w, r, http.StatusUnauthorized, err.Error())
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, http.StatusBadRequest, "bad form: "+err.Error())
			return
		}
		if !sameOrigin(r) {
			s.fail(w, r, http.StatusForbidden, "cross-site request refused")
			return
		}
		tok := r.PostFormValue("csrf")
		if tok == "" {
			tok = r.Header.Get("X-CSRF-Token")
		}
		if v.csrf == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(v.csrf)) != 1 {
			s.fail(w, r, http.StatusForbidden, "missing or stale CSRF token: reload the page and try again")
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		s.finish(w, r, h(w, r, v))
	}
}

// sameOrigin refuses requests a browser marks as cross-site, and any whose Origin is not this host.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	return true
}

func (s *Server) finish(w http.ResponseWriter, r *http.Request, err error) {
	if err == nil {
		return
	}
	var he *httpError
	switch {
	case errors.As(err, &he):
		s.fail(w, r, he.status, he.msg)
	case errors.Is(err, store.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, "session not found")
	case errors.Is(err, context.Canceled):
	default:
		s.opts.Logger.Error("web: handler failed", "path", r.URL.Path, "err", err)
		s.fail(w, r, http.StatusInternalServerError, "internal error: "+err.Error())
	}
}

type errorData struct {
	baseData
	Status  int
	Message string
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	d := errorData{baseData: s.base(r, viewer{}, http.StatusText(status)), Status: status, Message: msg}
	var m markup.Writer
	s.errorPage(&m, d)
	if _, err := w.Write([]byte(m.String())); err != nil {
		s.opts.Logger.Debug("web: write error page", "err", err)
	}
}

// visible loads a session the viewer may see; any other answers errNotFound.
func (s *Server) visible(ctx context.Context, v viewer, id string) (store.Session, error) {
	sess, err := s.st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, errNotFound
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("load session %s: %w", id, err)
	}
	if !v.sees(sess) {
		return store.Session{}, errNotFound
	}
	return sess, nil
}

func (v viewer) sees(s store.Session) bool { return !v.Scoped || s.UserID == v.UserID }

func (v viewer) userFilter() string {
	if v.Scoped {
		return v.UserID
	}
	return ""
}

func assetHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return b
}

// NewLoginToken returns a fresh random token for Options.LoginToken.
func NewLoginToken() string { return hex.EncodeToString(randomBytes(16)) }
