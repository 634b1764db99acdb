package openai

import (
	"mime"
	"net"
	"net/http"
	"strings"
)

// The guards every request passes before its route (Server.ServeHTTP, Server.authed):
//
//   - Host: a server without keys answers only requests addressed to a loopback name
//     (localhost, *.localhost, 127.0.0.0/8, [::1], with or without a port) or to a name of
//     Options.AllowedHosts; any other Host is 403. A web page that rebinds its own DNS name to
//     127.0.0.1 reaches the port but names itself in Host, so it reads and changes nothing.
//     Platform webhooks (Options.Webhooks) are exempt: their platform's signature is their key.
//   - Cross-site: a state-changing request (not GET, HEAD or OPTIONS) that a browser sends from
//     another site is 403 (net/http's CrossOriginProtection: Sec-Fetch-Site, else Origin against
//     Host), unless its Origin is one of Options.CORSOrigins. Clients that send neither header
//     (the SDKs, curl) pass.
//   - JSON: a POST to /v1 with a body must say Content-Type: application/json, else 415; a
//     browser form or a no-cors fetch cannot send that cross-site without a CORS preflight.
//   - Keys: a client address that presented Options.Limiter's number of wrong keys in its
//     window is 429 with Retry-After until the window ends, a right key included.

// hostAllowed reports whether a server without keys answers a request addressed to host
// (r.Host).
func (s *Server) hostAllowed(host string) bool {
	full := strings.TrimSuffix(strings.ToLower(host), ".")
	name := full
	if h, _, err := net.SplitHostPort(full); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.o.AllowedHosts {
		if a = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(a)), "."); a != "" && (a == name || a == full) {
			return true
		}
	}
	return false
}

// refuseHost answers a request to a Host the server does not serve.
func refuseHost(w http.ResponseWriter) {
	writeError(w, newError(http.StatusForbidden, "invalid_request_error", "host_not_allowed",
		"this server answers only loopback host names (localhost, 127.0.0.1, [::1]) and serve.allowed_hosts: "+
			"without serve.keys it serves this machine's own clients").noRetry())
}

// crossOrigin is net/http's cross-origin protection with the CORS origins trusted and OpenAI's
// error shape for a refusal.
func crossOrigin(origins []string) *http.CrossOriginProtection {
	c := http.NewCrossOriginProtection()
	for _, o := range origins {
		_ = c.AddTrustedOrigin(o) // a malformed origin never matches a browser's Origin; serve.cors_origins is checked at start
	}
	c.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, newError(http.StatusForbidden, "invalid_request_error", "cross_site_request",
			"cross-site request refused: a browser may change state here only from this server's own pages or an origin of serve.cors_origins").noRetry())
	}))
	return c
}

// CheckOrigin reports whether o is an origin serve.cors_origins may list (scheme://host[:port]).
func CheckOrigin(o string) error {
	return http.NewCrossOriginProtection().AddTrustedOrigin(o)
}

// jsonBody reports whether a POST's body is declared JSON (or there is none).
func jsonBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return r.ContentLength == 0
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// refuseMediaType answers a POST whose body is not JSON.
func refuseMediaType(w http.ResponseWriter) {
	writeError(w, newError(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
		"the request body must be JSON: send Content-Type: application/json").noRetry())
}
