package compress

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// noiseTurns appends coding turns whose outputs are full of distinct identifiers.
func noiseTurns(s *session, round, n int) {
	for i := range n {
		var out strings.Builder
		for j := range 10 {
			fmt.Fprintf(&out, "M src/r%d/t%d/f%d.go\n", round, i, j)
		}
		fmt.Fprintf(&out, "commit %040x\nexit code: 0", round*1000+i)
		codingTurn(s, i, fmt.Sprintf("Round %d step %d, see #%d.", round, i, 9000+round*100+i), fmt.Sprintf("git status --round %d", round), out.String())
	}
}

func TestLedgerSurvivesFiveCompactions(t *testing.T) {
	t.Parallel()
	// The summariser keeps nothing specific: whatever survives is the ledger's doing.
	sum := &recordingSummarizer{reply: "## Goal\nKeep going.\n\n## Completed Actions\n1. WORKED — ok"}
	c, _ := newTestCompressor(sum, nil)
	s := plantedSession(20)
	st := &State{}
	facts := []string{
		"#4821",
		"3f9a2c1d4e5b6a7980a1b2c3d4e5f60718293a4b",
		"https://github.com/acme/app/pull/77",
		"`internal/db/migrate.go`",
		"`docs/schema.md`",
		"`go test ./internal/db/...` -> exit 1",
		`pq: relation "users" does not exist`,
		`"Let's use PostgreSQL instead of MySQL."`,
		`"Never push to main directly."`,
	}
	var plan Plan
	for round := 1; round <= 5; round++ {
		var err error
		plan, err = c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
		if err != nil {
			t.Fatalf("compaction %d: %v", round, err)
		}
		if why := Validate(plan.Messages); why != "" {
			t.Fatalf("compaction %d: %s", round, why)
		}
		_, ledger, ok := cutSection(plan.Summary, LedgerHeading)
		if !ok || len(LedgerHeading)+len(ledger) > MaxLedgerChars {
			t.Fatalf("compaction %d: ledger %d chars (bound %d)", round, len(ledger), MaxLedgerChars)
		}
		s.commit(plan)
		noiseTurns(s, round, 25)
	}
	if st.CompressionCount != 5 {
		t.Fatalf("%d compactions", st.CompressionCount)
	}
	tagRe := regexp.MustCompile(`\[m(\d+)\]`)
	_, working, _ := cutSection(plan.Summary, LedgerHeading)
	for _, f := range facts {
		line := ""
		for l := range strings.SplitSeq(working, "\n") {
			if strings.Contains(l, f) {
				line = l
				break
			}
		}
		if line == "" {
			t.Errorf("fact %s lost after 5 compactions", f)
			continue
		}
		m := tagRe.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("fact %s has no message id: %q", f, line)
			continue
		}
		id, _ := strconv.ParseInt(m[1], 10, 64)
		orig, ok := s.all[id]
		if !ok {
			t.Errorf("fact %s points at unknown message %d", f, id)
			continue
		}
		// The pointed-at row (archived now) holds the fact: one session_search recovers it.
		raw := orig.Content
		for _, tc := range orig.ToolCalls {
			raw += tc.Function.Arguments
		}
		needle := strings.Trim(strings.SplitN(f, "` ->", 2)[0], "`\"")
		if !strings.Contains(strings.ReplaceAll(raw, `\"`, `"`), needle) {
			t.Errorf("fact %s: message %d does not contain %q", f, id, needle)
		}
	}
	// Dedup: each fact appears once in the ledger.
	for _, f := range facts[3:] {
		if n := strings.Count(plan.Summary, f); n != 1 {
			t.Errorf("fact %s appears %d times", f, n)
		}
	}
}

func TestLedgerRoundTrip(t *testing.T) {
	t.Parallel()
	l := Ledger{Entries: []LedgerEntry{
		{Kind: EntryWrote, Text: "a/b.go", MsgID: 3, relevance: 2},
		{Kind: EntryCommand, Text: "echo `x` -> exit 2", Status: "0", MsgID: 4, relevance: 2},
		{Kind: EntryIdentifier, Text: "#12", MsgID: 5, relevance: 3},
		{Kind: EntryIdentifier, Text: "abc1234", MsgID: 6, relevance: 1},
		{Kind: EntryError, Text: "panic: boom", MsgID: 7, relevance: 1},
		{Kind: EntryDecision, Text: `never use "sudo"`, MsgID: 8, relevance: 3, binding: true},
		{Kind: EntryDecision, Text: "let's ship it", MsgID: 8, relevance: 3},
		{Kind: EntryAsk, Text: "line one\n\n  indented\n## not a heading", MsgID: 9, relevance: 3},
	}}
	l.bound(1)
	text := l.render("sess", 1000)
	back := parseLedger("## Goal\nx\n\n" + text + "\n\n## Other\ny")
	if len(back.Entries) != len(l.Entries) {
		t.Fatalf("parsed %d entries, want %d\n%s", len(back.Entries), len(l.Entries), text)
	}
	for i := range l.Entries {
		if back.Entries[i] != l.Entries[i] {
			t.Errorf("entry %d: got %+v want %+v", i, back.Entries[i], l.Entries[i])
		}
	}
	if again := back.render("sess", 1000); again != text {
		t.Fatalf("re-render differs:\n%s\n---\n%s", again, text)
	}
}

