package postgres

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// TestRefusedWriteLeavesNothing: an append travels as one pipelined batch whose checks run in
// SQL; a refused one (stale lease, rotated session) must leave no row and no counter change,
// in every query execution mode pgx offers (the pooler-friendly ones included).
func TestRefusedWriteLeavesNothing(t *testing.T) {
	t.Parallel()
	base := pgtest.NewDatabase(t)
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			db, err := Open(bg, base+"&default_query_exec_mode="+mode, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			sid := "s-" + mode
			if _, err := db.CreateSession(bg, store.NewSession{ID: sid}); err != nil {
				t.Fatal(err)
			}
			a, err := db.AcquireLease(bg, sid, "a", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Append(bg, sid, store.Message{Role: store.RoleUser, Content: "by a"}, store.WithLease(a)); err != nil {
				t.Fatal(err)
			}
			if err := db.ReleaseLease(bg, a); err != nil {
				t.Fatal(err)
			}
			if _, err := db.AcquireLease(bg, sid, "b", time.Minute); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				_, err := db.AppendBatch(bg, sid, []store.Message{{Role: store.RoleUser, Content: "stale"},
					{Role: store.RoleAssistant, Content: "stale", ToolCalls: []store.ToolCall{{ID: "c", Function: store.ToolFunction{Name: "t"}}}}},
					store.WithLease(a))
				if !errors.Is(err, store.ErrLeaseLost) {
					t.Fatalf("stale batch: %v", err)
				}
			}
			_, err = db.Append(bg, "missing-"+mode, store.Message{Role: store.RoleUser, Content: "x"})
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("append to a missing session: %v", err)
			}
			s, err := db.GetSession(bg, sid)
			if err != nil || s.MessageCount != 1 || s.ToolCallCount != 0 {
				t.Fatalf("after refused writes: %+v %v", s, err)
			}
			ms, _ := db.Conversation(bg, sid, store.ViewAll)
			if len(ms) != 1 {
				t.Fatalf("refused writes left rows: %+v", ms)
			}
			if problems, err := db.Check(bg); err != nil || len(problems) > 0 {
				t.Fatalf("check: %v %v", problems, err)
			}
		})
	}
}
