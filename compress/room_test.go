package compress

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Under a budget too small for every heading, sections that say nothing and then the last
// sections go whole, instead of each keeping its heading, a trim marker and a 200-character
// stub (which wrote three times the budget and pushed 4K windows off the summary rung).
func TestTightBudgetDropsWholeSections(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("## Historical Task Snapshot\n> Task 9: fix the handler.\n\n## Goal\n- Ship refunds.\n\n")
	for _, h := range []string{"Constraints & Preferences", "Completed Actions", "Active State", "Blocked", "Relevant Files", "Critical Context"} {
		fmt.Fprintf(&b, "## %s\n", h)
		for i := range 8 {
			fmt.Fprintf(&b, "- %s item %d: %s\n", h, i, strings.Repeat("words ", 20))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Key Decisions\nNone.\n\n## Resolved Questions\nNone.")
	const budget = 120 // tokens: about 480 characters
	out, trimmed := boundSummaryBy(b.String(), budget, 1, nil, "sess")
	if len(out) > 3*budget*4 {
		t.Fatalf("%d characters for a %d-token budget:\n%s", len(out), budget, out)
	}
	for _, keep := range []string{"## Historical Task Snapshot", "> Task 9: fix the handler.", "## Goal", "- Ship refunds."} {
		if !strings.Contains(out, keep) {
			t.Errorf("%q went:\n%s", keep, out)
		}
	}
	for _, gone := range []string{"## Key Decisions", "## Resolved Questions", "## Critical Context"} {
		if strings.Contains(out, gone) {
			t.Errorf("%s kept under a %d-token budget:\n%s", gone, budget, out)
		}
	}
	if trimmed < 8 {
		t.Errorf("%d items counted as trimmed", trimmed)
	}
	// A budget that holds everything leaves the body as written.
	if same, n := boundSummaryBy(b.String(), 10_000, 1, nil, "sess"); same != b.String() || n != 0 {
		t.Fatal("a body within its budget was changed")
	}
}

// A rung that reaches its target with room to spare gives the room to a ledger that had to
// leave entries out, and still ends at or under the target.
func TestLedgerGrowsIntoTheRoomLeft(t *testing.T) {
	t.Parallel()
	sum := &recordingSummarizer{reply: "## Goal\nKeep going."}
	c, _ := newTestCompressor(sum, nil)
	model := Model{Name: "m", ContextLength: 32_768}
	r, err := Resolve(c.Config, model)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBudgets(c.Config, r, 0)
	s := newSession(sidePathTurns(400))
	plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: model, State: &State{}})
	if err != nil {
		t.Fatal(err)
	}
	_, ledger, ok := cutSection(plan.Summary, LedgerHeading)
	if !ok {
		t.Fatalf("no ledger:\n%s", plan.Summary)
	}
	if len(ledger) <= b.LedgerChars {
		t.Errorf("ledger %d characters, budget %d: it did not grow into the room left (rung %s, %d of %d tokens)", len(ledger), b.LedgerChars, plan.Rung, plan.TokensAfter, plan.TargetTokens)
	}
	if plan.TokensAfter > plan.TargetTokens {
		t.Errorf("%d tokens after the compaction, over its target %d", plan.TokensAfter, plan.TargetTokens)
	}
	if why := Validate(plan.Messages); why != "" {
		t.Fatal(why)
	}
}

// Under 2,000 characters the ledger's header keeps only how to open a pointer: its first
// sentence is worth seven pointers there.
func TestSmallLedgerShortHeader(t *testing.T) {
	t.Parallel()
	var l Ledger
	for i := range 400 {
		l.Entries = append(l.Entries, LedgerEntry{Kind: EntryValue, Text: fmt.Sprintf("key_%d: %d", i, i), MsgID: int64(i + 1), relevance: 1})
	}
	l.bound(1)
	small := Ledger{Entries: append([]LedgerEntry(nil), l.Entries...)}
	text := small.renderWithin("sess", 0, 1_500)
	if strings.Contains(text, "Extracted mechanically") || !strings.Contains(text, `session_search(session_id="sess", around_message_id=N)`) || len(text) > 1_500 {
		t.Fatalf("small ledger header:\n%s", text)
	}
	big := Ledger{Entries: append([]LedgerEntry(nil), l.Entries...)}
	if text := big.renderWithin("sess", 0, 8_000); !strings.Contains(text, "Extracted mechanically (no model)") {
		t.Fatalf("large ledger lost its header:\n%s", text[:200])
	}
	// Read back, the short ledger keeps its entries.
	if back := parseLedger(text); len(back.Entries) != len(small.Entries) {
		t.Fatalf("read back %d entries of %d", len(back.Entries), len(small.Entries))
	}
}