func TestLedgerAsksBudget(t *testing.T) {
	t.Parallel()
	var ms []store.Message
	for i := range 10 {
		ms = append(ms, store.Message{ID: int64(i + 1), Role: store.RoleUser, Content: fmt.Sprintf("ask %d %s", i, strings.Repeat("x", 90))})
	}
	var l Ledger
	l.merge(extractLedger(ms))
	l.bound(1)
	text := l.render("sess", 300) // room for 3 verbatim asks; the others keep their pointer
	if !strings.Contains(text, "\n- user messages: [m1,2,3,4,5,6,7]") || strings.Count(text, " ask ") != 3 {
		t.Fatalf("want 3 asks quoted and 7 pointers:\n%s", text)
	}
	if !strings.Contains(text, "- [m10] ask 9 ") || strings.Index(text, "[m10]") > strings.Index(text, "[m9]") {
		t.Fatal("asks not newest first")
	}
}

func TestIdentifiers(t *testing.T) {
	t.Parallel()
	text := "See #123 and PR #45, commit deadbee1 / 0123456789abcdef0123456789abcdef01234567, file ./cmd/main.go:12:3, " +
		"config.yaml, https://example.com/a?b=1. Not ids: 1234567, #abc, deadbeef, version 1.2.3, and/or."
	got := identifiers(text)
	want := []string{"#123", "#45", "deadbee1", "0123456789abcdef0123456789abcdef01234567", "./cmd/main.go", "config.yaml", "https://example.com/a?b=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// TestLedgerKeepsConstraintsOverBudget fills a small ledger with the user's constraints and
// with other entries: over the budget, the oldest constraints turn into pointers under
// "constraints" (never dropped, every other pointer goes first), the newest keep their words,
// and a later compaction reading the ledger back keeps them binding.
func TestLedgerKeepsConstraintsOverBudget(t *testing.T) {
	t.Parallel()
	var ms []store.Message
	id := int64(0)
	for i := range 60 {
		id++
		ms = append(ms, store.Message{ID: id, Role: store.RoleUser, Content: fmt.Sprintf("Task %d: tidy internal/x/f%d.go. Never call os.Exit%d from a library.", i, i, i)})
		id++
		ms = append(ms, store.Message{ID: id, Role: store.RoleTool, ToolCallID: "c", Content: fmt.Sprintf("error: build %d failed at step %d\ncommit %040x", i, i, i)})
	}
	for _, maxChars := range []int{420, 900, 1500, 3000} {
		var l Ledger
		l.merge(extractLedger(ms))
		l.bound(1)
		text := l.renderWithin("s", 0, maxChars)
		if len(text) > maxChars {
			t.Fatalf("%d: ledger of %d chars", maxChars, len(text))
		}
		back := parseLedger(text)
		kept := map[int64]bool{}
		for _, e := range back.Entries {
			if e.Kind == EntryDecision && e.binding {
				kept[e.MsgID] = true
			}
		}
		for i := range 60 {
			if !kept[int64(2*i+1)] {
				t.Errorf("%d chars: the constraint of m%d is neither a line nor a pointer:\n%s", maxChars, 2*i+1, text)
			}
		}
		if maxChars >= 900 && !strings.Contains(text, `"Never call os.Exit59 from a library." [m119]`) {
			t.Errorf("%d chars: the newest constraint lost its words:\n%s", maxChars, text)
		}
		if maxChars < 3000 && !strings.Contains(text, "- constraints: [m1,") {
			t.Errorf("%d chars: the oldest constraints are not merged into pointers:\n%s", maxChars, text)
		}
	}
}

// TestLedgerAsksOutlastRoutinePointers squeezes a ledger of many turns, each a user ask naming
// its file and a test command on that file's directory: the asks' pointers (which recover the
// task path too) outlast the commands' pointers, and the directory a command ran on takes no
// pointer of its own.
func TestLedgerAsksOutlastRoutinePointers(t *testing.T) {
	t.Parallel()
	s := newSession(nil)
	for i := range 80 {
		path := fmt.Sprintf("internal/pkg%d/file_%d.go", i%9, i)
		read, run := fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i)
		s.append(
			store.Message{Role: store.RoleUser, Content: fmt.Sprintf("Task %d: fix the off-by-one in %s.", i, path)},
			store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{
				{ID: read, Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: fmt.Sprintf(`{"path":%q}`, path)}},
				{ID: run, Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: fmt.Sprintf(`{"command":"go test ./internal/pkg%d/..."}`, i%9)}},
			}},
			store.Message{Role: store.RoleTool, ToolCallID: read, ToolName: "read_file", Content: "package x"},
			store.Message{Role: store.RoleTool, ToolCallID: run, ToolName: "terminal", Content: "ok\nexit code: 0"},
		)
	}
	var l Ledger
	l.merge(extractLedger(s.active))
	l.bound(1)
	text := l.renderWithin("s", 0, 500)
	users, asks, commands := map[int64]bool{}, 0, 0
	for _, m := range s.active {
		if m.Role == store.RoleUser {
			users[m.ID] = true
		}
	}
	for id := range pointedIDs(text) {
		if users[id] {
			asks++
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "- commands: ") {
			commands = len(pointedIDs(line))
		}
		if strings.HasPrefix(line, "- task paths: ") {
			t.Errorf("task paths listed beside the asks and commands that recover them: %s", line)
		}
	}
	if asks < 40 || asks <= commands {
		t.Fatalf("%d asks and %d commands kept in 500 chars:\n%s", asks, commands, text)
	}
}
