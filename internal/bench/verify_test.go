package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/store"
)

// memStore is an in-memory Store for exercising the runner's checks without a database.
type memStore struct {
	mu       sync.Mutex
	nextID   int64
	sessions map[string]*store.Session
	rows     map[string][]store.Message
}

func newMemStore() *memStore {
	return &memStore{sessions: map[string]*store.Session{}, rows: map[string][]store.Message{}}
}

func (s *memStore) CreateSession(_ context.Context, ns store.NewSession) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.sessions[ns.ID]; ok {
		return *old, nil
	}
	s.sessions[ns.ID] = &store.Session{ID: ns.ID, Source: ns.Source, Model: ns.Model}
	return *s.sessions[ns.ID], nil
}

func (s *memStore) GetSession(_ context.Context, id string) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x, ok := s.sessions[id]; ok {
		return *x, nil
	}
	return store.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
}

func (s *memStore) Append(_ context.Context, sid string, m store.Message, _ ...store.WriteOption) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[sid]
	if !ok {
		return 0, fmt.Errorf("session %s: %w", sid, store.ErrNotFound)
	}
	s.nextID++
	m.ID, m.SessionID = s.nextID, sid
	s.rows[sid] = append(s.rows[sid], m)
	sess.MessageCount++
	return m.ID, nil
}

func (s *memStore) Conversation(_ context.Context, sid string, _ store.View) ([]store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rows[sid]), nil
}

func (s *memStore) Search(context.Context, store.SearchQuery) ([]store.SearchHit, error) {
	return nil, nil
}

func (s *memStore) ListSessions(_ context.Context, o store.ListOptions) ([]store.SessionListing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.SessionListing, 0, len(s.sessions))
	for _, x := range s.sessions {
		out = append(out, store.SessionListing{Session: *x})
	}
	return out[:min(len(out), o.Limit)], nil
}

func (s *memStore) Close() error { return nil }

// newMemRunner returns a runner over a memStore holding the W1 data and the W5 data appended
// the way the workers would.
func newMemRunner(t *testing.T) (*runner, *memStore) {
	t.Helper()
	mem := newMemStore()
	var log strings.Builder
	sizes := Sizes{Seed: 3, Sessions: 6, Messages: 120, Queries: 10, ListIters: 3, W5Procs: 2, W5Msgs: 23}
	r := &runner{
		cfg: StoreConfig{Sizes: &sizes, WorkerExe: "unused",
			Open: func(context.Context, string, string) (Store, error) { return mem, nil }},
		log: &log,
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(log.String())
		}
	})
	if err := r.setup(); err != nil {
		t.Fatal(err)
	}
	if err := r.generate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.w1(ctx, mem); err != nil {
		t.Fatal(err)
	}
	for k := range sizes.W5Procs {
		specs, msgs := r.gen.W5(sizes.Seed, k, sizes.W5Msgs)
		for _, s := range specs {
			mem.CreateSession(ctx, store.NewSession{ID: s.ID})
		}
		for _, m := range msgs {
			if _, err := mem.Append(ctx, m.SessionID, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r, mem
}

func TestVerifyDetectsDamage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(m *memStore)
		check  func(t *testing.T, r *runner, w1OK bool)
	}{
		{"intact", func(*memStore) {}, func(t *testing.T, r *runner, w1OK bool) {
			v := r.rep.W5.Verify
			if !w1OK || !v.OK || v.Expected != 46 || v.Found != 46 {
				t.Errorf("w1 ok %v, verify %+v; want ok with 46 of 46", w1OK, v)
			}
		}},
		{"W5 row lost", func(m *memStore) {
			m.rows["contend-1-2"] = m.rows["contend-1-2"][1:]
		}, func(t *testing.T, r *runner, _ bool) {
			if v := r.rep.W5.Verify; v.OK || v.Missing != 1 || v.Found != 45 {
				t.Errorf("verify %+v; want 1 missing and not ok", v)
			}
		}},
		{"W5 row duplicated", func(m *memStore) {
			m.rows["contend-0-0"] = append(m.rows["contend-0-0"], m.rows["contend-0-0"][0])
		}, func(t *testing.T, r *runner, _ bool) {
			if v := r.rep.W5.Verify; v.OK || v.Duplicates != 1 || v.Missing != 0 {
				t.Errorf("verify %+v; want 1 duplicate and not ok", v)
			}
		}},
		{"W5 rows swapped", func(m *memStore) {
			rows := m.rows["contend-0-3"]
			rows[0], rows[1] = rows[1], rows[0]
		}, func(t *testing.T, r *runner, _ bool) {
			if v := r.rep.W5.Verify; v.OK || v.SessionsOutOfOrder != 1 || v.Missing != 0 {
				t.Errorf("verify %+v; want 1 session out of order", v)
			}
		}},
		{"W5 message_count wrong", func(m *memStore) {
			m.sessions["contend-1-0"].MessageCount++
		}, func(t *testing.T, r *runner, _ bool) {
			if v := r.rep.W5.Verify; v.OK || v.SessionCountMismatch != 1 {
				t.Errorf("verify %+v; want 1 count mismatch", v)
			}
		}},
		{"W1 row lost", func(m *memStore) {
			m.rows["bench-0001"] = m.rows["bench-0001"][:3]
		}, func(t *testing.T, r *runner, w1OK bool) {
			if v := r.rep.W5.Verify; w1OK || v.OK || v.W1MessagesIntact {
				t.Errorf("w1 ok %v, verify %+v; want W1 damage reported", w1OK, v)
			}
		}},
		{"W1 tool call changed", func(m *memStore) {
			for sid, rows := range m.rows {
				for i := range rows {
					if len(rows[i].ToolCalls) > 0 && strings.HasPrefix(sid, "bench-") {
						rows[i].ToolCalls = slices.Clone(rows[i].ToolCalls)
						rows[i].ToolCalls[0].Function.Arguments += " "
						return
					}
				}
			}
		}, func(t *testing.T, r *runner, w1OK bool) {
			if w1OK {
				t.Error("W1 verification passed with altered tool-call arguments")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, mem := newMemRunner(t)
			ctx := context.Background()
			tc.damage(mem)
			w1OK, err := r.verifyW1(ctx, mem)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.verifyW5(ctx); err != nil {
				t.Fatal(err)
			}
			tc.check(t, r, w1OK)
		})
	}
}

func TestWorkerRejectsBadParameters(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, input, want string }{
		{"not json", "hello\n", "not valid JSON"},
		{"no db", `{"messages":10}` + "\n", "need db"},
		{"no input", "", "read parameters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			open := func(context.Context, string, string) (Store, error) { return newMemStore(), nil }
			err := runWorker(context.Background(), open, strings.NewReader(tc.input), &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to mention %q", err, tc.want)
			}
			if !strings.Contains(out.String(), `"ready":false`) || !strings.Contains(out.String(), tc.want) {
				t.Errorf("stdout = %q, want a not-ready line carrying the error", out.String())
			}
		})
	}
}

