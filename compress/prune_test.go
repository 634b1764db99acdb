package compress

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

func TestPrune(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("line of output\n", 46) + "exit code: 0"
	longArg := strings.Repeat("é", 600)
	args := `{"path":"src/app.go","content":"` + longArg + `","n":1.50,"nested":{"list":["` + longArg + `",true,null]}}`
	ms := []store.Message{
		{ID: 1, Role: store.RoleUser, Content: "go"},
		{ID: 2, Role: store.RoleAssistant, ToolCalls: []store.ToolCall{
			{ID: "a", Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"npm test"}`}},
			{ID: "b", Function: store.ToolFunction{Name: "write_file", Arguments: args}},
			{ID: "c", Function: store.ToolFunction{Name: "read_file", Arguments: `{"path":"README.md"}`}},
		}},
		{ID: 3, Role: store.RoleTool, ToolCallID: "a", Content: big},
		{ID: 4, Role: store.RoleTool, ToolCallID: "b", Content: "wrote src/app.go (1200 bytes)" + strings.Repeat(" ", 200)},
		{ID: 5, Role: store.RoleTool, ToolCallID: "c", Content: strings.Repeat("readme\n", 40)},
		{ID: 6, Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "d", Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"npm test"}`}}}},
		{ID: 7, Role: store.RoleTool, ToolCallID: "d", Content: big + "\n"},
		{ID: 8, Role: store.RoleAssistant, Content: "all green"},
	}
	tok := make([]int, len(ms))
	for i := range tok {
		tok[i] = 1000
	}
	st := prune(ms, tok, 1500, 3, "sess") // protects the last 3 messages
	if ms[2].Content != "[terminal] ran `npm test` -> exit 0, 47 lines output (full output: session_search(session_id=\"sess\", around_message_id=3))" {
		t.Errorf("terminal stub: %q", ms[2].Content)
	}
	if ms[6].Content != big+"\n" {
		t.Error("protected tail changed")
	}
	if !strings.HasPrefix(ms[4].Content, "[read_file] read README.md -> 41 lines") {
		t.Errorf("read stub: %q", ms[4].Content)
	}
	if !strings.HasPrefix(ms[3].Content, "[write_file] wrote src/app.go -> wrote src/app.go (1200 bytes)") {
		t.Errorf("write stub: %q", ms[3].Content)
	}
	cut := ms[1].ToolCalls[1].Function.Arguments
	if !json.Valid([]byte(cut)) || len(cut) >= len(args) {
		t.Fatalf("arguments not cut or invalid: %s", cut)
	}
	wantPrefix := `{"path":"src/app.go","content":"` + strings.Repeat("é", 200) + `...[truncated]","n":1.50,"nested":{"list":["`
	if !strings.HasPrefix(cut, wantPrefix) || !strings.HasSuffix(cut, `...[truncated]",true,null]}}`) {
		t.Fatalf("key order, numbers or leaves not preserved:\n%s", cut)
	}
	if st.Stubbed != 3 || st.ArgsCut != 1 {
		t.Fatalf("stats %+v", st)
	}
	if st.Deduped != 0 {
		t.Fatalf("nothing identical, yet %d deduplicated", st.Deduped)
	}
}

func TestPruneDedupesInsideTheTail(t *testing.T) {
	t.Parallel()
	out := strings.Repeat("same\n", 60)
	ms := hist("u c t c t a")
	ms[2].Content, ms[4].Content = out, out
	tok := []int{1, 1, 1, 1, 1, 1}
	st := prune(ms, tok, 100, 20, "sess")
	if ms[2].Content != DuplicateToolOutput || ms[4].Content != out || st.Deduped != 1 || st.Stubbed != 0 {
		t.Fatalf("stats %+v, older %q", st, ms[2].Content)
	}
}

func TestTruncateJSONLeavesRejectsInvalid(t *testing.T) {
	t.Parallel()
	if _, ok := truncateJSONLeaves(`{"a":"`+strings.Repeat("x", 600), 200); ok {
		t.Fatal("invalid JSON rewritten")
	}
	if _, ok := truncateJSONLeaves(`{"a":"short"}`, 200); ok {
		t.Fatal("unchanged JSON reported as cut")
	}
}
