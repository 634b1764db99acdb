package store_test

import (
	"context"
	"fmt"
	"log"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// A session's messages are appended, loaded in order, and found by full-text search.
func Example() {
	ctx := context.Background()
	var st store.Backend
	db, err := sqlite.Open(ctx, sqlite.Memory, sqlite.Options{}) // or postgres.Open with a URL
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	st = db

	s, err := st.CreateSession(ctx, store.NewSession{ID: "20260101_120000_abcdef", Source: "cli", Title: "tokenizer"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := st.AppendBatch(ctx, s.ID, []store.Message{
		{Role: store.RoleUser, Content: "Why does the tokenizer split CJK text?"},
		{Role: store.RoleAssistant, Content: "It falls back to one token per character."},
	}); err != nil {
		log.Fatal(err)
	}
	ms, _ := st.Conversation(ctx, s.ID, store.ViewActive)
	for _, m := range ms {
		fmt.Println(m.Role+":", m.Content)
	}
	hits, _ := st.Search(ctx, store.SearchQuery{Text: "character", NoContext: true})
	fmt.Println(len(hits), "hit in", hits[0].SessionID)
	// Output:
	// user: Why does the tokenizer split CJK text?
	// assistant: It falls back to one token per character.
	// 1 hit in 20260101_120000_abcdef
}
