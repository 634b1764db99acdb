package recall

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// BenchmarkRun measures session_search answers on a store of 200 sessions x 100 messages
// (20,000 messages), calling from a session of its own: go test ./recall -bench . -run ^$
func BenchmarkRun(b *testing.B) {
	st, err := sqlite.Open(bg, filepath.Join(b.TempDir(), "spool.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	words := []string{"parser", "deploy", "cache", "lease", "index", "schema", "retry", "token"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var anchor int64
	for s := range 200 {
		id := fmt.Sprintf("s%03d", s)
		if _, err := st.CreateSession(bg, store.NewSession{ID: id, StartedAt: base.Add(time.Duration(s) * time.Hour)}); err != nil {
			b.Fatal(err)
		}
		ms := make([]store.Message, 100)
		for i := range ms {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			ms[i] = store.Message{Role: role, Timestamp: base.Add(time.Duration(s)*time.Hour + time.Duration(i)*time.Second),
				Content: fmt.Sprintf("message %d of session %d talks about the %s and the %s in some detail", i, s, words[(s+i)%len(words)], words[(s*3+i)%len(words)])}
		}
		ids, err := st.AppendBatch(bg, id, ms)
		if err != nil {
			b.Fatal(err)
		}
		if s == 100 {
			anchor = ids[50]
		}
	}
	for _, c := range []struct{ name, args string }{
		{"discover", `{"query":"parser cache"}`},
		{"discover_full", `{"query":"parser cache","detail":"full","limit":10}`},
		{"scroll", fmt.Sprintf(`{"session_id":"s100","around_message_id":%d}`, anchor)},
		{"read", `{"session_id":"s100"}`},
		{"browse", `{"limit":10}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				out = Run(bg, st, "s199", json.RawMessage(c.args))
			}
			var a struct {
				Success  bool
				Count    int
				Messages []json.RawMessage
			}
			if err := json.Unmarshal(out, &a); err != nil || !a.Success {
				b.Fatalf("answer %s", out)
			}
			b.ReportMetric(float64(a.Count+len(a.Messages)), "items")
			b.ReportMetric(float64(len(out)), "bytes")
		})
	}
}
