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

// BenchmarkConversation is the W2 hot path: load a 1,500-message session.
func BenchmarkConversation(b *testing.B) {
	db := benchDB(b)
	if _, err := db.CreateSession(bg, store.NewSession{ID: "big"}); err != nil {
		b.Fatal(err)
	}
	batch := make([]store.Message, 1500)
	for i := range batch {
		batch[i] = store.Message{Role: store.RoleUser, Content: benchText}
	}
	if _, err := db.AppendBatch(bg, "big", batch); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ms, err := db.Conversation(bg, "big", store.ViewActive)
		if err != nil || len(ms) != 1500 {
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
