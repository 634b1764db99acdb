package recall_test

import (
	"context"
	"fmt"
	"log"

	"github.com/spoolhq/spool/recall"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// session_search's discover mode: the sessions about a query, with the matching message.
func ExampleDiscover() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	for id, text := range map[string]string{
		"20260101_090000_aaaaaa": "The deploy key rotates every Friday.",
		"20260102_090000_bbbbbb": "Lunch is at noon.",
	} {
		if _, err := st.CreateSession(ctx, store.NewSession{ID: id, Source: "cli"}); err != nil {
			log.Fatal(err)
		}
		if _, err := st.Append(ctx, id, store.Message{Role: store.RoleUser, Content: text}); err != nil {
			log.Fatal(err)
		}
	}
	d, err := recall.Discover(ctx, st, recall.Request{Query: "deploy key", Limit: 3, Window: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Count, d.Results[0].SessionID)
	// Output:
	// 1 20260101_090000_aaaaaa
}
