package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/storetest"
)

// TestCountsAfterCompaction: after a compaction in place the sessions page and the session's
// page count the conversation the user had (store.Shown), not the rows the model still sees.
func TestCountsAfterCompaction(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	s, err := st.CreateSession(bg, store.NewSession{Title: "compacted"})
	if err != nil {
		t.Fatal(err)
	}
	var ms []store.Message
	for i := range 20 {
		ms = append(ms, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("ask %d", i)},
			store.Message{Role: store.RoleAssistant, Content: "ok", ToolCalls: []store.ToolCall{{ID: fmt.Sprintf("c%d", i),
				Type: "function", Function: store.ToolFunction{Name: "t", Arguments: "{}"}}}},
			store.Message{Role: store.RoleTool, ToolCallID: fmt.Sprintf("c%d", i), ToolName: "t", Content: "r"})
	}
	ids := mustAppend(t, st, s.ID, ms...)
	if _, err := storetest.Compact(bg, st, store.CompactRequest{SessionID: s.ID, Watermark: ids[len(ids)-1],
		Messages: []store.Message{{Role: store.RoleUser, Summary: true, Content: "[CONTEXT COMPACTION] s"}, {Role: store.RoleAssistant, Content: "next"}}}); err != nil {
		t.Fatal(err)
	}
	_, base := newServer(t, st, Options{})
	c := newClient(t, base)
	list := c.mustGet("/ui/")
	if !strings.Contains(list, `data-label="msgs">61<`) || !strings.Contains(list, `data-label="tools">20<`) {
		t.Errorf("sessions page counts:\n%s", list)
	}
	page := c.mustGet("/ui/sessions/" + s.ID)
	if !strings.Contains(page, "<dd>61, 20 tool calls (2 in the model's view since compaction)</dd>") {
		t.Errorf("session page counts:\n%s", page)
	}
}
