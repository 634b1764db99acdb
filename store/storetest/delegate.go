package storetest

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// testDelegate: a delegated child (relation delegate, source subagent) is its own conversation
// (Root, lease and resume target are itself, so sub-agents run while their caller holds its
// turn lease), is hidden from the default listing, listed by Children, can be ended and reopened
// (a follow-up delegation), and is deleted with its parent.
func testDelegate(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "dg-parent", Source: "cli", StartedAt: at(0)})
	for _, id := range []string{"dg-a", "dg-b"} {
		mustCreate(t, st, store.NewSession{ID: id, Source: "subagent", ParentID: "dg-parent", Relation: store.RelationDelegate,
			ModelConfig: []byte(`{"_delegate_from":"dg-parent"}`), StartedAt: at(10)})
		mustAppend(t, st, id, user("sub-task of "+id))
	}
	parent, err := st.AcquireLease(bg, "dg-parent", "caller", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"dg-a", "dg-b"} {
		if root, err := st.Root(bg, id); err != nil || root != id {
			t.Fatalf("Root(%s) = %q, %v; a delegate child is its own conversation", id, root, err)
		}
		if tip, err := st.ResumeTarget(bg, id); err != nil || tip != id {
			t.Fatalf("ResumeTarget(%s) = %q, %v", id, tip, err)
		}
		l, err := st.AcquireLease(bg, id, "sub-"+id, time.Minute)
		if err != nil || l.ConversationID != id {
			t.Fatalf("the child's lease while the caller holds its own: %+v %v", l, err)
		}
		if _, err := st.Append(bg, id, assistant("done "+id), store.WithLease(l)); err != nil {
			t.Fatalf("fenced append to the child: %v", err)
		}
	}
	if _, err := st.Append(bg, "dg-parent", user("still mine"), store.WithLease(parent)); err != nil {
		t.Fatalf("the caller's lease after its children took theirs: %v", err)
	}
	ls, err := st.ListSessions(bg, store.ListOptions{})
	if err != nil || len(ls) != 1 || ls[0].ID != "dg-parent" {
		t.Fatalf("default listing = %+v, %v", ls, err)
	}
	kids, err := st.Children(bg, "dg-parent")
	if err != nil || len(kids) != 2 || kids[0].Relation != store.RelationDelegate || kids[0].Source != "subagent" {
		t.Fatalf("children = %+v, %v", kids, err)
	}
	if err := st.EndSession(bg, "dg-a", "delegate_done"); err != nil {
		t.Fatal(err)
	}
	if s, _ := st.GetSession(bg, "dg-a"); s.EndReason != "delegate_done" {
		t.Fatalf("end reason = %q", s.EndReason)
	}
	if err := st.ReopenSession(bg, "dg-a"); err != nil {
		t.Fatal(err)
	}
	if s, _ := st.GetSession(bg, "dg-a"); s.Ended() {
		t.Fatal("reopen left the child ended")
	}
	if err := st.ReleaseLease(bg, parent); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSession(bg, "dg-parent"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"dg-a", "dg-b"} {
		if _, err := st.GetSession(bg, id); err == nil {
			t.Fatalf("delegate child %s outlived its parent", id)
		}
	}
}
