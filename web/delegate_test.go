package web

import (
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// A delegated sub-agent session is left out of the session list, shown in its parent's tree
// (and its own), and ranked below the other hits of a search page.
func TestDelegateChildren(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	at := time.Now().Add(-time.Hour)
	for _, ns := range []store.NewSession{
		{ID: "dg-parent", Source: "cli", Title: "Audit the quokka service", StartedAt: at},
		{ID: "dg-child", Source: "subagent", ParentID: "dg-parent", Relation: store.RelationDelegate, StartedAt: at.Add(time.Minute)},
	} {
		if _, err := st.CreateSession(bg, ns); err != nil {
			t.Fatal(err)
		}
	}
	// The child's hit is newer and says the word more often: without demotion it would come first.
	mustAppend(t, st, "dg-child", store.Message{Role: store.RoleUser, Content: "quokka quokka quokka endpoints", Timestamp: at.Add(2 * time.Minute)})
	mustAppend(t, st, "dg-parent", store.Message{Role: store.RoleUser, Content: "check the quokka", Timestamp: at.Add(time.Second)})
	mustAppend(t, st, "dg-parent",
		store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "c1", Type: "function",
			Function: store.ToolFunction{Name: "delegate", Arguments: `{"goal":"list the quokka endpoints"}`}}}, Timestamp: at.Add(2 * time.Second)},
		store.Message{Role: store.RoleTool, ToolCallID: "c1", ToolName: "delegate",
			Content: `{"session_id":"dg-child","status":"completed","answer":"three"}`, Timestamp: at.Add(3 * time.Minute)},
		// A result naming something that is not an id is not linked.
		store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "c2", Type: "function",
			Function: store.ToolFunction{Name: "delegate", Arguments: `{"goal":"x"}`}}}, Timestamp: at.Add(4 * time.Minute)},
		store.Message{Role: store.RoleTool, ToolCallID: "c2", ToolName: "delegate",
			Content: `{"session_id":"../../evil?x=<b>","status":"failed"}`, Timestamp: at.Add(5 * time.Minute)})
	_, base := newServer(t, st, Options{})
	c := newClient(t, base)
	if body := c.mustGet("/ui/"); strings.Contains(body, "dg-child") || !strings.Contains(body, "Audit the quokka service") {
		t.Fatal("the session list shows the sub-agent session or lost its parent")
	}
	for _, p := range []string{"/ui/sessions/dg-parent", "/ui/sessions/dg-child"} {
		body := c.mustGet(p)
		if !strings.Contains(body, `href="/ui/sessions/dg-`) || !strings.Contains(body, `rel-delegate`) {
			t.Fatalf("%s: the lineage tree lacks the delegate child", p)
		}
	}
	if body := c.mustGet("/ui/sessions/dg-parent"); !strings.Contains(body, `sub-agent session: <a href="/ui/sessions/dg-child">dg-child</a>`) ||
		strings.Count(body, "sub-agent session:") != 1 {
		t.Fatal("the delegate call does not link its child session exactly once")
	}
	body := c.mustGet("/ui/search?q=quokka")
	ip, ic := strings.Index(body, "/ui/sessions/dg-parent"), strings.Index(body, "/ui/sessions/dg-child")
	if ip < 0 || ic < 0 || ic < ip {
		t.Fatalf("search page: parent hit at %d, child hit at %d; want both, the child last", ip, ic)
	}
}
