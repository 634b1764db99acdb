package compress

import (
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// The fallback summary lists the files and errors of the same scanned text as the ledger: all
// of a tool result up to scanToolPrefix+scanToolSuffix bytes (its head and tail beyond that),
// and assistant text without think blocks.
func TestFallbackReadsLedgerScan(t *testing.T) {
	t.Parallel()
	filler := strings.Repeat("ok line of build output\n", 260) // past scanToolPrefix
	turns := []store.Message{
		{ID: 1, Role: store.RoleUser, Content: "Please fix the build."},
		{ID: 2, Role: store.RoleAssistant, Content: "<think>maybe notes/private/plan.md</think>Building.", ToolCalls: []store.ToolCall{
			{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"go build ./..."}`}},
		}},
		{ID: 3, Role: store.RoleTool, ToolCallID: "c1", Content: filler + "internal/late/thing.go:12: undefined: Foo\n" + filler[:1000]},
		{ID: 4, Role: store.RoleAssistant, Content: "Found it."},
	}
	if len(turns[2].Content) <= scanToolPrefix || len(turns[2].Content) > scanToolPrefix+scanToolSuffix {
		t.Fatalf("tool result is %d bytes; the case needs it between %d and %d", len(turns[2].Content), scanToolPrefix, scanToolPrefix+scanToolSuffix)
	}
	sum := fallbackSummary(turns, scanMessages(turns), "")
	var l Ledger
	l.merge(extractLedger(turns))
	l.bound(1)
	ledger := l.render("sess", 1000)

	_, files, _ := cutSection(sum, "## Relevant Files")
	_, blocked, _ := cutSection(sum, "## Blocked")
	_, actions, _ := cutSection(sum, "## Completed Actions")
	for _, c := range []struct{ name, text, want string }{
		{"relevant files", files, "- internal/late/thing.go"},
		{"blocked", blocked, "- internal/late/thing.go:12: undefined: Foo"},
		{"completed actions", actions, "error: internal/late/thing.go:12: undefined: Foo"},
		{"ledger identifiers", ledger, "- internal/late/thing.go (output) [m3]"},
		{"ledger errors", ledger, "- internal/late/thing.go:12: undefined: Foo (output) [m3]"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s: no %q in\n%s", c.name, c.want, c.text)
		}
	}
	if strings.Contains(files, "plan.md") || strings.Contains(ledger, "plan.md") {
		t.Errorf("a path only in a think block was listed:\n%s\n%s", files, ledger)
	}
}
