package openai

import (
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/gateway"
)

// Options configure the HTTP surface. Zero fields take defaults.
type Options struct {
	Keys gateway.Keys
	// Models are the configured model names; the first is the default, which "spool" names too.
	Models []string
	// MaxBodyBytes bounds a request body (0: 4 MiB); larger is 413.
	MaxBodyBytes int64
	// CORSOrigins are the origins allowed to call from a browser (none by default).
	CORSOrigins []string
	// KeepAlive is the silence after which a stream gets a ": keepalive" comment (0: 15s).
	KeepAlive time.Duration
	// WriteTimeout bounds one write to a client (0: 30s): a client that stops reading is
	// dropped, its turn goes on.
	WriteTimeout time.Duration
	// StreamBuffer bounds what one stream holds for its client beyond the event in hand
	// (0: DefaultStreamBuffer, 1 MiB): a client that stops reading while its answer streams
	// has its stream cut there (logged once), and its turn goes on and is stored.
	StreamBuffer int
	// Log gets the server's warnings (a cut stream); nil: none.
	Log *slog.Logger
	// Mount adds more handlers (the session browser) on the same mux, by pattern; each does
	// its own authentication (PrincipalFor helps). They pass the same Host and cross-site
	// guards as the API.
	Mount map[string]http.Handler
	// Webhooks are handlers, by pattern, that platforms call (authenticated by the platform's
	// own signature): exempt from the Host guard, so a tunnel or proxy may name the server as
	// it likes.
	Webhooks map[string]http.Handler
	// AllowedHosts are the host names (a name, or name:port) a server without Keys answers
	// besides the loopback ones; every other Host is 403 (DNS rebinding).
	AllowedHosts []string
	// Limiter counts wrong keys per client address (nil: one of its own with the defaults);
	// spool serve shares it with the browser's sign-in.
	Limiter *gateway.KeyLimiter
}

// Server is the HTTP surface of one gateway.
type Server struct {
	g        *gateway.Gateway
	o        Options
	mux      *http.ServeMux
	webhooks *http.ServeMux
	guarded  http.Handler // mux behind the cross-site guard
}

// New returns the server's handler set.
func New(g *gateway.Gateway, o Options) *Server {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.StreamBuffer <= 0 {
		o.StreamBuffer = DefaultStreamBuffer
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if len(o.Models) == 0 {
		o.Models = []string{"spool"}
	}
	if o.Limiter == nil {
		o.Limiter = gateway.NewKeyLimiter(gateway.KeyLimitOptions{})
	}
	s := &Server{g: g, o: o, mux: http.NewServeMux(), webhooks: http.NewServeMux()}
	s.guarded = crossOrigin(o.CORSOrigins).Handler(s.mux)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if g.Draining() {
			writeError(w, newError(http.StatusServiceUnavailable, "server_error", "shutting_down", "the server is shutting down"))
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	metrics := g.Metrics().Handler()
	s.handle("GET /metrics", "metrics", func(w http.ResponseWriter, r *http.Request, _ string) { metrics.ServeHTTP(w, r) })
	s.handle("GET /v1/models", "models", s.models)
	s.handle("GET /v1/models/{id}", "model", s.model)
	s.handle("POST /v1/chat/completions", "chat_completions", s.chat)
	s.handle("POST /v1/responses", "responses", s.responsesCreate)
	s.handle("GET /v1/responses/{id}", "responses_get", s.responsesGet)
	s.handle("DELETE /v1/responses/{id}", "responses_delete", s.responsesDelete)
	s.handle("POST /v1/responses/{id}/cancel", "responses_cancel", s.responsesCancel)
	s.handle("POST /v1/responses/compact", "responses_compact", s.compact)
	s.handle("POST /v1/conversations", "conversations", s.conversationCreate)
	s.handle("GET /v1/conversations/{id}", "conversation_get", s.conversationGet)
	s.handle("POST /v1/conversations/{id}", "conversation_update", s.conversationUpdate)
	s.handle("DELETE /v1/conversations/{id}", "conversation_delete", s.conversationDelete)
	s.handle("POST /v1/conversations/{id}/items", "conversation_items_add", s.itemsAdd)
	s.handle("GET /v1/conversations/{id}/items", "conversation_items", s.itemsList)
	s.handle("GET /v1/conversations/{id}/items/{item_id}", "conversation_item", s.itemGet)
	s.handle("DELETE /v1/conversations/{id}/items/{item_id}", "conversation_item_delete", s.itemDelete)
	s.handle("GET /v1/responses/{id}/input_items", "responses_input_items", s.responsesInputItems)
	for pattern, h := range o.Mount {
		s.mux.Handle(pattern, h)
	}
	for pattern, h := range o.Webhooks {
		s.webhooks.Handle(pattern, h)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, newError(http.StatusNotFound, "invalid_request_error", "unknown_url",
			"unknown route "+r.Method+" "+r.URL.Path).noRetry())
	})
	return s
}

