package storetest

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// testBeginTurn: BeginTurn takes the lease and appends the turn's first messages in one write
// when the history is still the one they were made for; otherwise it takes the lease alone; and
// an error leaves neither. The messages land after the history, in order, under the new lease,
// which fences everyone else from then on.
func testBeginTurn(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "conv"})
	mustAppend(t, st, "conv", user("q1"), assistant("a1"))
	view := mustConversation(t, st, "conv", store.ViewActive)

	// Held by a live foreign holder: an error, nothing appended, the holder's lease intact.
	x, err := st.AcquireLease(bg, "conv", "holder-x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, ids, err := st.BeginTurn(bg, "conv", "holder-a", time.Minute, store.StartOf(view, []store.Message{user("q2 while x holds it")}))
	wantErr(t, err, store.ErrLeaseHeld, "begin while another holds the lease")
	if ids != nil {
		t.Fatalf("ids %v with an error", ids)
	}
	if got := contents(mustConversation(t, st, "conv", store.ViewAll)); !equalStrings(got, []string{"q1", "a1"}) {
		t.Fatalf("transcript %q: a refused begin landed", got)
	}
	if err := st.ReleaseLease(bg, x); err != nil {
		t.Fatal(err)
	}

	// The view is current: the lease and the messages, in order, after the history.
	a, ids, err := st.BeginTurn(bg, "conv", "holder-a", time.Minute, store.StartOf(view, []store.Message{user("q2"), user("q2 more")}))
	if err != nil || len(ids) != 2 || ids[0] <= view[1].ID || ids[1] <= ids[0] || a.Holder != "holder-a" || a.Generation != x.Generation+1 || a.ConversationID != "conv" {
		t.Fatalf("begin on a current view: lease %+v, ids %v, %v", a, ids, err)
	}
	ms := mustConversation(t, st, "conv", store.ViewActive)
	if !equalStrings(contents(ms), []string{"q1", "a1", "q2", "q2 more"}) || ms[2].ID != ids[0] || ms[3].ID != ids[1] {
		t.Fatalf("transcript %q, ids %v", contents(ms), ids)
	}
	expectCounts(t, st, "conv", 4, 0)
	// The lease is a's: others are refused, the old holder's writes are fenced off.
	_, err = st.AcquireLease(bg, "conv", "holder-b", time.Minute)
	wantErr(t, err, store.ErrLeaseHeld, "acquire after a begin")
	_, err = st.CommitTurn(bg, "conv", x, store.TurnWrite{Messages: []store.Message{assistant("stale x")}, Release: true})
	wantErr(t, err, store.ErrLeaseLost, "a commit under the generation before the begin")
	// The same holder beginning again extends its own lease (same generation) and appends on
	// its current view.
	again, ids, err := st.BeginTurn(bg, "conv", "holder-a", time.Minute, store.StartOf(ms, []store.Message{user("q2 again")}))
	if err != nil || again.Generation != a.Generation || len(ids) != 1 {
		t.Fatalf("the holder beginning again: %+v %v %v", again, ids, err)
	}
	// The turn ends with a commit under the lease; a turn that fails after its begin still has
	// its messages (its release is all that follows).
	if _, err := st.CommitTurn(bg, "conv", a, store.TurnWrite{Messages: []store.Message{assistant("a2")}, Release: true}); err != nil {
		t.Fatalf("commit after the begin: %v", err)
	}
	view = mustConversation(t, st, "conv", store.ViewActive)
	f, ids, err := st.BeginTurn(bg, "conv", "holder-f", time.Minute, store.StartOf(view, []store.Message{user("q3, the model then fails")}))
	if err != nil || len(ids) != 1 {
		t.Fatalf("begin: %v %v", ids, err)
	}
	if err := st.ReleaseLease(bg, f); err != nil {
		t.Fatal(err)
	}
	want := []string{"q1", "a1", "q2", "q2 more", "q2 again", "a2", "q3, the model then fails"}
	if got := contents(mustConversation(t, st, "conv", store.ViewAll)); !equalStrings(got, want) {
		t.Fatalf("transcript %q, want %q", got, want)
	}

	// A view that is not the history any more: the lease alone, nothing appended.
	view = mustConversation(t, st, "conv", store.ViewActive)
	stale := []struct {
		name  string
		start store.TurnStart
	}{
		{"an older newest message", store.StartOf(view[:len(view)-1], []store.Message{user("stale")})},
		{"another count", store.TurnStart{Messages: []store.Message{user("stale")}, LastID: view[len(view)-1].ID, Active: len(view) + 1}},
		{"an empty view of a history", store.StartOf(nil, []store.Message{user("stale")})},
	}
	for _, tc := range stale {
		l, ids, err := st.BeginTurn(bg, "conv", "holder-s", time.Minute, tc.start)
		if err != nil || ids != nil || l.Holder != "holder-s" {
			t.Fatalf("%s: lease %+v, ids %v, %v; want the lease alone", tc.name, l, ids, err)
		}
		_, err = st.AcquireLease(bg, "conv", "holder-b", time.Minute)
		wantErr(t, err, store.ErrLeaseHeld, tc.name+": the lease was not taken")
		if err := st.ReleaseLease(bg, l); err != nil {
			t.Fatal(err)
		}
	}
	// A message hidden in the middle keeps the newest id but not the count.
	if _, err := Hide(bg, st, "conv", view[2].ID); err != nil {
		t.Fatal(err)
	}
	l, ids, err := st.BeginTurn(bg, "conv", "holder-s", time.Minute, store.StartOf(view, []store.Message{user("stale")}))
	if err != nil || ids != nil {
		t.Fatalf("after a hide: ids %v, %v; want the lease alone", ids, err)
	}
	if err := st.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}
	if got := contents(mustConversation(t, st, "conv", store.ViewAll)); !equalStrings(got, want) {
		t.Fatalf("transcript %q: a stale begin appended", got)
	}
	expectCounts(t, st, "conv", len(want)-1, 0)

	// Errors leave nothing: a bad message (the lease stays free), a missing session.
	view = mustConversation(t, st, "conv", store.ViewActive)
	_, _, err = st.BeginTurn(bg, "conv", "holder-e", time.Minute, store.StartOf(view, []store.Message{user("fine"), {Role: "bogus", Content: "x"}}))
	wantErr(t, err, store.ErrInvalid, "a bad message")
	if l, err := st.AcquireLease(bg, "conv", "holder-b", time.Minute); err != nil {
		t.Fatalf("a failed begin left the lease taken: %v", err)
	} else if err := st.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}
	_, _, err = st.BeginTurn(bg, "missing", "holder-e", time.Minute, store.StartOf(nil, []store.Message{user("x")}))
	wantErr(t, err, store.ErrNotFound, "a missing session")
	if got := contents(mustConversation(t, st, "conv", store.ViewAll)); !equalStrings(got, want) {
		t.Fatalf("transcript %q: a failed begin landed", got)
	}
	// No messages: AcquireLease.
	if l, ids, err := st.BeginTurn(bg, "conv", "holder-n", time.Minute, store.TurnStart{}); err != nil || ids != nil || l.Holder != "holder-n" {
		t.Fatalf("an empty begin: %+v %v %v", l, ids, err)
	} else if err := st.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}

	// A session closed by compression: the lease (its conversation's) alone; its continuation,
	// on a current view, gets the messages.
	r, err := st.AcquireLease(bg, "conv", "holder-r", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RotateCompaction(bg, store.RotateRequest{ParentID: "conv", Messages: []store.Message{user("summary")},
		Child: store.NewSession{ID: "conv-cont"}}, r.Fence()); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseLease(bg, r); err != nil {
		t.Fatal(err)
	}
	view = mustConversation(t, st, "conv", store.ViewActive)
	l, ids, err = st.BeginTurn(bg, "conv", "holder-c", time.Minute, store.StartOf(view, []store.Message{user("late")}))
	if err != nil || ids != nil || l.ConversationID != "conv" {
		t.Fatalf("begin on a rotated session: %+v %v %v; want the lease alone", l, ids, err)
	}
	tip := mustConversation(t, st, "conv-cont", store.ViewActive)
	l2, ids, err := st.BeginTurn(bg, "conv-cont", "holder-c", time.Minute, store.StartOf(tip, []store.Message{user("on the tip")}))
	if err != nil || len(ids) != 1 || l2.Generation != l.Generation || l2.ConversationID != "conv" {
		t.Fatalf("begin on the continuation under its root's lease: %+v %v %v", l2, ids, err)
	}
	if got := contents(mustConversation(t, st, "conv", store.ViewAll)); !equalStrings(got, want) {
		t.Fatalf("rotated session %q: the begin landed on it", got)
	}
	if got := contents(mustConversation(t, st, "conv-cont", store.ViewActive)); len(got) == 0 || got[len(got)-1] != "on the tip" {
		t.Fatalf("continuation %q", got)
	}
}

