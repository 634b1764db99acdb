package fake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxBody bounds a request body; real providers refuse far smaller prompts than this.
const maxBody = 64 << 20

// Handler serves both wire formats and a small control surface:
//
//	POST /v1/chat/completions   OpenAI Chat Completions (also /chat/completions)
//	POST /v1/messages           Anthropic Messages (also /messages)
//	GET  /v1/models             a one-model list, for clients that probe it
//	POST /fake/fail?fault=KIND&n=N   same as FailNext (KIND as ParseFault reads it)
//	GET  /fake/stats            Stats as JSON (add ?wire=openai|anthropic for one wire)
//	GET  /fake/barrier?name=B&n=N   answers 204 once N calls have arrived at WAIT barrier B
func (m *Model) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", m.serveOpenAI)
	mux.HandleFunc("POST /chat/completions", m.serveOpenAI)
	mux.HandleFunc("POST /v1/responses", m.serveResponses)
	mux.HandleFunc("POST /responses", m.serveResponses)
	mux.HandleFunc("POST /v1/responses/compact", m.serveCompact)
	mux.HandleFunc("POST /responses/compact", m.serveCompact)
	mux.HandleFunc("POST /v1/messages", m.serveAnthropic)
	mux.HandleFunc("POST /messages", m.serveAnthropic)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"fake","object":"model","created":0,"owned_by":"spool"}]}`))
	})
	mux.HandleFunc("POST /fake/fail", func(w http.ResponseWriter, r *http.Request) {
		f, err := ParseFault(r.URL.Query().Get("fault"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 1
		if s := r.URL.Query().Get("n"); s != "" {
			if err := json.Unmarshal([]byte(s), &n); err != nil || n < 1 {
				http.Error(w, "n must be a positive integer", http.StatusBadRequest)
				return
			}
		}
		m.FailNext(n, f)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /fake/barrier", func(w http.ResponseWriter, r *http.Request) {
		n := 1
		if s := r.URL.Query().Get("n"); s != "" {
			if err := json.Unmarshal([]byte(s), &n); err != nil || n < 1 {
				http.Error(w, "n must be a positive integer", http.StatusBadRequest)
				return
			}
		}
		if err := m.AwaitBarrier(r.Context(), r.URL.Query().Get("name"), n); err != nil {
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /fake/stats", func(w http.ResponseWriter, r *http.Request) {
		s := m.Stats()
		if wire := r.URL.Query().Get("wire"); wire != "" {
			s = m.WireStats(wire)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s)
	})
	return mux
}

func readBody(r *http.Request) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r.Body, maxBody))
}

func writeWireError(w http.ResponseWriter, e wireError) {
	w.Header().Set("Content-Type", "application/json")
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	w.WriteHeader(e.status)
	w.Write(e.body)
}

// cutResponse flushes what was written and drops the connection without ending the response,
// which is what a client sees when a provider's stream dies.
func cutResponse(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}

// streamWriter writes SSE frames, flushing each and pausing between them.
type streamWriter struct {
	w     http.ResponseWriter
	r     *http.Request
	delay time.Duration
	err   error
}

func (s *streamWriter) frame(b []byte) {
	if s.err != nil {
		return
	}
	if err := sleep(s.r.Context(), s.delay); err != nil {
		s.err = err
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func indentJSON(v any, indent string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	enc.Encode(v)
	return b.Bytes() // Encode ends with the newline OpenAI sends too
}

func compactJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// textOf reads content that may be a JSON string, null, or an array of {type,text} parts.
func textOf(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			b.WriteString(p.Text)
		default:
			b.WriteString("[" + p.Type + "]")
		}
	}
	return b.String(), true
}

// argPieces cuts tool-call arguments into the few fragments a real stream delivers them in.
func argPieces(args string) []string {
	if len(args) <= 4 {
		return []string{args}
	}
	a, b := len(args)/3, 2*len(args)/3
	return []string{args[:a], args[a:b], args[b:]}
}

// obfuscation imitates OpenAI's per-chunk padding field with a deterministic value.
func obfuscation(seed string, i int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	h := shortHash(seed+string(rune('a'+i%26))+string(rune(i)), 16)
	n := 1 + int(h[0])%14
	out := make([]byte, n)
	for k := range n {
		out[k] = letters[int(h[k])%len(letters)]
	}
	return string(out)
}

// keyFingerprint keeps API keys out of cache keys in the clear.
func keyFingerprint(key string) string { return shortHash(key, 16) }
