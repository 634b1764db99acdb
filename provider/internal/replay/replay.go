package replay

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Response is one canned HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// ChunkSize > 0 writes the body in pieces of that many bytes, flushing each, so SSE events
	// and even JSON tokens straddle reads the way they do on a real connection.
	ChunkSize int
	// CutAfter > 0 hijacks the connection and closes it after that many body bytes, without the
	// terminating chunk: a connection dropped mid-stream.
	CutAfter int
}

// Request is what the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Load reads testdata/<name> as a body, and testdata/<stem>.headers.txt when it exists, where
// stem is name without its last extension. Hop-by-hop and length headers are dropped; an error
// fixture recorded without headers gets Content-Type application/json.
func Load(t testing.TB, name string) Response {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	r := Response{Status: http.StatusOK, Header: http.Header{}, Body: body}
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	raw, err := os.ReadFile(filepath.Join("testdata", stem+".headers.txt"))
	if err == nil {
		r.Status, r.Header = parseHeaders(t, raw)
	} else if !os.IsNotExist(err) {
		t.Fatalf("fixture headers: %v", err)
	}
	if r.Header.Get("Content-Type") == "" {
		if strings.HasSuffix(name, ".sse") {
			r.Header.Set("Content-Type", "text/event-stream; charset=utf-8")
		} else {
			r.Header.Set("Content-Type", "application/json")
		}
	}
	return r
}

func parseHeaders(t testing.TB, raw []byte) (int, http.Header) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(raw))
	if !sc.Scan() {
		t.Fatal("fixture headers: empty file")
	}
	fields := strings.Fields(sc.Text()) // "HTTP/1.1 529" or "HTTP/1.1 200 OK"
	if len(fields) < 2 {
		t.Fatalf("fixture headers: bad status line %q", sc.Text())
	}
	status, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("fixture headers: bad status %q", fields[1])
	}
	h := http.Header{}
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "transfer-encoding", "content-length", "connection":
			continue
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return status, h
}

// Server answers each request with the next response of a script (the last one repeats).
type Server struct {
	*httptest.Server
	mu        sync.Mutex
	responses []Response
	requests  []Request
}

// Serve starts a server for the script; it is closed when the test ends.
func Serve(t testing.TB, script ...Response) *Server {
	t.Helper()
	s := &Server{responses: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	resp := s.responses[min(n, len(s.responses)-1)]
	s.mu.Unlock()

	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if resp.CutAfter > 0 {
		cut(w, resp)
		return
	}
	w.WriteHeader(resp.Status)
	if resp.ChunkSize <= 0 {
		_, _ = w.Write(resp.Body)
		return
	}
	f, _ := w.(http.Flusher)
	for b := resp.Body; len(b) > 0; {
		n := min(resp.ChunkSize, len(b))
		_, _ = w.Write(b[:n])
		if f != nil {
			f.Flush()
		}
		b = b[n:]
	}
}

// cut writes a chunked response by hand and drops the connection part-way.
func cut(w http.ResponseWriter, resp Response) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 " + strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status) + "\r\n")
	_ = resp.Header.Write(buf)
	_, _ = buf.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	part := resp.Body[:min(resp.CutAfter, len(resp.Body))]
	_, _ = buf.WriteString(strconv.FormatInt(int64(len(part)), 16) + "\r\n")
	_, _ = buf.Write(part)
	_, _ = buf.WriteString("\r\n")
	_ = buf.Flush()
}
