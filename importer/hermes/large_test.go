package hermes_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/spoolhq/spool/importer/hermes"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

var (
	largeOut      = flag.String("hermes-home-out", "", "TestWriteLargeHome: write a generated Hermes home to this directory")
	largeMessages = flag.Int("hermes-messages", 100_000, "messages in a generated Hermes home")
)

// perSession is the size of a generated session: a long-running chat is a few hundred rows.
const perSession = 200

// writeLargeHome writes a Hermes home with n messages into dir: sessions of perSession messages
// (every fourth one a compression continuation of the one before), tool calls and results,
// reasoning, a system prompt shared by all, in the reference's schema 10 (the fixture's, emptied).
func writeLargeHome(t testing.TB, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(fixture, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.db")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	// The reference's full-text triggers would cost most of the generation; the importer never
	// reads its indexes.
	exec(t, db, "DELETE FROM messages", "DELETE FROM sessions", "DROP TRIGGER messages_fts_insert",
		"DROP TRIGGER messages_fts_trigram_insert", "DELETE FROM messages_fts", "DELETE FROM messages_fts_trigram")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	insS, err := tx.Prepare(`INSERT INTO sessions (id, source, model, system_prompt, parent_session_id, started_at, ended_at,
		end_reason, input_tokens, output_tokens, title) VALUES (?, 'cli', 'openai/gpt-4.1', ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	insM, err := tx.Prepare(`INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp,
		finish_reason, reasoning) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	prompt := "You are Hermes, a helpful agent.\n\n## Memory\nThe user deploys on Fridays."
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := ""
	for s, written := 0, 0; written < n; s++ {
		start := base.Add(time.Duration(s) * time.Hour)
		id := fmt.Sprintf("%s_%06x", start.Format("20060102_150405"), s)
		parent, ended, reason, title := any(nil), any(nil), any(nil), any(fmt.Sprintf("generated %d", s))
		if s%4 != 0 {
			parent = prev
			title = fmt.Sprintf("generated %d #%d", s-s%4, s%4+1)
		}
		if s%4 != 3 {
			ended, reason = float64(start.Add(50*time.Minute).Unix()), "compression"
		}
		if _, err := insS.Exec(id, prompt, parent, float64(start.Unix()), ended, reason, 1000*s, 100*s, title); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < perSession && written < n; i, written = i+1, written+1 {
			ts := float64(start.Unix()) + float64(i)*0.5
			var err error
			switch i % 4 {
			case 0:
				_, err = insM.Exec(id, "user", fmt.Sprintf("step %d of session %d: deploy service-%d and check the logs", i, s, i), nil, nil, nil, ts, nil, nil)
			case 1:
				_, err = insM.Exec(id, "assistant", "Reading the logs first.", nil,
					fmt.Sprintf(`[{"id": "call_%d", "type": "function", "function": {"name": "terminal", "arguments": "{\"cmd\": \"kubectl logs svc-%d\"}"}}]`, i, i),
					nil, ts, "tool_calls", "The deploy may have failed; the logs will say.")
			case 2:
				_, err = insM.Exec(id, "tool", fmt.Sprintf("2026-01-01T00:00:%02dZ INFO svc-%d started, build sha %08x, listening on :8080", i%60, i, i*2654435761), fmt.Sprintf("call_%d", i-1), nil, "terminal", ts, nil, nil)
			default:
				_, err = insM.Exec(id, "assistant", fmt.Sprintf("service-%d is up (sha %08x); nothing in the logs needs attention.", i, i*2654435761), nil, nil, nil, ts, "stop", nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		prev = id
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// TestWriteLargeHome writes a generated home for measuring the binary:
//
//	go test ./importer/hermes -run TestWriteLargeHome -hermes-home-out /tmp/hermes-large -hermes-messages 100000
func TestWriteLargeHome(t *testing.T) {
	if *largeOut == "" {
		t.Skip("set -hermes-home-out DIR to write a generated Hermes home")
	}
	writeLargeHome(t, *largeOut, *largeMessages)
}

// TestLargeHome imports a generated home of 100,000 messages and checks every count.
func TestLargeHome(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100,000-message home; skipped with -short")
	}
	t.Parallel()
	const n = 100_000
	dir := t.TempDir()
	writeLargeHome(t, dir, n)
	st := openStore(t)
	done := 0
	rep, err := hermes.Import(bg, st, dir, hermes.Options{Progress: func(d, total int) {
		if total != n || d < done {
			t.Errorf("progress %d/%d after %d", d, total, done)
		}
		done = d
	}})
	if err != nil {
		t.Fatal(err)
	}
	sessions := n / perSession
	if rep.Messages != n || rep.Sessions != sessions || done != n || len(rep.Skipped) != 0 || rep.SystemPrompts != 1 ||
		rep.Relations["compression"] != sessions*3/4 {
		t.Fatalf("report = %+v (progress %d)", rep, done)
	}
	stats, err := st.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Messages != n || stats.Sessions != sessions || stats.SystemPrompts != 1 {
		t.Errorf("stats = %+v", stats)
	}
	ls, err := st.ListSessions(bg, store.ListOptions{})
	if err != nil || len(ls) != sessions/4 {
		t.Errorf("listed %d chains (%v), want %d", len(ls), err, sessions/4)
	}
	if hits, err := st.Search(bg, store.SearchQuery{Text: "attention", Limit: 5}); err != nil || len(hits) == 0 {
		t.Errorf("imported rows not searchable: %v %v", hits, err)
	}
}

// BenchmarkImportLargeHome reports messages/s and the peak Go heap of importing a generated home:
//
//	go test ./importer/hermes -run '^$' -bench ImportLargeHome -benchtime 3x
func BenchmarkImportLargeHome(b *testing.B) {
	n := *largeMessages
	dir := b.TempDir()
	writeLargeHome(b, dir, n)
	b.ResetTimer()
	var peak uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		st, err := sqlite.Open(bg, filepath.Join(b.TempDir(), "spool.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		stop := sampleHeap(&peak)
		b.StartTimer()
		rep, err := hermes.Import(bg, st, dir, hermes.Options{})
		b.StopTimer()
		stop()
		if err != nil || rep.Messages != n {
			b.Fatalf("import: %+v %v", rep.Messages, err)
		}
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// sampleHeap records the largest live heap seen until stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > *peak {
				*peak = ms.HeapAlloc
			}
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(quit); <-done }
}
