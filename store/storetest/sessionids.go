package storetest

import (
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// testGeneratedIDs: a generated session id that another session already has is drawn again,
// for a new session, a branch and a compaction's continuation. CreateSession ensures an id it
// is given, so a collision there would hand an existing session to a second caller; Branch and
// RotateCompaction would fail with ErrExists. It replaces the ids' random source, so Run runs it
// before the parallel tests.
func testGeneratedIDs(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	started := time.Date(2026, 11, 29, 15, 42, 33, 0, time.UTC)
	const taken = "20261129_154233_a3f9c1"
	// After next(), the next two draws name the taken id (a backend may draw once before its
	// transaction and again in it), then the source is random again.
	var mu sync.Mutex
	collide := 0
	restore := store.SetSessionIDSource(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if collide > 0 {
			collide--
			copy(b, []byte{0xa3, 0xf9, 0xc1})
			return len(b), nil
		}
		return rand.Read(b)
	})
	defer restore()
	next := func() {
		mu.Lock()
		collide = 2
		mu.Unlock()
	}
	next()
	if id := store.NewSessionID(started); id != taken {
		t.Fatalf("scripted id %s, want %s", id, taken)
	}

	if _, err := st.CreateSession(bg, store.NewSession{ID: taken, StartedAt: started, Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, taken, user("the taken session's own message"))
	// The parent of the branch and the continuation is another session: their ids collide with
	// taken, not with their parent.
	if _, err := st.CreateSession(bg, store.NewSession{ID: "parent", StartedAt: started, Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, "parent", user("the parent's message"))

	next()
	second, err := st.CreateSession(bg, store.NewSession{StartedAt: started, Source: "telegram"})
	if err != nil || second.ID == taken || second.Source != "telegram" || second.MessageCount != 0 {
		t.Fatalf("second session %+v, %v: want a fresh session, not the taken one", second, err)
	}

	next()
	branch, err := st.Branch(bg, "parent", store.NewSession{StartedAt: started})
	if err != nil || branch.ID == taken || branch.ParentID != "parent" || branch.Relation != store.RelationBranch {
		t.Fatalf("branch %+v, %v: want a new child of parent", branch, err)
	}

	made := []string{second.ID, branch.ID}
	if cp, ok := also[CompactStore](st); ok {
		next()
		cont, err := Rotate(bg, cp, store.RotateRequest{ParentID: "parent",
			Messages: []store.Message{{Role: store.RoleAssistant, Content: "summary", Summary: true}},
			Child:    store.NewSession{StartedAt: started}})
		if err != nil || cont.ID == taken || cont.ParentID != "parent" || cont.Relation != store.RelationCompression {
			t.Fatalf("continuation %+v, %v: want a new child of parent", cont, err)
		}
		made = append(made, cont.ID)
	}
	if got := contents(mustConversation(t, st, taken, store.ViewActive)); !equalStrings(got, []string{"the taken session's own message"}) {
		t.Fatalf("the taken session changed: %q", got)
	}
	// A child's generated id is never its parent's.
	next()
	if id := store.NewChildSessionID(started, taken); id == taken {
		t.Fatalf("NewChildSessionID gave the parent's id %s", id)
	}
	ids := map[string]bool{taken: true, "parent": true}
	for _, id := range made {
		if ids[id] {
			t.Fatalf("id %s given twice: %v", id, made)
		}
		ids[id] = true
	}
}
