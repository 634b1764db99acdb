package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/provider/openai"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/turn"
)

// toolFunc is one test tool.
type toolFunc func(ctx context.Context, args map[string]any) (string, error)

// testTools is a minimal agent.Tools: definitions sorted by name, arguments decoded as JSON.
type testTools struct {
	fns map[string]toolFunc
}

func (tt *testTools) Definitions() []provider.Tool {
	names := make([]string, 0, len(tt.fns))
	for n := range tt.fns {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]provider.Tool, len(names))
	for i, n := range names {
		out[i] = provider.Tool{Name: n, Description: "Test tool " + n + ".",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	}
	return out
}

func (tt *testTools) Call(ctx context.Context, _ string, c store.ToolCall) (string, bool) {
	fn, ok := tt.fns[c.Function.Name]
	if !ok {
		return "Error: unknown tool " + c.Function.Name, true
	}
	args := map[string]any{}
	if c.Function.Arguments != "" {
		if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
			return "Error: bad arguments: " + err.Error(), true
		}
	}
	out, err := fn(ctx, args)
	if err != nil {
		return "Error: " + err.Error(), true
	}
	return out, false
}

// stdTools: echo repeats its path argument, read returns a deterministic body.
func stdTools() *testTools {
	return &testTools{fns: map[string]toolFunc{
		"echo": func(_ context.Context, a map[string]any) (string, error) {
			return fmt.Sprintf("echo %v", a["path"]), nil
		},
		"read": func(_ context.Context, a map[string]any) (string, error) {
			return fmt.Sprintf("contents of %v:\n%s", a["path"], bytes.Repeat([]byte("line of text\n"), 40)), nil
		},
		"fail": func(context.Context, map[string]any) (string, error) { return "", fmt.Errorf("disk on fire") },
	}}
}

func openSQLite(path string) (*sqlite.DB, error) {
	return sqlite.Open(context.Background(), path, sqlite.Options{})
}

func openStore(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := openSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newStore(t *testing.T) (*sqlite.DB, string) {
	path := filepath.Join(t.TempDir(), "spool.db")
	return openStore(t, path), path
}

type opt func(*agent.Deps)

func withCompression(window, trigger int) opt {
	return func(d *agent.Deps) {
		c := compress.DefaultConfig()
		c.ThresholdTokens = trigger
		d.Config.Compression = c
		d.Config.ContextLength = window
	}
}

func newAgent(t *testing.T, st store.Backend, client provider.Client, tools agent.Tools, opts ...opt) *agent.Agent {
	t.Helper()
	d := agent.Deps{Store: st, Client: client, Config: agent.Config{
		Model:  "fake-model",
		Lease:  turn.Options{Poll: 20 * time.Millisecond},
		Prompt: promptEnv(),
	}}
	if tools != nil {
		d.Tools = tools
	}
	for _, o := range opts {
		o(&d)
	}
	a, err := agent.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func run(t *testing.T, a *agent.Agent, sid, input string) agent.Result {
	t.Helper()
	res, err := a.Run(context.Background(), sid, input, agent.RunOptions{})
	if err != nil {
		t.Fatalf("run %q: %v", firstLine(input), err)
	}
	return res
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func history(t *testing.T, st store.Backend, sid string) []store.Message {
	t.Helper()
	ms, err := st.Conversation(context.Background(), sid, store.ViewActive)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func roles(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Role
		if len(m.ToolCalls) > 0 {
			out[i] += fmt.Sprintf("(%d calls)", len(m.ToolCalls))
		}
	}
	return out
}

// recorder is an httptest server running the fake's handler that keeps every request body.
type recorder struct {
	*httptest.Server
	Model  *fake.Model
	mu     sync.Mutex
	Bodies [][]byte
}

func newRecorder(t *testing.T, cfg fake.Config) *recorder {
	t.Helper()
	r := &recorder{Model: fake.New(cfg)}
	h := r.Model.Handler()
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.URL.Path == "/v1/chat/completions" || req.URL.Path == "/v1/messages" {
			r.mu.Lock()
			r.Bodies = append(r.Bodies, body)
			r.mu.Unlock()
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.Bodies)
}

func openaiClient(t *testing.T, url string) provider.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: url + "/v1", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
