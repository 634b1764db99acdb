package fake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reply is one HTTP exchange as the client saw it.
type reply struct {
	status  int
	header  http.Header
	body    []byte
	readErr error // error while reading the body (a cut connection)
}

func newServer(t *testing.T, cfg Config) (*Model, *httptest.Server) {
	t.Helper()
	m := New(cfg)
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return m, srv
}

func post(t *testing.T, client *http.Client, url string, headers map[string]string, body any) reply {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest("POST", url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, readErr := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: out, readErr: readErr}
}

var anthropicHeaders = map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
var openAIHeaders = map[string]string{"Authorization": "Bearer sk-test-key-0001"}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data string
}

func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for _, frame := range strings.Split(strings.TrimRight(string(body), "\n"), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(frame, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[len("data: "):]
			case line != "":
				t.Fatalf("unexpected SSE line %q", line)
			}
		}
		evs = append(evs, ev)
	}
	return evs
}

// shape lists the key paths of a JSON document with their value kinds, in document order, so
// two bodies compare by structure and key order but not by values.
func shape(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []string
	var walk func(path string)
	walk = func(path string) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("shape of %s: %v", data, err)
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				out = append(out, path+":object")
				for dec.More() {
					k, _ := dec.Token()
					walk(path + "." + k.(string))
				}
				dec.Token()
			case '[':
				out = append(out, path+":array")
				seen := map[string]bool{}
				for dec.More() {
					before := len(out)
					walk(path + "[]")
					// Keep one copy of each element shape.
					key := strings.Join(out[before:], "|")
					if seen[key] {
						out = out[:before]
					}
					seen[key] = true
				}
				dec.Token()
			}
		case string:
			out = append(out, path+":string")
		case json.Number:
			out = append(out, path+":number")
		case bool:
			out = append(out, path+":bool")
		case nil:
			out = append(out, path+":null")
		}
	}
	walk("")
	return out
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameShape(t *testing.T, what string, got, want []byte) {
	t.Helper()
	g, w := shape(t, got), shape(t, want)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("%s: shape differs from the recording\n got: %v\nwant: %v\n body: %s", what, g, w, got)
	}
}

// padding is filler that makes prompts long enough to cache: about n tokens.
func padding(n int) string {
	const s = "This is padding text to ensure the prompt is large enough for caching. "
	return strings.Repeat(s, n*BytesPerToken/len(s)+1)
}

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
