package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRunStoreScaledDown runs every workload end to end against a real SQLite file, with W5
// workers as real OS processes (this test binary re-executed, see TestMain).
func TestRunStoreScaledDown(t *testing.T) {
	t.Parallel()
	for _, sync := range []string{"", "FULL"} {
		t.Run("synchronous="+sync, func(t *testing.T) {
			t.Parallel()
			want := sync
			if want == "" {
				want = "NORMAL"
			}
			runScaledDown(t, sync, want)
		})
	}
}

func runScaledDown(t *testing.T, sync, wantSync string) {
	sizes := Sizes{Seed: 20260428, Sessions: 10, Messages: 500, Queries: 50, ListIters: 20, W5Procs: 2, W5Msgs: 200}
	var out, log bytes.Buffer
	cfg := StoreConfig{
		Sizes:       &sizes,
		Synchronous: sync,
		WorkerExe:   os.Args[0],
		WorkerArgs:  []string{"-test.run=^$"},
		WorkerEnv:   []string{workerEnv + "=1"},
		Dir:         t.TempDir(),
		Log:         &log,
	}
	err := RunStore(context.Background(), cfg, &out)
	t.Log(log.String())
	if err != nil {
		t.Fatalf("RunStore: %v", err)
	}

	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"config", "env", "harness", "impl", "peer", "total_runtime_s", "w1_append", "w2_resume", "w3_search", "w4_list", "w5_contention", "workload"}
	if !slices.Equal(keys, want) {
		t.Errorf("top-level keys %v, want %v", keys, want)
	}

	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"config.scaled_down", rep.Config.ScaledDown},
		{"config.synchronous", rep.Config.Synchronous == wantSync},
		{"config.journal_mode", rep.Config.JournalMode == "wal" || rep.Config.JournalMode == "delete"},
		{"env.sqlite_version set", rep.Env.SQLiteVersion != ""},
		{"w1 verify_ok", rep.W1.VerifyOK},
		{"w1 all appended", rep.W1.N == 500 && rep.W1.Errors == 0},
		{"w1 db bytes", rep.W1.DBBytesAfter > 0},
		{"w2 verify_ok", rep.W2.VerifyOK},
		{"w2 5 rounds over the 10 sessions", rep.W2.N == 50 && rep.W2.MessagesReturnedTotal == 5*500},
		{"w3 all queries", rep.W3.N == 50 && rep.W3.Exceptions == 0},
		{"w3 finds something", rep.W3.QueriesWithResults > 0 && rep.W3.ResultsTotal >= rep.W3.QueriesWithResults},
		{"w3 engine_rejected measured", rep.W3.EngineRejected != nil},
		{"w4 verify_ok", rep.W4.VerifyOK && rep.W4.N == 20 && rep.W4.RowsExpected == 10},
		{"w5 verify ok", rep.W5.Verify.OK},
		{"w5 all appended", rep.W5.N == 400 && rep.W5.Errors == 0 && rep.W5.Verify.Found == 400},
		{"w5 per proc", len(rep.W5.PerProcS) == 2},
		{"w5 lock_retries measured", rep.W5.LockRetries != nil},
		{"w5 latency ordered", rep.W5.P50 <= rep.W5.P99 && rep.W5.P99 <= rep.W5.Max},
		{"w5 checksums", len(rep.Workload.W5MessagesSHA256) == 2},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: false", c.name)
		}
	}
	n := 0
	for _, c := range rep.W3.ByCategory {
		n += c.N
	}
	if n != 50 {
		t.Errorf("by_category counts %d queries, want 50", n)
	}
	if entries, _ := os.ReadDir(cfg.Dir); len(entries) != 0 {
		t.Errorf("scratch directory left behind: %v", entries)
	}
}

func TestRunStoreWorkerFailure(t *testing.T) {
	t.Parallel()
	sizes := Sizes{Seed: 1, Sessions: 2, Messages: 40, Queries: 2, ListIters: 1, W5Procs: 1, W5Msgs: 5}
	cfg := StoreConfig{Sizes: &sizes, WorkerExe: os.Args[0], WorkerArgs: []string{"-test.run=^$"}, Dir: t.TempDir()}
	// Without the worker env var the child runs as an ordinary test binary and never speaks the
	// protocol: the run must fail with a clear error, not hang.
	var out bytes.Buffer
	err := RunStore(context.Background(), cfg, &out)
	if err == nil || !strings.Contains(err.Error(), "worker 0") {
		t.Fatalf("error = %v, want a worker 0 failure", err)
	}
	if errors.Is(err, ErrVerify) || out.Len() != 0 {
		t.Errorf("a run that could not complete printed %q / returned %v", out.String(), err)
	}
}

func TestRunStoreConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  StoreConfig
		want string
	}{
		{"no worker", StoreConfig{Sizes: &Sizes{Seed: 1, Sessions: 1, Messages: 10, W5Procs: 1, W5Msgs: 1}}, "worker executable"},
		{"bad synchronous", StoreConfig{Sizes: &Sizes{Seed: 1, Sessions: 1, Messages: 10, W5Procs: 1, W5Msgs: 1}, WorkerExe: "x", Synchronous: "OFF"}, "NORMAL or FULL"},
		{"bad sizes", StoreConfig{Sizes: &Sizes{Sessions: 0}, WorkerExe: "x"}, "sessions must be at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := RunStore(context.Background(), tc.cfg, &out); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
