package cli_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/provider/fake"
)

// compression.engine provider through the real binary, one process a turn, on the fake's
// Responses wire: the provider compacts (POST /responses/compact) once the session crosses its
// trigger; the next process replays the compaction item on its request; `config explain` names
// the engine, and says so when it cannot run (Chat Completions).
func TestProviderCompactionEndToEnd(t *testing.T) {
	t.Parallel()
	model := fake.New(fake.Config{})
	h := model.Handler()
	var mu sync.Mutex
	var last []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/responses" {
			mu.Lock()
			last = body
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	home := writeConfig(t, `provider:
  name: openai
  api: responses
  model: gpt-5
  base_url: `+srv.URL+`/v1
  context_length: 64000
compression:
  threshold_tokens: 8000
  engine: provider
`)
	ex := spool(t, home, "config", "explain").ok(t, "config explain").stdout
	if !strings.Contains(ex, "compaction engine: provider (compression.engine: local | provider): the provider compacts (POST /responses/compact)") {
		t.Errorf("config explain does not name the provider engine:\n%s", ex)
	}
	filler := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40)
	type ran struct {
		Compactions int `json:"compactions"`
	}
	compacted := false
	for i := 0; i < 40 && !compacted; i++ {
		args := []string{"--json", "run", fmt.Sprintf("SAY noted %d\n%s", i, filler)}
		if i > 0 {
			args = append(args[:2], append([]string{"--continue"}, args[2:]...)...)
		}
		compacted = decode[ran](t, spool(t, home, args...).ok(t, "run")).Compactions > 0
	}
	if !compacted || model.Stats().Compactions != 1 {
		t.Fatalf("compacted %v, %d provider compactions", compacted, model.Stats().Compactions)
	}
	spool(t, home, "run", "--continue", "SAY after").ok(t, "run after the compaction")
	mu.Lock()
	body := string(last)
	mu.Unlock()
	if !strings.Contains(body, `"type":"compaction"`) || !strings.Contains(body, `"encrypted_content":"gAAAAAB`) {
		t.Errorf("the next process's request does not replay the compaction item:\n%.600s", body)
	}

	chat := writeConfig(t, `provider:
  name: openai
  model: gpt-5
  base_url: `+srv.URL+`/v1
compression:
  engine: provider
`)
	ex = spool(t, chat, "config", "explain").ok(t, "config explain").stdout
	if !strings.Contains(ex, "compaction engine: local (compression.engine: local | provider): compression.engine provider needs provider openai with provider.api responses") {
		t.Errorf("config explain on Chat Completions:\n%s", ex)
	}
}
