package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/storetest"
)

// TestDeleteItemFenced: removing an item waits for the conversation's turn like any write: a
// turn running in this process or a turn lease held by another process makes it *BusyError
// (409) and changes nothing; free, it hides the row. Another principal gets ErrNotFound and a
// lone tool result is a bad request.
func TestDeleteItemFenced(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	g, r, st := newTestGateway(t, Config{})
	s, err := g.CreateConversation(bg, "p", []Message{{Role: "user", Content: "drop me"}, {Role: "assistant", Content: "ok"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := st.Conversation(bg, s.ID, store.ViewActive)
	if err != nil || len(ms) != 2 {
		t.Fatalf("conversation: %+v %v", ms, err)
	}
	drop := ms[0].ID
	active := func() int {
		ms, err := st.Conversation(bg, s.ID, store.ViewActive)
		if err != nil {
			t.Fatal(err)
		}
		return len(ms)
	}

	done := make(chan error, 1)
	go func() {
		_, err := g.Turn(bg, Request{Principal: "p", SessionID: s.ID, Messages: []Message{{Role: "user", Content: "running"}}}, Sink{})
		done <- err
	}()
	<-r.started
	var busy *BusyError
	if err := g.DeleteItem(bg, "p", s.ID, drop); !errors.As(err, &busy) {
		t.Fatalf("delete during a turn: %v, want *BusyError", err)
	}
	close(r.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := active()

	// Another process's turn: its lease is held in the store.
	l, err := st.AcquireLease(bg, s.ID, "other-process", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteItem(bg, "p", s.ID, drop); !errors.As(err, &busy) {
		t.Fatalf("delete while another process holds the lease: %v, want *BusyError", err)
	}
	if got := active(); got != n {
		t.Fatalf("a refused delete changed the history: %d rows, want %d", got, n)
	}
	if err := st.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}

	if err := g.DeleteItem(bg, "q", s.ID, drop); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another principal's delete: %v, want ErrNotFound", err)
	}
	if err := g.DeleteItem(bg, "p", s.ID, drop); err != nil {
		t.Fatal(err)
	}
	if got := active(); got != n-1 {
		t.Fatalf("after the delete %d active rows, want %d", got, n-1)
	}
	if err := g.DeleteItem(bg, "p", s.ID, drop); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting twice: %v, want ErrNotFound", err)
	}
	ids, err := st.AppendBatch(bg, s.ID, []store.Message{
		{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "f", Arguments: "{}"}}}},
		{Role: store.RoleTool, ToolCallID: "c1", ToolName: "f", Content: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	var bad *BadRequestError
	if err := g.DeleteItem(bg, "p", s.ID, ids[1]); !errors.As(err, &bad) {
		t.Fatalf("deleting a lone tool result: %v, want *BadRequestError", err)
	}
}

// TestDeleteItemAfterRotation: a rotation copies the messages it keeps into the continuation;
// deleting the item (by the older session's conversation id or by the tip's) hides every copy,
// so neither listing shows it and the tip's history, what the model is sent, no longer holds it.
func TestDeleteItemAfterRotation(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	for _, via := range []string{"root", "tip"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			g, _, st := newTestGateway(t, Config{})
			root, err := g.CreateConversation(bg, "p", []Message{
				{Role: "user", Content: "old question"}, {Role: "assistant", Content: "old answer"},
				{Role: "user", Content: "the door code is zebra-4711"}, {Role: "assistant", Content: "noted"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ms, err := st.Conversation(bg, root.ID, store.ViewActive)
			if err != nil || len(ms) != 4 {
				t.Fatalf("conversation: %+v %v", ms, err)
			}
			// The rotation keeps the last exchange verbatim (same role, text and time) after a summary.
			kept := []store.Message{{Role: store.RoleUser, Summary: true, Content: "summary of the old exchange", Timestamp: ms[1].Timestamp}}
			for _, m := range ms[2:] {
				m.ID, m.SessionID = 0, ""
				kept = append(kept, m)
			}
			tip, err := storetest.Rotate(bg, st, store.RotateRequest{ParentID: root.ID, Messages: kept, Watermark: ms[3].ID,
				Child: store.NewSession{ID: root.ID + "-cont", UserID: "p", Source: Source}})
			if err != nil {
				t.Fatal(err)
			}
			tipRows, err := st.Conversation(bg, tip.ID, store.ViewActive)
			if err != nil || len(tipRows) != 3 || tipRows[1].Content != "the door code is zebra-4711" {
				t.Fatalf("tip after the rotation: %+v %v", tipRows, err)
			}
			conv, mid := root.ID, ms[2].ID
			if via == "tip" {
				conv, mid = tip.ID, tipRows[1].ID
			}
			if err := g.DeleteItem(bg, "p", conv, mid); err != nil {
				t.Fatal(err)
			}
			for _, sid := range []string{root.ID, tip.ID} {
				for _, v := range []store.View{store.ViewActive, store.ViewDisplay} {
					rows, err := st.Conversation(bg, sid, v)
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range rows {
						if m.Content == "the door code is zebra-4711" {
							t.Fatalf("deleted via %s, still shown in %s (view %d): %+v", via, sid, v, rows)
						}
					}
				}
			}
			// Only the item's copies went: the rest of the tip stays.
			if rows, _ := st.Conversation(bg, tip.ID, store.ViewActive); len(rows) != 2 || rows[1].Content != "noted" {
				t.Fatalf("tip after the delete: %+v", rows)
			}
			if err := g.DeleteItem(bg, "p", conv, mid); !errors.Is(err, ErrNotFound) {
				t.Fatalf("deleting twice: %v, want ErrNotFound", err)
			}
		})
	}
}

// TestDeleteConversationWaitsForTurns: deleting a conversation while a turn holds its lease (in
// this process or another) is *BusyError and deletes nothing; once the turn is over it goes.
func TestDeleteConversationWaitsForTurns(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	g, r, st := newTestGateway(t, Config{})
	s, err := g.CreateConversation(bg, "p", []Message{{Role: "user", Content: "keep me"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := g.Turn(bg, Request{Principal: "p", SessionID: s.ID, Messages: []Message{{Role: "user", Content: "running"}}}, Sink{})
		done <- err
	}()
	<-r.started
	var busy *BusyError
	if err := g.DeleteConversation(bg, "p", s.ID); !errors.As(err, &busy) {
		t.Fatalf("delete during a turn: %v, want *BusyError", err)
	}
	close(r.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(bg, s.ID, "other-host/4242/turn", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteConversation(bg, "p", s.ID); !errors.As(err, &busy) {
		t.Fatalf("delete while another process holds the lease: %v, want *BusyError", err)
	}
	if _, err := st.GetSession(bg, s.ID); err != nil {
		t.Fatalf("a refused delete removed the session: %v", err)
	}
	if err := st.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteConversation(bg, "p", s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetSession(bg, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the delete: %v, want ErrNotFound", err)
	}
}
