package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
)

// writeCountingStore counts the lease writes a turn makes.
type writeCountingStore struct {
	store.Backend
	acquires, begins, started, commits atomic.Int64
}

func (s *writeCountingStore) AcquireLease(ctx context.Context, id, h string, ttl time.Duration) (store.Lease, error) {
	s.acquires.Add(1)
	return s.Backend.AcquireLease(ctx, id, h, ttl)
}

func (s *writeCountingStore) BeginTurn(ctx context.Context, id, h string, ttl time.Duration, st store.TurnStart) (store.Lease, []int64, error) {
	s.begins.Add(1)
	l, ids, err := s.Backend.BeginTurn(ctx, id, h, ttl, st)
	if len(ids) > 0 {
		s.started.Add(1)
	}
	return l, ids, err
}

func (s *writeCountingStore) CommitTurn(ctx context.Context, id string, l store.Lease, w store.TurnWrite) ([]int64, error) {
	s.commits.Add(1)
	return s.Backend.CommitTurn(ctx, id, l, w)
}

// A turn on an existing session stores its user message with the lease (one write) and its
// answer with the release (one more), and the result is the history a turn in three writes
// made; a turn whose model fails still has its message stored.
func TestTurnStoresItsMessageWithTheLease(t *testing.T) {
	t.Parallel()
	db, _ := newStore(t)
	st := &writeCountingStore{Backend: db}
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
	sid := run(t, a, "", "first").SessionID
	st.acquires.Store(0)
	st.commits.Store(0)
	res := run(t, a, sid, "second")
	if st.begins.Load() != 1 || st.started.Load() != 1 || st.acquires.Load() != 0 || st.commits.Load() != 1 {
		t.Fatalf("writes of a turn: %d begins (%d with the message), %d acquires, %d commits; want 1 (1), 0, 1",
			st.begins.Load(), st.started.Load(), st.acquires.Load(), st.commits.Load())
	}
	if len(res.Messages) != 2 || res.Messages[0].Content != "second" || res.Messages[1].Role != store.RoleAssistant {
		t.Fatalf("result messages %+v", res.Messages)
	}
	if got := roles(history(t, db, sid)); strings.Join(got, " ") != "user assistant user assistant" {
		t.Fatalf("history %v", got)
	}
	// The model fails: the user's message was stored with the lease and stays.
	if _, err := a.Run(context.Background(), sid, "FAULT auth\nSAY never", agent.RunOptions{}); err == nil {
		t.Fatal("the fault did not fail the turn")
	}
	h := history(t, db, sid)
	if len(h) != 5 || !strings.Contains(h[4].Content, "FAULT auth") {
		t.Fatalf("after a failed turn: %v", roles(h))
	}
}

// A history that changed while the turn waited for the lease (another holder answered with a
// call it left open) is not the one the turn read: the message is not stored with the lease,
// the turn loads the history under it and answers the open call first, as it always did.
func TestTurnStartOnAChangedHistory(t *testing.T) {
	t.Parallel()
	db, _ := newStore(t)
	st := &writeCountingStore{Backend: db}
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
	sid := run(t, a, "", "first").SessionID
	other, err := db.AcquireLease(context.Background(), sid, "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	var once atomic.Bool
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), sid, "after the other", agent.RunOptions{OnWait: func(time.Duration, string) {
			if once.CompareAndSwap(false, true) {
				close(waiting) // it read the history and found the lease held
			}
		}})
		done <- err
	}()
	<-waiting
	call := store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "open-1", Type: "function", Function: store.ToolFunction{Name: "read", Arguments: `{"path":"x"}`}}}}
	if _, err := db.CommitTurn(context.Background(), sid, other, store.TurnWrite{Messages: []store.Message{call}, Release: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h := history(t, db, sid)
	got := strings.Join(roles(h), " ")
	if got != "user assistant assistant(1 calls) tool user assistant" || h[3].ToolCallID != "open-1" || h[3].Content != agent.UnansweredResult || h[4].Content != "after the other" {
		t.Fatalf("history %s: %+v", got, h)
	}
	if st.started.Load() != 0 {
		t.Fatalf("%d begins stored their message on a changed history", st.started.Load())
	}
}