func TestWorkerProtocolInProcess(t *testing.T) {
	t.Parallel()
	mem := newMemStore()
	open := func(context.Context, string, string) (Store, error) { return mem, nil }
	in := `{"db":"x.db","seed":9,"worker":1,"messages":12,"synchronous":"NORMAL"}` + "\n" + goLine
	var out strings.Builder
	if err := runWorker(context.Background(), open, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != `{"ready":true}` || !strings.Contains(lines[1], `"worker":1`) {
		t.Fatalf("protocol lines = %q", lines)
	}
	if got := len(mem.rows["contend-1-0"]) + len(mem.rows["contend-1-4"]); got != 3+2 {
		t.Errorf("contend-1-0 and -4 hold %d messages, want 3+2", got)
	}
}

func TestSizesFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		env        map[string]string
		want       Sizes
		overridden bool
		err        string
	}{
		{"defaults", nil, DefaultSizes(), false, ""},
		{"scaled", map[string]string{"BENCH_SESSIONS": "10", "BENCH_MESSAGES": "500", "BENCH_W5_PROCS": "2"},
			Sizes{Seed: 20260428, Sessions: 10, Messages: 500, Queries: 500, ListIters: 200, W5Procs: 2, W5Msgs: 2000}, true, ""},
		{"seed", map[string]string{"BENCH_SEED": "7"},
			Sizes{Seed: 7, Sessions: 200, Messages: 50000, Queries: 500, ListIters: 200, W5Procs: 4, W5Msgs: 2000}, true, ""},
		{"not a number", map[string]string{"BENCH_QUERIES": "many"}, Sizes{}, false, `BENCH_QUERIES="many"`},
		{"zero procs", map[string]string{"BENCH_W5_PROCS": "0"}, Sizes{}, false, "BENCH_W5_PROCS"},
		{"too few messages", map[string]string{"BENCH_MESSAGES": "100"}, Sizes{}, false, "at least 10 per session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, over, err := SizesFromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want it to mention %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || over != tc.overridden {
				t.Errorf("got %+v, %v, %v; want %+v, %v", got, over, err, tc.want, tc.overridden)
			}
		})
	}
}
