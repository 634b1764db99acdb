package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/provider/openai"
	"github.com/spoolhq/spool/store"
)

// rsRecorder serves the fake's Responses wire and keeps the bodies of POST /v1/responses and
// POST /v1/responses/compact apart.
type rsRecorder struct {
	*httptest.Server
	Model          *fake.Model
	mu             sync.Mutex
	turns, compact [][]byte
}

func newRSRecorder(t *testing.T) *rsRecorder {
	t.Helper()
	r := &rsRecorder{Model: fake.New(fake.Config{})}
	h := r.Model.Handler()
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		switch req.URL.Path {
		case "/v1/responses":
			r.turns = append(r.turns, body)
		case "/v1/responses/compact":
			r.compact = append(r.compact, body)
		}
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *rsRecorder) bodies() (turns, compact [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.turns), slices.Clone(r.compact)
}

func responsesClient(t *testing.T, url string) provider.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: url + "/v1", APIKey: "sk-test", API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	return provider.WithRetry(c, quickRetry)
}

func withEngine(name string) opt {
	return func(d *agent.Deps) { d.Config.Compression.Engine = name }
}

// compactionItemOf returns the compaction item's bytes inside a stored summary row's window.
func compactionItemOf(t *testing.T, details json.RawMessage) []byte {
	t.Helper()
	var w struct {
		Type  string            `json:"type"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(details, &w); err != nil || w.Type != provider.CompactedWindowType {
		t.Fatalf("summary row's details are not a compacted window: %s (%v)", details, err)
	}
	for _, it := range w.Items {
		var typ struct {
			Type             string `json:"type"`
			EncryptedContent string `json:"encrypted_content"`
		}
		if json.Unmarshal(it, &typ) == nil && typ.Type == "compaction" {
			if !strings.HasPrefix(typ.EncryptedContent, "gAAAAAB") {
				t.Fatalf("compaction item without encrypted content: %s", it)
			}
			return it
		}
	}
	t.Fatalf("no compaction item in %s", details)
	return nil
}

// compression.engine provider on the Responses API: spool's gate decides when, its split what;
// the middle goes to POST /responses/compact, the returned window (retained user messages and
// the encrypted compaction item) is kept on the summary row and sent back byte for byte on
// every later request, by this process and by a new one that resumes the session (the same
// bytes). The ledger and original request still ride in the row's text.
func TestProviderCompactionReplaysTheWindow(t *testing.T) {
	t.Parallel()
	st, path := newStore(t)
	rec := newRSRecorder(t)
	a := newAgent(t, st, responsesClient(t, rec.URL), stdTools(), withCompression(64_000, 10_000), withEngine(agent.ProviderEngineName))
	if got := a.Engine(); got != agent.ProviderEngineName {
		t.Fatalf("engine %q, want provider", got)
	}
	filler := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40)
	sid, compactions := "", 0
	var notices []string
	for i := 0; i < 40 && compactions == 0; i++ {
		res, err := a.Run(context.Background(), sid, fmt.Sprintf("SAY noted %d\nplease keep src/pkg%d/main.go in mind: %s", i, i, filler),
			agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
		if err != nil {
			t.Fatal(err)
		}
		sid, compactions = res.SessionID, res.Compactions
	}
	if compactions == 0 {
		t.Fatal("no compaction in 40 turns")
	}
	turns, compacts := rec.bodies()
	if len(compacts) != 1 || rec.Model.Stats().Compactions != 1 {
		t.Fatalf("%d /responses/compact calls, want 1", len(compacts))
	}
	for _, n := range notices {
		if strings.Contains(n, "spool's own compressor compacted instead") {
			t.Fatalf("the local compressor ran: %q", n)
		}
	}
	var row store.Message
	for _, m := range history(t, st, sid) {
		if m.Summary {
			row = m
		}
	}
	item := compactionItemOf(t, row.ReasoningDetails)
	if !strings.Contains(row.Content, "Provider Compaction") || !strings.Contains(row.Content, "src/pkg5/main.go") {
		t.Errorf("summary row text lacks the provider note or the ledger:\n%s", row.Content)
	}

	res := run(t, a, sid, "SAY after")
	turns, _ = rec.bodies()
	live := turns[len(turns)-1]
	if !bytes.Contains(live, item) {
		t.Fatalf("the request after the compaction does not replay the compaction item byte for byte")
	}
	if res.Reply != "after" {
		t.Errorf("reply %q", res.Reply)
	}

	// A new process resumes the session: its next request replays the same window; the bytes up
	// to the new input equal the live process's.
	st2 := openStore(t, path)
	b := newAgent(t, st2, responsesClient(t, rec.URL), stdTools(), withCompression(64_000, 10_000), withEngine(agent.ProviderEngineName))
	run(t, b, sid, "SAY resumed")
	turns, compacts = rec.bodies()
	if len(compacts) != 1 {
		t.Fatalf("%d compactions after the resume", len(compacts))
	}
	resumed := turns[len(turns)-1]
	if !bytes.Contains(resumed, item) {
		t.Fatal("the resumed process does not replay the compaction item")
	}
	cut := bytes.Index(live, []byte(`"SAY after"`))
	if cut < 0 || !bytes.HasPrefix(resumed, live[:cut]) {
		t.Errorf("the resumed request does not start with the live one's bytes")
	}
}

// When the provider's compaction fails (a 500 on /responses/compact), spool's own compressor
// compacts instead, says so, and the session goes on; the summary row has no window then.
func TestProviderCompactionFallsBackToLocal(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	rec := newRSRecorder(t)
	a := newAgent(t, st, responsesClient(t, rec.URL), stdTools(), withCompression(64_000, 10_000), withEngine(agent.ProviderEngineName))
	filler := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40)
	sid, compactions := "", 0
	var notices []string
	for i := 0; i < 40 && compactions == 0; i++ {
		res, err := a.Run(context.Background(), sid, fmt.Sprintf("SAY noted %d\nCOMPACTFAIL %s", i, filler),
			agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
		if err != nil {
			t.Fatal(err)
		}
		sid, compactions = res.SessionID, res.Compactions
	}
	if compactions == 0 {
		t.Fatal("no compaction in 40 turns")
	}
	if _, compacts := rec.bodies(); len(compacts) == 0 {
		t.Fatal("the provider was never asked to compact")
	}
	if !hasNotice(notices, "provider's compaction failed", "spool's own compressor compacted instead") {
		t.Errorf("notices %q do not say the local compressor took over", notices)
	}
	for _, m := range history(t, st, sid) {
		if m.Summary && len(m.ReasoningDetails) > 0 {
			t.Errorf("a local summary carries details: %s", m.ReasoningDetails)
		}
	}
}

// On Chat Completions (no compaction of the provider's own) compression.engine provider runs
// the local compressor.
func TestProviderEngineNeedsResponsesAPI(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	rec := newRSRecorder(t)
	a := newAgent(t, st, provider.WithRetry(openaiClient(t, rec.URL), quickRetry), stdTools(), withCompression(64_000, 10_000), withEngine(agent.ProviderEngineName))
	if got := a.Engine(); got != "default" {
		t.Errorf("engine on Chat Completions %q, want default", got)
	}
}