// PrincipalFor authenticates a request as the API does: the Bearer key's principal, or
// gateway.Local when no keys are configured. ok is false for a missing or unknown key.
func PrincipalFor(keys gateway.Keys, r *http.Request) (principal string, ok bool) {
	if !keys.Enabled() {
		return gateway.Local, true
	}
	key, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found {
		return "", false
	}
	return keys.Authenticate(strings.TrimSpace(key))
}

// handle registers an authenticated route.
func (s *Server) handle(pattern, route string, h func(w http.ResponseWriter, r *http.Request, principal string)) {
	s.mux.Handle(pattern, s.authed(route, h))
}

func (s *Server) authed(route string, h func(w http.ResponseWriter, r *http.Request, principal string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			s.g.Metrics().Requests.WithLabelValues(route, strconv.Itoa(sw.code())).Inc()
		}()
		_, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		addr := gateway.ClientAddr(r)
		if bearer && s.o.Keys.Enabled() {
			if wait := s.o.Limiter.Blocked(addr); wait > 0 {
				writeError(sw, newError(http.StatusTooManyRequests, "requests", "too_many_failed_keys",
					"too many wrong API keys from this address: try again after Retry-After").retryAfter(wait).noRetry())
				return
			}
		}
		principal, ok := PrincipalFor(s.o.Keys, r)
		if !ok {
			if bearer {
				s.o.Limiter.Fail(addr)
			}
			writeError(sw, newError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
				"missing or unknown API key (send Authorization: Bearer <key>)").noRetry())
			return
		}
		if r.Method == http.MethodPost && !jsonBody(r) {
			refuseMediaType(sw)
			return
		}
		r.Body = http.MaxBytesReader(sw, r.Body, s.o.MaxBodyBytes)
		h(sw, r, principal)
	})
}

// ServeHTTP serves the API, with CORS for the allowed origins, behind the guards of guard.go.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, pattern := s.webhooks.Handler(r); pattern != "" {
		h.ServeHTTP(w, r)
		return
	}
	if !s.o.Keys.Enabled() && !s.hostAllowed(r.Host) {
		refuseHost(w)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && slices.Contains(s.o.CORSOrigins, origin) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "X-Spool-Session-Id, X-Spool-Branched-From, Retry-After")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, X-Spool-Session-Id, X-Spool-Session-Key, X-Spool-Busy")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	s.guarded.ServeHTTP(w, r)
}

// statusWriter remembers the status for the request counter; it passes Flush through.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) modelList() []modelObject {
	out := []modelObject{{ID: "spool", Object: "model", OwnedBy: "spool"}}
	for _, m := range s.o.Models {
		if m != "spool" {
			out = append(out, modelObject{ID: m, Object: "model", OwnedBy: "spool"})
		}
	}
	return out
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": s.modelList()})
}

func (s *Server) model(w http.ResponseWriter, r *http.Request, _ string) {
	id := r.PathValue("id")
	for _, m := range s.modelList() {
		if m.ID == id {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	writeError(w, modelNotFound(id))
}

func modelNotFound(id string) *apiError {
	return newError(http.StatusNotFound, "invalid_request_error", "model_not_found",
		"the model "+strconvQuote(id)+" does not exist here (GET /v1/models lists them; \"spool\" is the default)").param("model").noRetry()
}

func strconvQuote(s string) string { return strconv.Quote(s) }

// knownModel reports whether a request's model names a configured one.
func (s *Server) knownModel(m string) bool {
	return m == "" || m == "spool" || slices.Contains(s.o.Models, m)
}