// testBeginTurnEqualsAppend: what BeginTurn appends leaves the session (counters, preview, last
// activity) and the rows as AppendBatch of the same messages leaves a twin session.
func testBeginTurnEqualsAppend(t *testing.T, h Harness) {
	st, _ := h.open(t)
	at := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	msg := func(role, text string, sec int) store.Message {
		return store.Message{Role: role, Content: text, Timestamp: at.Add(time.Duration(sec) * time.Second)}
	}
	call := store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "read", Arguments: `{"path":"x"}`}}},
		Timestamp: at.Add(2 * time.Second)}
	steps := [][]store.Message{
		{msg(store.RoleUser, "the first question, long enough to be cut in the preview of a picker, and then some more", 1)},
		{call},
		{{Role: store.RoleTool, ToolCallID: "c1", ToolName: "read", Content: "no answer", Timestamp: at.Add(3 * time.Second)}, msg(store.RoleUser, "second", 4)},
		{msg(store.RoleUser, "本当に", 5)},
	}
	mustCreate(t, st, store.NewSession{ID: "begun", Model: "m"})
	mustCreate(t, st, store.NewSession{ID: "appended", Model: "m"})
	for i, ms := range steps {
		view := mustConversation(t, st, "begun", store.ViewActive)
		l, ids, err := st.BeginTurn(bg, "begun", "holder", time.Minute, store.StartOf(view, ms))
		if err != nil || len(ids) != len(ms) {
			t.Fatalf("step %d: begin: %v %v", i, ids, err)
		}
		if err := st.ReleaseLease(bg, l); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendBatch(bg, "appended", ms); err != nil {
			t.Fatalf("step %d: append: %v", i, err)
		}
		sameSession(t, st, i, "begun", "appended")
	}
	for _, q := range []string{"question", "本当"} {
		hits, err := st.Search(bg, store.SearchQuery{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, h := range hits {
			seen[h.SessionID]++
		}
		if seen["begun"] == 0 || seen["begun"] != seen["appended"] {
			t.Fatalf("search %q: hits %v; want the same on both sessions", q, seen)
		}
	}
}
