package sqlite

import (
	"fmt"
	"testing"

	"github.com/spoolhq/spool/store"
)

// BenchmarkTurnReads is what a gateway turn reads from the store, in order (the route, the
// session and its tip, then the agent's session, history, prompt and last call), on one of 64
// sessions of 40 messages whose rows interleave, with another session's append before each
// turn, as the other turns' writes do: every read starts on a changed database.
func BenchmarkTurnReads(b *testing.B) {
	db := benchDB(b)
	const sessions, size = 64, 40
	for s := range sessions {
		id := fmt.Sprint("s", s)
		if _, err := db.CreateSession(bg, store.NewSession{ID: id}); err != nil {
			b.Fatal(err)
		}
		if _, err := db.SetSystemPrompt(bg, id, benchText); err != nil {
			b.Fatal(err)
		}
		if err := db.PutRoute(bg, store.Route{Key: "key-" + id, SessionID: id}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range size / 2 {
		for s := range sessions {
			id := fmt.Sprint("s", s)
			if _, err := db.AppendBatch(bg, id, []store.Message{{Role: store.RoleUser, Content: fmt.Sprint("question ", i)},
				{Role: store.RoleAssistant, Content: benchText[:200]}}); err != nil {
				b.Fatal(err)
			}
			if err := db.RecordRequest(bg, id, store.RequestRecord{Model: "m", Usage: store.Usage{InputTokens: 100, OutputTokens: 10}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := db.Append(bg, fmt.Sprint("s", (i+1)%sessions), store.Message{Role: store.RoleUser, Content: "other"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		id := fmt.Sprint("s", i%sessions)
		if _, err := db.GetRoute(bg, "key-"+id); err != nil {
			b.Fatal(err)
		}
		if _, err := db.GetSession(bg, id); err != nil {
			b.Fatal(err)
		}
		if _, err := db.ResumeTarget(bg, id); err != nil {
			b.Fatal(err)
		}
		if _, err := db.GetSession(bg, id); err != nil {
			b.Fatal(err)
		}
		if ms, err := db.Conversation(bg, id, store.ViewActive); err != nil || len(ms) < size {
			b.Fatal(err, len(ms))
		}
		if _, err := db.SystemPrompt(bg, id); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Requests(bg, id, 1); err != nil {
			b.Fatal(err)
		}
	}
}
