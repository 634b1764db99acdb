package cli_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// provider.api: responses sends the turn to POST /v1/responses (stateless, encrypted reasoning
// included) and prints the model's answer; the recorded OpenAI stream and body are the server.
func TestProviderAPIResponses(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "provider", "openai", "testdata", "responses")
	sseBody, err := os.ReadFile(filepath.Join(dir, "02-stream-text.sse"))
	if err != nil {
		t.Fatal(err)
	}
	jsonBody, err := os.ReadFile(filepath.Join(dir, "01c-nonstream-cached-tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var paths []string
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths, bodies = append(paths, r.URL.Path), append(bodies, b)
		mu.Unlock()
		if bytes.Contains(b, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(sseBody)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jsonBody)
	}))
	t.Cleanup(srv.Close)
	home := writeConfig(t, "provider:\n  name: openai\n  model: gpt-4o\n  api: responses\n  base_url: "+srv.URL+"/v1\n")
	r := spool(t, home, "run", "What is 4200 + 42?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "4200 + 42 equ") && !strings.Contains(r.stdout, "I have altered the deal") {
		t.Errorf("stdout %q lacks the model's answer", r.stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 {
		t.Fatal("server saw no request")
	}
	for i, p := range paths {
		if p != "/v1/responses" || !bytes.Contains(bodies[i], []byte(`"store":false`)) ||
			!bytes.Contains(bodies[i], []byte(`"include":["reasoning.encrypted_content"]`)) {
			t.Errorf("request %d to %s: %s", i, p, bodies[i])
		}
	}
	ex := spool(t, home, "config", "explain")
	if ex.code != 0 || !strings.Contains(ex.stdout, "provider api: responses") {
		t.Errorf("config explain (exit %d) does not name the API: %s%s", ex.code, ex.stdout, ex.stderr)
	}
}

func TestProviderAPIBadValue(t *testing.T) {
	t.Parallel()
	home := writeConfig(t, "provider:\n  name: openai\n  model: gpt-4o\n  api: assistants\n")
	r := spool(t, home, "run", "hello")
	if r.code == 0 || !strings.Contains(r.stderr, "config.yaml:4") || !strings.Contains(r.stderr, "provider.api") ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q: want one line naming config.yaml:4 and provider.api", r.code, r.stderr)
	}
}

// The reasoning item of a turn (with its encrypted content) goes back on the next request
// within the run, and again, byte for byte, after a resume from the SQLite store.
func TestProviderAPIResponsesReplayAcrossResume(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "provider", "openai", "testdata", "responses")
	step1, err := os.ReadFile(filepath.Join(dir, "04b-stream-reasoning-summary-encrypted-function-call.step1.RECONSTRUCTED.sse"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "02-stream-text.sse"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			_, _ = w.Write(step1)
			return
		}
		_, _ = w.Write(text)
	}))
	t.Cleanup(srv.Close)
	home := writeConfig(t, "provider:\n  name: openai\n  model: gpt-5.1-codex-max\n  api: responses\n  base_url: "+srv.URL+"/v1\n")
	if r := spool(t, home, "run", "What is (12 + 7) * 3 * 10?"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if r := spool(t, home, "run", "--continue", "thanks"); r.code != 0 {
		t.Fatalf("run --continue: exit %d: %s", r.code, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) < 3 {
		t.Fatalf("server saw %d requests, want 3", len(bodies))
	}
	enc := []byte(`{"id":"rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9","type":"reasoning","encrypted_content":"gAAAAABpPDIV`)
	fc := []byte(`"id":"fc_01830d662ab3856501693c32151234819091cfca267e98cc5f"`)
	for _, i := range []int{1, 2} {
		b := bodies[i]
		ri, fi := bytes.Index(b, enc), bytes.Index(b, fc)
		if ri < 0 || fi < ri {
			t.Errorf("request %d lacks the replayed reasoning item before its function call: %s", i+1, b)
		}
	}
	// The replayed stretch is the same bytes live and resumed.
	a, b := bodies[1], bodies[2]
	start := bytes.Index(a, enc)
	end := bytes.Index(a, []byte(`"type":"function_call_output"`))
	if start < 0 || end < 0 || !bytes.Contains(b, a[start:end]) {
		t.Errorf("resumed request does not repeat the live prefix\nlive    %s\nresumed %s", a, b)
	}
}
