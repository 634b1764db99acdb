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
