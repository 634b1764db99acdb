package compress

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// sidePathTurns is a session of n turns that each ask about one file the tools then read and
// write, with side paths said once in the first turns: a file the agent read that no one asked
// about (turn 1), a file the user named that no tool opened (turn 2), a file the assistant
// named (turn 3), and a script a command ran (turn 4).
func sidePathTurns(n int) []store.Message {
	var ms []store.Message
	add := func(m store.Message) {
		m.ID = int64(len(ms) + 1)
		ms = append(ms, m)
	}
	for t := range n {
		task := fmt.Sprintf("internal/pkg%d/file_%d.go", t%7, t)
		ask := fmt.Sprintf("Task %d: tidy %s.", t, task)
		reads := []string{task}
		command := "go test ./internal/..."
		note := ""
		switch t {
		case 1:
			reads = append(reads, "internal/billing/invoice.go")
		case 2:
			ask += " The entry point is cmd/ledgerd/main.go."
		case 3:
			note = " The signature check lives in internal/webhook/stripe_handler.go."
		case 4:
			command = "bash scripts/backfill_ledger.sh --dry-run"
		}
		add(store.Message{Role: store.RoleUser, Content: ask})
		var calls []store.ToolCall
		for k, p := range reads {
			calls = append(calls, store.ToolCall{ID: fmt.Sprintf("r%d_%d", t, k), Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: fmt.Sprintf(`{"path":%q}`, p)}})
		}
		calls = append(calls, store.ToolCall{ID: fmt.Sprintf("c%d", t), Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: fmt.Sprintf(`{"command":%q}`, command)}})
		add(store.Message{Role: store.RoleAssistant, Content: "Reading " + task + ".", ToolCalls: calls})
		for _, c := range calls[:len(calls)-1] {
			add(store.Message{Role: store.RoleTool, ToolCallID: c.ID, ToolName: "read_file", Content: "package x"})
		}
		add(store.Message{Role: store.RoleTool, ToolCallID: calls[len(calls)-1].ID, ToolName: "terminal", Content: "exit code: 0"})
		add(store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: fmt.Sprintf("w%d", t), Type: "function", Function: store.ToolFunction{Name: "write_file", Arguments: fmt.Sprintf(`{"path":%q,"content":"x"}`, task)}}}})
		add(store.Message{Role: store.RoleTool, ToolCallID: fmt.Sprintf("w%d", t), ToolName: "write_file", Content: "wrote 1 bytes to " + task})
		add(store.Message{Role: store.RoleAssistant, Content: "Done." + note})
	}
	return ms
}

// A path said once among hundreds of task paths keeps its entry where the task paths (which
// their asks carry) give way: side paths are marked, weigh like SHAs, and the mark survives
// the next compaction's reading of the ledger.
func TestSidePathsOutlastTaskPaths(t *testing.T) {
	t.Parallel()
	ms := sidePathTurns(200)
	var l Ledger
	l.merge(extractLedger(ms))
	side := map[string]bool{}
	for _, e := range l.Entries {
		if e.side {
			side[e.Text] = true
		}
	}
	for _, p := range []string{"internal/billing/invoice.go", "cmd/ledgerd/main.go", "internal/webhook/stripe_handler.go", "scripts/backfill_ledger.sh"} {
		if !side[p] {
			t.Errorf("%s is not marked a side path", p)
		}
	}
	for p := range side {
		if strings.HasPrefix(p, "internal/pkg") || strings.HasPrefix(p, "./") {
			t.Errorf("task path or command scope %s marked a side path", p)
		}
	}

	// Where each side path was said: the read call of turn 1, the ask of turn 2, the reply of
	// turn 3, the command of turn 4.
	where := map[string]int64{"internal/billing/invoice.go": 9, "cmd/ledgerd/main.go": 16, "internal/webhook/stripe_handler.go": 29, "scripts/backfill_ledger.sh": 31}
	l.bound(1)
	text := l.renderWithin("sess", 0, 2500)
	for p, id := range where {
		if !strings.Contains(text, p) && !pointsAt(text, id) {
			t.Errorf("side path %s kept neither its line nor %s in a 2,500-character ledger:\n%s", p, idTag(id), text)
		}
	}
	for _, p := range []string{"cmd/ledgerd/main.go", "internal/webhook/stripe_handler.go"} {
		if !strings.Contains(text, p+" (user) (side) [m") && !strings.Contains(text, p+" (side) [m") {
			t.Errorf("side identifier %s lost its line in a 2,500-character ledger:\n%s", p, text)
		}
	}
	if strings.Contains(text, "internal/pkg0/file_0.go") {
		t.Errorf("the oldest task path kept a line while side paths compete:\n%s", text)
	}
	// Read back, the lines and pointers keep their mark.
	back := parseLedger("## Goal\nx\n\n" + text)
	n := 0
	for _, e := range back.Entries {
		if e.side {
			n++
		}
	}
	if n < len(where) {
		t.Fatalf("%d side entries read back, want at least %d:\n%s", n, len(where), text)
	}
	// Tighter, the side paths are pointers to the messages that hold them.
	back.bound(1)
	tight := back.renderWithin("sess", 0, 700)
	for p, id := range where {
		if !strings.Contains(tight, p) && !pointsAt(tight, id) {
			t.Errorf("side path %s kept neither its line nor %s in a 700-character ledger:\n%s", p, idTag(id), tight)
		}
	}
}

