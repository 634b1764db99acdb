package storetest

import (
	"slices"
	"testing"

	"github.com/spoolhq/spool/store"
)

// testShownCounts: Session.Shown counts the conversation a person had through a compaction in
// place (every message once, the verbatim head copy as its original, no summary), the same in
// GetSession and in both listings, while MessageCount stays the model's view.
func testShownCounts(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "sc"})
	mustAppend(t, st, "sc", user("head ask"), assistant("head answer"),
		user("middle ask"), callingAssistant("looking", toolCall("c1", "t", "{}"), toolCall("c2", "t", "{}")),
		store.Message{Role: store.RoleTool, ToolCallID: "c1", ToolName: "t", Content: "r1"},
		store.Message{Role: store.RoleTool, ToolCallID: "c2", ToolName: "t", Content: "r2"},
		assistant("middle answer"), user("last ask"), callingAssistant("last", toolCall("c3", "t", "{}")))
	want := store.Shown{Messages: 9, ToolCalls: 3}
	check := func(when string, wantActive int) {
		t.Helper()
		s, err := st.GetSession(bg, "sc")
		if err != nil {
			t.Fatal(err)
		}
		if s.Shown != want || s.MessageCount != wantActive {
			t.Fatalf("%s: GetSession shown %+v, active %d; want %+v, %d", when, s.Shown, s.MessageCount, want, wantActive)
		}
		for _, o := range []store.ListOptions{{}, {Trees: true}} {
			ls, err := st.ListSessions(bg, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(ls) != 1 || ls[0].Shown != want {
				t.Fatalf("%s: listing (trees %v) shown %+v; want %+v", when, o.Trees, ls, want)
			}
		}
	}
	check("before compaction", 9)

	// Head copied verbatim, a summary, the last two rows carried as the tail.
	active := mustConversation(t, st, "sc", store.ViewActive)
	msgs := append(slices.Clone(active[:2]), store.Message{Role: store.RoleUser, Summary: true, Content: "[CONTEXT COMPACTION] s"})
	msgs = append(msgs, active[7:]...)
	if _, err := Compact(bg, st, store.CompactRequest{SessionID: "sc", Messages: msgs,
		Watermark: active[len(active)-1].ID, TailCount: 2}); err != nil {
		t.Fatal(err)
	}
	check("after compaction", 5)

	// A message after the compaction counts once more.
	mustAppend(t, st, "sc", user("new ask"))
	want.Messages++
	check("after a new message", 6)
}
