package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
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
