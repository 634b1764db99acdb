package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

func benchDB(b *testing.B) *DB {
	b.Helper()
	db, err := Open(bg, filepath.Join(b.TempDir(), "bench.db"), Options{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

var benchText = strings.Repeat("the parser failed on src/main.go:42 with ECONNREFUSED after deploy ", 6)

// BenchmarkAppend is the W1 hot path: one message per committed transaction.
func BenchmarkAppend(b *testing.B) {
	db := benchDB(b)
	for i := 0; i < 20; i++ {
		if _, err := db.CreateSession(bg, store.NewSession{ID: fmt.Sprint("s", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Append(bg, fmt.Sprint("s", i%20), store.Message{Role: store.RoleAssistant, Content: benchText}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConversation is the W2 hot path: load a 1,500-message session whose rows interleave
// with seven other sessions' (as concurrent agents write them), a third of them with tool calls.
func BenchmarkConversation(b *testing.B) {
	db := benchDB(b)
	const sessions, size = 8, 1500
	for s := range sessions {
		if _, err := db.CreateSession(bg, store.NewSession{ID: fmt.Sprint("s", s)}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range size {
		for s := range sessions {
			m := store.Message{Role: store.RoleUser, Content: benchText}
			if i%3 == 1 {
				m = store.Message{Role: store.RoleAssistant, Content: benchText[:100], ToolCalls: []store.ToolCall{
					{ID: fmt.Sprint("call_", i), Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: `{"path":"src/main.go"}`}}}}
			}
			if _, err := db.Append(bg, fmt.Sprint("s", s), m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ms, err := db.Conversation(bg, "s0", store.ViewActive)
		if err != nil || len(ms) != size {
			b.Fatal(err, len(ms))
		}
	}
}

// BenchmarkSearch is the W3 hot path: a ranked full-text query with snippets and context over a
// store of 5,000 messages in 50 sessions.
func BenchmarkSearch(b *testing.B) {
	db := benchDB(b)
	words := strings.Fields("parser deploy cache lease search token prompt session store index query merge " +
		"commit branch resume tool result error timeout retry budget window summary ledger")
	for s := 0; s < 50; s++ {
		sid := fmt.Sprint("s", s)
		if _, err := db.CreateSession(bg, store.NewSession{ID: sid}); err != nil {
			b.Fatal(err)
		}
		batch := make([]store.Message, 100)
		for i := range batch {
			var text []string
			for w := 0; w < 40; w++ {
				text = append(text, words[(s*7+i*13+w*5)%len(words)])
			}
			batch[i] = store.Message{Role: store.RoleUser, Content: strings.Join(text, " ")}
		}
		if _, err := db.AppendBatch(bg, sid, batch); err != nil {
			b.Fatal(err)
		}
	}
	queries := []string{"parser", "deploy cache", `"lease search"`, "sess*", "token OR prompt", "merge NOT commit", "ledger-window"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Search(bg, store.SearchQuery{Text: queries[i%len(queries)], Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchToolBodies: a tool search (role tool) over 5,000 tool rows of which 500 are
// longer than the indexed prefix (20,000 characters each, 10 MB in all): the index answers the
// prefixes and the long rows' bodies are read whole (the reference reads every tool body).
func BenchmarkSearchToolBodies(b *testing.B) {
	db := benchDB(b)
	filler := strings.Repeat("build step ok; ", 1340) // 20,100 characters
	for s := 0; s < 50; s++ {
		sid := fmt.Sprint("s", s)
		if _, err := db.CreateSession(bg, store.NewSession{ID: sid}); err != nil {
			b.Fatal(err)
		}
		batch := make([]store.Message, 100)
		for i := range batch {
			text := fmt.Sprintf("exit %d: compiled module m%d", i, s)
			if i%10 == 0 {
				text = filler + fmt.Sprintf(" tail%d needle", s)
			}
			batch[i] = store.Message{Role: store.RoleTool, ToolName: "terminal", ToolCallID: fmt.Sprint("c", i), Content: text}
		}
		if _, err := db.AppendBatch(bg, sid, batch); err != nil {
			b.Fatal(err)
		}
	}
	queries := []string{"needle", "compiled", "tail7 needle", "needle NOT tail3", "m12 OR tail9"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Search(bg, store.SearchQuery{Text: queries[i%len(queries)], Roles: []string{store.RoleTool}, Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordRequest is one model call's accounting, recorded once per call.
func BenchmarkRecordRequest(b *testing.B) {
	db := benchDB(b)
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		b.Fatal(err)
	}
	rec := store.RequestRecord{Model: "m", Usage: store.Usage{InputTokens: 10, OutputTokens: 5}, Break: &store.CacheBreak{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := db.RecordRequest(bg, "s", rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequests is the read every turn makes of its session's last call.
func BenchmarkRequests(b *testing.B) {
	db := benchDB(b)
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		b.Fatal(err)
	}
	for range 50 {
		if err := db.RecordRequest(bg, "s", store.RequestRecord{Model: "m"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rs, err := db.Requests(bg, "s", 1); err != nil || len(rs) != 1 {
			b.Fatal(rs, err)
		}
	}
}
