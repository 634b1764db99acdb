package compress

import (
	"fmt"
	"strings"
	"testing"
)

// A ledger far over its budget keeps a pointer to every message holding a decision, an error
// or a value, even where their lines no longer fit, and gives up file reads and user messages
// first.
func TestLedgerKeepsPointersForWhatItDrops(t *testing.T) {
	t.Parallel()
	var l Ledger
	id := int64(0)
	next := func() int64 { id++; return id }
	var important []int64
	for i := range 300 {
		l.Entries = append(l.Entries,
			LedgerEntry{Kind: EntryRead, Text: fmt.Sprintf("internal/pkg%d/file_%d.go", i%10, i), MsgID: next(), relevance: 2},
			LedgerEntry{Kind: EntryAsk, Text: fmt.Sprintf("Task %d: tidy the package %d.", i, i), MsgID: next(), relevance: 3})
		if i%20 == 7 {
			for _, e := range []LedgerEntry{
				{Kind: EntryAgent, Text: fmt.Sprintf("I decided to cap the pool at %d connections.", i), relevance: 2},
				{Kind: EntryValue, Text: fmt.Sprintf("retry_budget_%d: %d", i, i), relevance: 1},
				{Kind: EntryError, Text: fmt.Sprintf("panic: boom number %d in the worker", i), relevance: 1, routine: false},
			} {
				e.MsgID = next()
				important = append(important, e.MsgID)
				l.Entries = append(l.Entries, e)
			}
		}
	}
	l.bound(1)
	text := l.renderWithin("sess", 200, 1500)
	if len(text) > 1500 {
		t.Fatalf("ledger %d chars over its 1,500 bound", len(text))
	}
	for _, id := range important {
		if !strings.Contains(text, idTag(id)) {
			t.Errorf("no pointer left to %s:\n%s", idTag(id), text)
			break
		}
	}
	if !strings.Contains(text, PointerHeading) {
		t.Fatalf("no pointer section:\n%s", text)
	}
	// The round trip keeps the pointers, so the next compaction keeps them too.
	back := parseLedger("## Goal\nx\n\n" + text)
	again := back.renderWithin("sess", 200, 1500)
	for _, id := range important {
		if !strings.Contains(again, idTag(id)) {
			t.Fatalf("pointer %s lost in the round trip:\n%s", idTag(id), again)
		}
	}
}
