package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/spoolhq/spool/provider/fake"
)

// bodyRecorder serves provider/fake over HTTP and keeps the agent's request bodies (those that
// offer tools; summary calls offer none).
type bodyRecorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (r *bodyRecorder) serve(t *testing.T) string {
	h := fake.New(fake.Config{}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.URL.Path == "/v1/chat/completions" && bytes.Contains(body, []byte(`"tools":`)) {
			r.mu.Lock()
			r.bodies = append(r.bodies, body)
			r.mu.Unlock()
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type wireReq struct {
	Tools    json.RawMessage
	Messages []json.RawMessage
}

func parseWire(t *testing.T, b []byte) wireReq {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	w := wireReq{Tools: m["tools"]}
	if err := json.Unmarshal(m["messages"], &w.Messages); err != nil {
		t.Fatal(err)
	}
	return w
}

// extendsWire reports whether cur repeats every byte of prev's tools and messages, in order.
func extendsWire(prev, cur wireReq) bool {
	if !bytes.Equal(prev.Tools, cur.Tools) || len(cur.Messages) < len(prev.Messages) {
		return false
	}
	for i := range prev.Messages {
		if !bytes.Equal(prev.Messages[i], cur.Messages[i]) {
			return false
		}
	}
	return true
}

// TestLongSessionAcrossProcesses runs every turn of a long tool-heavy session as its own spool
// process (so every turn is a resume), with automatic compactions, and checks the request
// bytes: each request repeats the previous one byte for byte, except once per compaction.
func TestLongSessionAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("120 spool processes; run without -short")
	}
	rec := &bodyRecorder{}
	url := rec.serve(t)
	home := t.TempDir()
	env := []string{"SPOOL_COMPRESSION_THRESHOLD_TOKENS=6000"}
	const turns = 120
	sid := ""
	compactions := 0
	for i := range turns {
		var input string
		switch i % 4 {
		case 0:
			input = `CALL read_file {"path":"doc.go"}`
		case 1:
			input = fmt.Sprintf("CALL list_files {}\nCALL read_file {\"path\":\"doc.go\",\"offset\":%d}", 1+i%3)
		case 2:
			input = fmt.Sprintf("Turn %d: what did we learn so far?", i)
		default:
			input = fmt.Sprintf("SAY noted %d", i)
		}
		args := viaFake(url, "--json", "--context-length", "20000", input)
		if sid != "" {
			args = viaFake(url, "--json", "--context-length", "20000", "--resume", sid, input)
		}
		out := decode[struct {
			runOut
			Compactions int `json:"compactions"`
			Breaks      []struct {
				Reason string `json:"reason"`
			} `json:"cache_breaks"`
		}](t, spoolEnv(t, home, "", env, args...).ok(t, fmt.Sprintf("turn %d", i)))
		sid = out.SessionID
		compactions += out.Compactions
		for _, b := range out.Breaks {
			if b.Reason != "compaction" {
				t.Errorf("turn %d: cache break %q across processes", i, b.Reason)
			}
		}
	}
	if compactions < 2 {
		t.Fatalf("%d compactions in %d turns, want several", compactions, turns)
	}
	rec.mu.Lock()
	bodies := rec.bodies
	rec.mu.Unlock()
	rewritten := 0
	systems := map[string]bool{}
	for i, b := range bodies {
		w := parseWire(t, b)
		systems[string(w.Messages[0])] = true
		if i > 0 && !extendsWire(parseWire(t, bodies[i-1]), w) {
			rewritten++
		}
	}
	if rewritten != compactions {
		t.Errorf("%d requests did not repeat their predecessor's bytes, but only %d compactions happened", rewritten, compactions)
	}
	if len(systems) != 2 {
		t.Errorf("%d distinct system prompts, want 2 (before and after the first compaction's note)", len(systems))
	}
	t.Logf("%d turns, %d requests, %d compactions", turns, len(bodies), compactions)
}