// One pointer per path: a task path named in its ask, the assistant's words, the read call,
// the write call and the write's result keeps one pointer, to the ask (which it recovers too),
// so a ledger of a few thousand characters still points at most of 200 asks, and no ask has a
// second pointer of its own.
func TestOnePointerPerPathPointsAtTheAsk(t *testing.T) {
	t.Parallel()
	ms := sidePathTurns(200)
	asks := map[int64]bool{}
	for _, m := range ms {
		if m.Role == store.RoleUser {
			asks[m.ID] = true
		}
	}
	var l Ledger
	l.merge(extractLedger(ms))
	l.bound(1)
	text := l.renderWithin("sess", 0, 3000)
	_, ptrs, ok := strings.Cut(text, PointerHeading)
	if !ok {
		t.Fatalf("no pointer section:\n%s", text)
	}
	pointed := pointedIDs(ptrs)
	n := 0
	for id := range asks {
		if pointed[id] > 0 {
			n++
		}
		if pointed[id] > 1 {
			t.Errorf("ask [m%d] has %d pointers", id, pointed[id])
		}
	}
	if n < 150 {
		t.Fatalf("%d of 200 asks have a pointer in a 3,000-character ledger, want at least 150:\n%s", n, text)
	}
	if strings.Contains(ptrs, "- files read:") {
		t.Errorf("task files read kept pointers of their own (their asks point at the same paths):\n%s", text)
	}
}

// A turn can straddle two compactions: the ask an earlier compaction took (its summary's task
// snapshot quotes it) and the files read in the tail still make a path a task path, not a
// side path.
func TestSidePathsAcrossCompactions(t *testing.T) {
	t.Parallel()
	ms := []store.Message{
		{ID: 1, Role: store.RoleUser, Summary: true, Content: summaryContent("## Historical Task Snapshot\n> Task 9: fix internal/x/a_9.go.\n\n## Goal\nx")},
		{ID: 2, Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "w", Type: "function", Function: store.ToolFunction{Name: "write_file", Arguments: `{"path":"internal/x/a_9.go","content":"x"}`}}}},
		{ID: 3, Role: store.RoleTool, ToolCallID: "w", ToolName: "write_file", Content: "ok"},
		{ID: 4, Role: store.RoleAssistant, Content: "Done."},
		{ID: 5, Role: store.RoleUser, Content: "Task 10: tidy internal/x/b_10.go."},
	}
	side := func(es []LedgerEntry) map[string]bool {
		out := map[string]bool{}
		for _, e := range es {
			if e.side {
				out[e.Text] = true
			}
		}
		return out
	}
	alone := side(ledgerEntries(ms[1:], scanMessages(ms[1:])))
	if !alone["internal/x/a_9.go"] || !alone["internal/x/b_10.go"] {
		t.Fatalf("without the snapshot and the tail both paths look like side paths: %v", alone)
	}
	got := side(ledgerEntriesBefore(ms, scanMessages(ms), map[string]bool{"internal/x/b_10.go": true}))
	if got["internal/x/a_9.go"] || got["internal/x/b_10.go"] {
		t.Fatalf("task paths marked side across a compaction: %v", got)
	}
}
