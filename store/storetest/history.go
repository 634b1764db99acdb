package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// historyOps are the changes testHistoryStaysCurrent makes to a session's active history:
// appends, and every way rows already loaded change or go away.
var historyOps = []string{"recreate", "append", "commit", "hide", "append", "undo", "append", "compact", "append", "recreate", "append"}

// changeHistory makes one of historyOps on session sid.
func changeHistory(ctx context.Context, st store.Backend, op, sid string) error {
	switch op {
	case "append":
		_, err := st.AppendBatch(ctx, sid, []store.Message{user("appended " + sid), assistant("answered")})
		return err
	case "commit":
		l, err := st.AcquireLease(ctx, sid, "history-test", time.Minute)
		if err != nil {
			return err
		}
		_, err = st.CommitTurn(ctx, sid, l, store.TurnWrite{Messages: []store.Message{user("committed"), assistant("commit answer")},
			Requests: []store.RequestRecord{{Model: "m", Usage: store.Usage{InputTokens: 5}}}, Release: true})
		return err
	case "hide":
		ms, err := st.Conversation(ctx, sid, store.ViewActive)
		if err != nil {
			return err
		}
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].Role == store.RoleAssistant {
				_, err := Hide(ctx, st, sid, ms[i].ID)
				return err
			}
		}
		return fmt.Errorf("no assistant message to hide")
	case "undo":
		_, err := Undo(ctx, st, sid)
		return err
	case "compact":
		_, err := Compact(ctx, st, store.CompactRequest{SessionID: sid,
			Messages: []store.Message{{Role: store.RoleUser, Content: "summary of what came before", Summary: true}, assistant("noted")}})
		return err
	case "recreate":
		if err := st.DeleteSession(ctx, sid); err != nil {
			return err
		}
		if _, err := st.CreateSession(ctx, store.NewSession{ID: sid}); err != nil {
			return err
		}
		_, err := st.AppendBatch(ctx, sid, []store.Message{user("a new session under the old id")})
		return err
	}
	return fmt.Errorf("unknown history op %q", op)
}

// testHistoryStaysCurrent: a store handle that loaded a session's active history loads it again
// exactly as a fresh handle does after every kind of change (appends, commits, hidden and undone
// messages, a compaction, the session deleted and made again under its id), made by the same
// handle or by another process: a backend may keep histories between loads, never serve a
// stale one.
func testHistoryStaysCurrent(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	const sid = "history"
	mustCreate(t, st, store.NewSession{ID: sid})
	if _, err := st.AppendBatch(bg, sid, []store.Message{user("first"), assistant("first answer")}); err != nil {
		t.Fatal(err)
	}
	fresh := func() []store.Message {
		t.Helper()
		other, err := h.Open(bg, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		ms, err := other.Conversation(bg, sid, store.ViewActive)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	wheres := []string{"this handle", "another process"}
	if h.OneProcess {
		wheres[1] = "another handle"
	}
	for _, where := range wheres {
		for i, op := range historyOps {
			mustConversation(t, st, sid, store.ViewActive) // loaded before the change
			switch where {
			case "this handle":
				if err := changeHistory(bg, st, op, sid); err != nil {
					t.Fatalf("%s: step %d (%s): %v", where, i, op, err)
				}
			case "another handle":
				if err := changeHistory(bg, h.reopen(t, dsn), op, sid); err != nil {
					t.Fatalf("%s: step %d (%s): %v", where, i, op, err)
				}
			default:
				cmd, sc := startChild(t, "history", dsn, op, sid)
				for sc.Scan() {
				}
				if err := cmd.Wait(); err != nil {
					t.Fatalf("%s: step %d (%s): %v", where, i, op, err)
				}
			}
			got, want := mustConversation(t, st, sid, store.ViewActive), fresh()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: step %d (%s): the handle loads %d messages %q, a fresh one %d %q", where, i, op,
					len(got), contents(got), len(want), contents(want))
			}
			// A caller may change what it was given; the next load is not affected.
			if len(got) > 0 {
				got[0].Content = "changed by the caller"
				got = append(got, user("appended by the caller"))
				if again := mustConversation(t, st, sid, store.ViewActive); !reflect.DeepEqual(again, want) {
					t.Fatalf("%s: step %d (%s): a caller's change to its copy shows in the next load: %q", where, i, op, contents(again))
				}
			}
		}
	}
}
