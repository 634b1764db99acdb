package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/provider/fake"
)

// modelCounter serves provider/fake over HTTP and counts the requests per (path, model).
type modelCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *modelCounter) serve(t *testing.T) string {
	h := fake.New(fake.Config{}).Handler()
	c.n = map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m struct{ Model string }
		json.Unmarshal(body, &m)
		c.mu.Lock()
		c.n[req.URL.Path+" "+m.Model]++
		c.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (c *modelCounter) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// auxiliary.compression with a provider and base URL of its own: compaction summaries go to
// that endpoint with that model, the turns to the main one.
func TestSummaryModelOnItsOwnProvider(t *testing.T) {
	t.Parallel()
	var mainSrv, auxSrv modelCounter
	mainURL, auxURL := mainSrv.serve(t), auxSrv.serve(t)
	env := []string{
		"SPOOL_COMPRESSION_THRESHOLD_TOKENS=2900",
		// The trigger sits just above the fixed prompt (system prompt and tools); the delegate
		// tool and its guidance would take that margin, and compaction would pause.
		"SPOOL_DELEGATION_MAX_DEPTH=0",
		"SPOOL_AUXILIARY_COMPRESSION_PROVIDER=anthropic",
		"SPOOL_AUXILIARY_COMPRESSION_BASE_URL=" + auxURL,
		"SPOOL_AUXILIARY_COMPRESSION_MODEL=summarizer-x",
	}
	var typed strings.Builder
	for i := range 30 {
		fmt.Fprintf(&typed, "Turn %d: %s\n", i, strings.Repeat("the build failed again in src/parser.go ", 12))
	}
	r := spoolEnv(t, t.TempDir(), typed.String(), env, "chat", "--provider", "openai", "--base-url", mainURL+"/v1", "--model", "fake-model", "--context-length", "8000").ok(t, "chat")
	compactions := strings.Count(r.stderr, "(Compacted ")
	if compactions == 0 {
		t.Fatalf("no compaction in 30 turns:\n%s", r.stderr)
	}
	// The auxiliary model also names the session after its first exchange: one request more.
	if got := auxSrv.count("/v1/messages summarizer-x"); got != compactions+1 {
		t.Errorf("summary endpoint got %d requests for %d compactions and a title (all: %v)\n%s", got, compactions, auxSrv.n, r.stderr)
	}
	if got := mainSrv.count("/v1/chat/completions summarizer-x"); got != 0 {
		t.Errorf("the main endpoint got %d requests for the summary model", got)
	}
	if got := mainSrv.count("/v1/chat/completions fake-model"); got < 30 {
		t.Errorf("the main endpoint got %d turn requests, want at least 30", got)
	}
}

func TestSummaryProviderNeedsAModel(t *testing.T) {
	t.Parallel()
	home := writeConfig(t, "auxiliary:\n  compression:\n    provider: anthropic\n")
	r := spool(t, home, "run", "hello")
	if r.code == 0 || !strings.Contains(r.stderr, "auxiliary.compression.model") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q: want one line naming auxiliary.compression.model", r.code, r.stderr)
	}
}

func TestCacheTTLIsAnthropicOnly(t *testing.T) {
	t.Parallel()
	home := writeConfig(t, "provider:\n  name: openai\n  model: gpt-4o\n  base_url: http://127.0.0.1:9/v1\n  cache_ttl: 1h\n")
	r := spool(t, home, "run", "hello")
	if r.code == 0 || !strings.Contains(r.stderr, "cache_ttl 1h is an Anthropic setting") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q: want one line saying cache_ttl is Anthropic's", r.code, r.stderr)
	}
}

// With an auxiliary model configured, the session's automatic title is the one that model
// gives, recorded as made by it; without one it comes from the first ask. A title the user set
// is kept either way (agent tests).
func TestTitleByTheAuxiliaryModel(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	// The offline model answers a SAY line exactly; the title prompt quotes the first message,
	// so the auxiliary model's answer is the SAY text while the ask's own first line differs.
	ask := "hello there, please look at the parser\nSAY Parser review by the aux model"
	for _, tc := range []struct {
		name, title string
		env         []string
	}{
		{"auxiliary model", "Parser review by the aux model (automatic, by aux-titler)", []string{"SPOOL_AUXILIARY_COMPRESSION_MODEL=aux-titler"}},
		{"no auxiliary model", "Hello there, please look at the parser (automatic)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			out := decode[struct {
				SessionID string `json:"session_id"`
			}](t, spoolEnv(t, home, "", tc.env, "run", "--provider", "openai", "--base-url", url+"/v1", "--model", "fake-model", "--json", ask).ok(t, "run"))
			show := spool(t, home, "sessions", "show", out.SessionID).ok(t, "show")
			if !strings.Contains(show.stdout, "Title:") || !strings.Contains(show.stdout, tc.title) {
				t.Errorf("sessions show:\n%s\nwant title %q", show.stdout, tc.title)
			}
		})
	}
}
