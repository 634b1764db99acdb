package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
)

// timedClient measures the time spent inside the model client, so a benchmark can report the
// agent's own overhead.
type timedClient struct {
	provider.Client
	spent time.Duration
}

func (c *timedClient) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	start := time.Now()
	resp, err := c.Client.Chat(ctx, req, onDelta)
	c.spent += time.Since(start)
	return resp, err
}

// seedSession stores n messages of coding-session shape: user asks, tool calls, tool output,
// answers.
func seedSession(b *testing.B, st store.Backend, n int) string {
	b.Helper()
	ctx := context.Background()
	s, err := st.CreateSession(ctx, store.NewSession{Model: "fake-model"})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]store.Message, 0, 500)
	for i := 0; i < n; i += 4 {
		id := fmt.Sprintf("call_%d", i)
		batch = append(batch,
			store.Message{Role: store.RoleUser, Content: fmt.Sprintf("Please look at pkg/mod%d/file%d.go and fix the failing test %d.", i%17, i, i)},
			store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: id, Type: "function", Function: store.ToolFunction{Name: "read", Arguments: fmt.Sprintf(`{"path":"pkg/mod%d/file%d.go"}`, i%17, i)}}}},
			store.Message{Role: store.RoleTool, ToolCallID: id, ToolName: "read", Content: strings.Repeat(fmt.Sprintf("line %d of the file under test\n", i), 8)},
			store.Message{Role: store.RoleAssistant, Content: fmt.Sprintf("The test %d failed because of an off-by-one in the loop; fixed it.", i)},
		)
		if len(batch) >= 400 {
			if _, err := st.AppendBatch(ctx, s.ID, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if _, err := st.AppendBatch(ctx, s.ID, batch); err != nil {
			b.Fatal(err)
		}
	}
	return s.ID
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkTurnOverhead is one plain turn on a session of 2,000 (or 20,000) messages: the
// whole Run minus the time inside the model client (lease, history load, prompt restore,
// request build, fingerprints, fenced writes, accounting). ns/op includes the in-process fake.
func BenchmarkTurnOverhead(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			st := openStoreB(b)
			sid := seedSession(b, st, n)
			tc := &timedClient{Client: fake.New(fake.Config{ContextWindow: 1 << 30})}
			a, err := agent.New(agent.Deps{Store: st, Client: tc, Tools: stdTools(), Config: agent.Config{
				Model: "fake-model", ContextLength: 1 << 30, Prompt: promptEnv(),
			}})
			if err != nil {
				b.Fatal(err)
			}
			var over []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				tc.spent = 0
				start := time.Now()
				if _, err := a.Run(context.Background(), sid, fmt.Sprintf("SAY ok %d", i), agent.RunOptions{}); err != nil {
					b.Fatal(err)
				}
				over = append(over, time.Since(start)-tc.spent)
			}
			b.ReportMetric(float64(percentile(over, 0.50).Microseconds())/1000, "overhead-p50-ms")
			b.ReportMetric(float64(percentile(over, 0.99).Microseconds())/1000, "overhead-p99-ms")
		})
	}
}

func openStoreB(b *testing.B) store.Backend {
	b.Helper()
	db, err := openSQLite(filepath.Join(b.TempDir(), "spool.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// firstCallClient notes when the first model request of a run is handed to the client.
type firstCallClient struct {
	provider.Client
	at time.Time
}

func (c *firstCallClient) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	if c.at.IsZero() {
		c.at = time.Now()
	}
	return c.Client.Chat(ctx, req, onDelta)
}

// BenchmarkResume is what `spool run --resume X` does before the model hears anything, as a new
// process would: open the database file, build an agent with nothing in memory, and run a turn
// on a stored session of 2,000 or 20,000 active messages (lease, history load, system prompt
// restored byte for byte, preflight, request build) up to the moment the request goes to the
// model client. resume-p50/p99-ms are that time; ns/op adds the fake model, the turn's writes
// and closing the database.
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "spool.db")
			seed, err := openSQLite(path)
			if err != nil {
				b.Fatal(err)
			}
			sid := seedSession(b, seed, n)
			model := fake.New(fake.Config{ContextWindow: 1 << 30})
			newAgent := func(st store.Backend, c provider.Client) *agent.Agent {
				a, err := agent.New(agent.Deps{Store: st, Client: c, Tools: stdTools(), Config: agent.Config{
					Model: "fake-model", ContextLength: 1 << 30, Prompt: promptEnv(),
				}})
				if err != nil {
					b.Fatal(err)
				}
				return a
			}
			// The first turn builds and stores the system prompt; every resume restores it.
			if _, err := newAgent(seed, model).Run(context.Background(), sid, "SAY ready", agent.RunOptions{}); err != nil {
				b.Fatal(err)
			}
			seed.Close()
			var waits []time.Duration
			for i := 0; b.Loop(); i++ {
				c := &firstCallClient{Client: model}
				start := time.Now()
				db, err := openSQLite(path)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := newAgent(db, c).Run(context.Background(), sid, fmt.Sprintf("SAY resumed %d", i), agent.RunOptions{}); err != nil {
					b.Fatal(err)
				}
				waits = append(waits, c.at.Sub(start))
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(percentile(waits, 0.50).Microseconds())/1000, "resume-p50-ms")
			b.ReportMetric(float64(percentile(waits, 0.99).Microseconds())/1000, "resume-p99-ms")
		})
	}
}
