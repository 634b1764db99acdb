package gateway

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// heldRunner answers each turn once the test releases it; it tells when a turn started.
type heldRunner struct {
	st      Store
	started chan string // input of each turn as it starts
	release chan struct{}
}

func (h *heldRunner) Run(ctx context.Context, sid, input string, opts agent.RunOptions) (agent.Result, error) {
	h.started <- input
	select {
	case <-h.release:
	case <-ctx.Done():
		return agent.Result{SessionID: sid, Interrupted: true}, context.Cause(ctx)
	}
	if _, err := h.st.AppendBatch(ctx, sid, []store.Message{{Role: store.RoleUser, Content: input}, {Role: store.RoleAssistant, Content: "re: " + input}}); err != nil {
		return agent.Result{SessionID: sid}, err
	}
	if opts.OnDelta != nil {
		opts.OnDelta(provider.Delta{Content: "re: " + input})
	}
	return agent.Result{SessionID: sid, Reply: "re: " + input}, nil
}

func newTestGateway(t *testing.T, cfg Config) (*Gateway, *heldRunner, store.Backend) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := &heldRunner{st: db, started: make(chan string, 8), release: make(chan struct{})}
	g, err := New(Deps{Store: db, Runner: r, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return g, r, db
}

func ask(sid, text string, busy Busy) Request {
	return Request{SessionID: sid, Messages: []Message{{Role: "user", Content: text}}, Busy: busy}
}

func TestBusyPolicies(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	g, r, _ := newTestGateway(t, Config{})
	first, err := g.resolve(bg, Request{Messages: []Message{{Role: "user", Content: "open"}}})
	if err != nil {
		t.Fatal(err)
	}
	sid := first.sessionID

	done := make(chan error, 4)
	go func() {
		_, err := g.Turn(bg, ask(sid, "one", BusyWait), Sink{})
		done <- err
	}()
	<-r.started
	var busy *BusyError
	if _, err := g.Turn(bg, ask(sid, "rejected", BusyReject), Sink{}); !errors.As(err, &busy) {
		t.Fatalf("reject while busy: %v, want *BusyError", err)
	}
	if _, err := g.Turn(bg, ask(sid, "no wait", BusyWait), Sink{}); !errors.As(err, &busy) {
		t.Fatalf("wait with busy_wait 0: %v, want *BusyError", err)
	}
	// interrupt cancels the running turn and runs after it.
	var got Reply
	go func() {
		var err error
		got, err = g.Turn(bg, ask(sid, "interrupting", BusyInterrupt), Sink{})
		done <- err
	}()
	if err := <-done; !errors.Is(err, ErrInterrupted) {
		t.Fatalf("the interrupted turn ended with %v, want ErrInterrupted", err)
	}
	if in := <-r.started; in != "interrupting" {
		t.Fatalf("after the interrupt %q started", in)
	}
	r.release <- struct{}{}
	if err := <-done; err != nil || got.Result.Reply != "re: interrupting" {
		t.Fatalf("interrupting turn: %+v, %v", got, err)
	}
}

func TestDetachAndDrain(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	g, r, st := newTestGateway(t, Config{})
	ctx, cancel := context.WithCancel(bg)
	var mu sync.Mutex
	var deltas []string
	doneReply := make(chan Reply, 1)
	replied := make(chan Reply, 1)
	go func() {
		rep, _ := g.Turn(ctx, Request{Messages: []Message{{Role: "user", Content: "keep going"}}}, Sink{
			OnDelta: func(d provider.Delta) { mu.Lock(); deltas = append(deltas, d.Content); mu.Unlock() },
			OnDone:  func(rep Reply, _ error) { doneReply <- rep },
		})
		replied <- rep
	}()
	<-r.started
	cancel() // the caller leaves; the turn goes on (Turn returns when it ends)
	// Draining now waits for the detached turn, refusing new ones.
	drained := make(chan error, 1)
	go func() { drained <- g.Drain(bg) }()
	for !g.Draining() {
		runtime.Gosched()
	}
	if _, err := g.Turn(bg, Request{Messages: []Message{{Role: "user", Content: "late"}}}, Sink{}); !errors.Is(err, ErrDraining) {
		t.Fatalf("a turn during the drain: %v, want ErrDraining", err)
	}
	close(r.release)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if rep := <-replied; !rep.Detached || rep.Result.Reply != "" {
		t.Fatalf("Turn after the caller left: %+v, want Detached with nothing", rep)
	}
	final := <-doneReply
	if final.Result.Reply != "re: keep going" {
		t.Fatalf("OnDone after detach: %+v", final)
	}
	mu.Lock()
	if len(deltas) != 0 {
		t.Fatalf("a detached sink heard %v", deltas)
	}
	mu.Unlock()
	msgs, err := st.Conversation(bg, final.SessionID, store.ViewActive)
	if err != nil || len(msgs) != 2 || msgs[1].Content != "re: keep going" {
		t.Fatalf("stored: %+v, %v", msgs, err)
	}
}
