package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// History edits outside a turn, for tests (this suite's and other packages'): each takes the
// conversation's turn lease for the one edit (store.UnderLease), as the product's callers do,
// so a test states only what it edits. A conversation whose lease is held elsewhere returns
// the holder's *store.LeaseHeldError.

// EditStore is what Undo and Hide need of a backend.
type EditStore interface {
	store.Transcript
	store.LeaseTaker
}

// CompactStore is what Compact and Rotate need of a backend.
type CompactStore interface {
	store.Compactor
	store.LeaseTaker
}

// Undo is UndoLastExchange under a lease of its own.
func Undo(ctx context.Context, st EditStore, sid string) (int, error) {
	return store.UnderLease(ctx, st, sid, func(f store.Fence) (int, error) {
		return st.UndoLastExchange(ctx, sid, f)
	})
}

// Hide is HideMessage under a lease of its own.
func Hide(ctx context.Context, st EditStore, sid string, id int64, opts ...store.WriteOption) (int, error) {
	return store.UnderLease(ctx, st, sid, func(f store.Fence) (int, error) {
		return st.HideMessage(ctx, sid, id, f, opts...)
	})
}

// Compact is ArchiveAndCompact under a lease of its own.
func Compact(ctx context.Context, st CompactStore, req store.CompactRequest) (int, error) {
	return store.UnderLease(ctx, st, req.SessionID, func(f store.Fence) (int, error) {
		return st.ArchiveAndCompact(ctx, req, f)
	})
}

// Rotate is RotateCompaction under a lease of its own.
func Rotate(ctx context.Context, st CompactStore, req store.RotateRequest) (store.Session, error) {
	return store.UnderLease(ctx, st, req.ParentID, func(f store.Fence) (store.Session, error) {
		return st.RotateCompaction(ctx, req, f)
	})
}

// testStaleFence: each history edit made with a fence that is not the conversation's current
// lease (released, superseded by another holder, another conversation's, the zero Fence) fails
// with ErrLeaseLost and changes nothing: not the rows, not the session, no continuation. The
// same edit with the current lease's fence lands.
func testStaleFence(t *testing.T, h Harness) {
	st, _ := h.open(t)
	edits := []struct {
		name string
		edit func(sid string, f store.Fence) error
	}{
		{"undo", func(sid string, f store.Fence) error {
			_, err := st.UndoLastExchange(bg, sid, f)
			return err
		}},
		{"hide", func(sid string, f store.Fence) error {
			ms := mustConversation(t, st, sid, store.ViewActive)
			_, err := st.HideMessage(bg, sid, ms[1].ID, f)
			return err
		}},
		{"compact", func(sid string, f store.Fence) error {
			_, err := st.ArchiveAndCompact(bg, store.CompactRequest{SessionID: sid, Messages: []store.Message{user("summary")}}, f)
			return err
		}},
		{"rotate", func(sid string, f store.Fence) error {
			_, err := st.RotateCompaction(bg, store.RotateRequest{ParentID: sid, Messages: []store.Message{user("summary")},
				Child: store.NewSession{ID: sid + "-next"}}, f)
			return err
		}},
	}
	fences := []struct {
		name  string
		fence func(t *testing.T, sid string) store.Fence
	}{
		{"released", func(t *testing.T, sid string) store.Fence {
			a := mustLease(t, st, sid, "holder-a")
			if err := st.ReleaseLease(bg, a); err != nil {
				t.Fatal(err)
			}
			return a.Fence()
		}},
		{"superseded", func(t *testing.T, sid string) store.Fence {
			a := mustLease(t, st, sid, "holder-a")
			if err := st.ReleaseLease(bg, a); err != nil {
				t.Fatal(err)
			}
			mustLease(t, st, sid, "holder-b")
			return a.Fence()
		}},
		{"other-conversation", func(t *testing.T, sid string) store.Fence {
			mustCreate(t, st, store.NewSession{ID: sid + "-other"})
			return mustLease(t, st, sid+"-other", "holder-a").Fence()
		}},
		{"zero", func(*testing.T, string) store.Fence { return store.Fence{} }},
	}
	for _, e := range edits {
		for _, fc := range fences {
			t.Run(e.name+"/"+fc.name, func(t *testing.T) {
				sid := e.name + "-" + fc.name
				mustCreate(t, st, store.NewSession{ID: sid})
				mustAppend(t, st, sid, user("one"), assistant("two"), user("three"), assistant("four"))
				f := fc.fence(t, sid)
				sess, all := mustSession(t, st, sid), mustConversation(t, st, sid, store.ViewAll)
				wantErr(t, e.edit(sid, f), store.ErrLeaseLost, e.name+" with a "+fc.name+" fence")
				if got := mustSession(t, st, sid); !reflect.DeepEqual(got, sess) {
					t.Fatalf("a refused %s changed the session:\n%+v\n%+v", e.name, sess, got)
				}
				if got := mustConversation(t, st, sid, store.ViewAll); !reflect.DeepEqual(got, all) {
					t.Fatalf("a refused %s changed the rows:\n%v\n%v", e.name, contents(all), contents(got))
				}
				if kids, err := st.Children(bg, sid); err != nil || len(kids) != 0 {
					t.Fatalf("a refused %s left %d children (%v)", e.name, len(kids), err)
				}
			})
		}
		t.Run(e.name+"/current", func(t *testing.T) {
			sid := e.name + "-current"
			mustCreate(t, st, store.NewSession{ID: sid})
			mustAppend(t, st, sid, user("one"), assistant("two"), user("three"), assistant("four"))
			if err := e.edit(sid, mustLease(t, st, sid, "holder-a").Fence()); err != nil {
				t.Fatalf("%s with the current lease's fence: %v", e.name, err)
			}
		})
	}
}

func mustLease(t *testing.T, st store.Backend, sid, holder string) store.Lease {
	t.Helper()
	l, err := st.AcquireLease(bg, sid, holder, time.Minute)
	if err != nil {
		t.Fatalf("lease %s for %s: %v", sid, holder, err)
	}
	return l
}
