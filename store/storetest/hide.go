package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// testHideMessage: removing one message supersedes it (kept in ViewAll, gone from the model's
// view, the display and search), takes an assistant's tool results with it, hides compaction
// copies together, keeps counters right, refuses summaries and lone tool results, and is
// fenced by the turn lease.
func testHideMessage(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "hm"})
	ids := mustAppend(t, st, "hm",
		user("keep one"), assistant("answer one"),
		user("drop this zebra"), callingAssistant("looking", toolCall("c1", "t", "{}"), toolCall("c2", "t", "{}")),
		toolResult("c1", "t", "r1"), toolResult("c2", "t", "r2"), assistant("answer two"),
		user("keep three"))
	expectCounts(t, st, "hm", 8, 2)

	n, err := Hide(bg, st, "hm", ids[2])
	if err != nil || n != 1 {
		t.Fatalf("hide a user message = %d, %v; want 1 row", n, err)
	}
	if hits, _ := st.Search(bg, store.SearchQuery{Text: "zebra"}); len(hits) != 0 {
		t.Fatalf("a removed message is still searchable: %+v", hits)
	}
	n, err = Hide(bg, st, "hm", ids[3])
	if err != nil || n != 3 {
		t.Fatalf("hide an assistant with two tool calls = %d, %v; want it and its 2 results", n, err)
	}
	want := []string{"keep one", "answer one", "answer two", "keep three"}
	for _, v := range []store.View{store.ViewActive, store.ViewDisplay} {
		if got := contents(mustConversation(t, st, "hm", v)); !equalStrings(got, want) {
			t.Fatalf("view %d after removal = %q, want %q", v, got, want)
		}
	}
	if all := mustConversation(t, st, "hm", store.ViewAll); len(all) != 8 {
		t.Fatalf("removal destroyed rows: ViewAll has %d, want 8", len(all))
	}
	expectCounts(t, st, "hm", 4, 0)

	_, err = Hide(bg, st, "hm", ids[2])
	wantErr(t, err, store.ErrNotFound, "removing a message twice")
	_, err = Hide(bg, st, "hm", ids[7]+1000)
	wantErr(t, err, store.ErrNotFound, "removing a missing message")
	_, err = Hide(bg, st, "missing", ids[0])
	wantErr(t, err, store.ErrNotFound, "removing from a missing session")
	mustCreate(t, st, store.NewSession{ID: "other"})
	_, err = Hide(bg, st, "other", ids[0])
	wantErr(t, err, store.ErrNotFound, "removing another session's message")

	// A lone tool result is refused, history unchanged.
	tids := mustAppend(t, st, "hm", callingAssistant("", toolCall("c3", "t", "{}")), toolResult("c3", "t", "r3"))
	_, err = Hide(bg, st, "hm", tids[1])
	wantErr(t, err, store.ErrInvalid, "removing a tool result alone")
	expectCounts(t, st, "hm", 6, 1)

	hideFenced(t, st, ids[0])
	if cp, ok := also[CompactStore](st); ok {
		hideCopies(t, st, cp)
	}
	expectHealthy(t, st)
}

// hideFenced: a superseded lease removes nothing.
func hideFenced(t *testing.T, st BaseBackend, id int64) {
	t.Helper()
	a, err := st.AcquireLease(bg, "hm", "holder-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseLease(bg, a); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcquireLease(bg, "hm", "holder-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = st.HideMessage(bg, "hm", id, a.Fence())
	wantErr(t, err, store.ErrLeaseLost, "removal with a superseded lease")
	expectCounts(t, st, "hm", 6, 1)
}

// hideCopies: the head a compaction carried verbatim and its archived original go together, and
// a summary cannot be removed.
func hideCopies(t *testing.T, st BaseBackend, cp CompactStore) {
	t.Helper()
	mustCreate(t, st, store.NewSession{ID: "hc"})
	mustAppend(t, st, "hc", user("head ask"), assistant("head answer"), user("later"))
	active := mustConversation(t, st, "hc", store.ViewActive)
	msgs := append(slices.Clone(active[:2]), store.Message{Role: store.RoleUser, Summary: true, Content: "[CONTEXT COMPACTION] s"})
	if _, err := Compact(bg, cp, store.CompactRequest{SessionID: "hc", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	after := mustConversation(t, st, "hc", store.ViewActive)
	if len(after) != 3 || !after[2].Summary {
		t.Fatalf("compacted view = %+v", contents(after))
	}
	_, err := Hide(bg, st, "hc", after[2].ID)
	wantErr(t, err, store.ErrInvalid, "removing a summary")
	if n, err := Hide(bg, st, "hc", after[0].ID); err != nil || n != 2 {
		t.Fatalf("hide a compaction copy = %d, %v; want the copy and its archived original", n, err)
	}
	for _, v := range []store.View{store.ViewActive, store.ViewDisplay} {
		if got := contents(mustConversation(t, st, "hc", v)); slices.Contains(got, "head ask") {
			t.Fatalf("view %d still shows the removed head: %q", v, got)
		}
	}
}
