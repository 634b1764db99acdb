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
		if !pointsAt(text, id) {
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
		if !pointsAt(again, id) {
			t.Fatalf("pointer %s lost in the round trip:\n%s", idTag(id), again)
		}
	}
}

// A pointer line lists its messages in one bracket ("- paths: [m90,407,1663]"), which costs
// four characters a pointer instead of seven. Read back, each id is an entry of its own with
// the label's kind and marks (a side path keeps the weight of one), the line re-renders byte for
// byte, and the size accounting matches the text; a ledger written before the lists ("[m90]
// [m407]") reads the same.
func TestPointerListsRoundTrip(t *testing.T) {
	t.Parallel()
	var l Ledger
	for i := range 40 {
		id := int64(100 + 37*i)
		l.Entries = append(l.Entries,
			LedgerEntry{Kind: EntryIdentifier, Text: fmt.Sprintf("docs/adr/%04d-x.md", i), MsgID: id, relevance: 2, pathID: true, side: true},
			LedgerEntry{Kind: EntryValue, Text: fmt.Sprintf("knob_%d: %d", i, i), MsgID: id + 1, relevance: 1})
	}
	l.bound(1)
	text := l.renderWithin("sess", 0, 900)
	if len(text) > 900 {
		t.Fatalf("ledger %d chars over its 900 bound:\n%s", len(text), text)
	}
	if strings.Contains(text, "] [m") {
		t.Fatalf("pointers written one bracket each:\n%s", text)
	}
	_, ptrs, ok := strings.Cut(text, PointerHeading)
	if !ok || !strings.Contains(ptrs, "- paths: [m") || !strings.Contains(ptrs, "- values: [m") {
		t.Fatalf("no pointer lists:\n%s", text)
	}
	// Near the bound: the accounting is exact, so the ledger is filled to within a pointer.
	if len(text) < 900-12 {
		t.Errorf("ledger %d chars, its 900 bound left unused:\n%s", len(text), text)
	}
	back := parseLedger("## Goal\nx\n\n" + text)
	pointed := pointedIDs(ptrs)
	n := 0
	for _, e := range back.Entries {
		if !e.Pointer {
			continue
		}
		n++
		if pointed[e.MsgID] == 0 {
			t.Errorf("entry %+v read from nowhere", e)
		}
		if e.Kind == EntryIdentifier && (!e.side || !e.pathID || e.weight() != 6) {
			t.Errorf("side path pointer m%d read back as %+v (weight %d)", e.MsgID, e, e.weight())
		}
	}
	if n != len(pointed) {
		t.Fatalf("%d pointers read back, %d written:\n%s", n, len(pointed), text)
	}
	if again := back.renderWithin("sess", 0, 900); again != text {
		t.Fatalf("re-render differs:\n%s\n---\n%s", again, text)
	}
	// The older form reads the same.
	old := strings.NewReplacer(",", "] [m").Replace(ptrs)
	if old == ptrs {
		t.Fatal("no list to rewrite")
	}
	prev := parseLedger("## Goal\nx\n\n" + LedgerHeading + "\n" + PointerHeading + old)
	cur := parseLedger("## Goal\nx\n\n" + LedgerHeading + "\n" + PointerHeading + ptrs)
	if len(prev.Entries) != len(cur.Entries) {
		t.Fatalf("old form read %d entries, lists %d", len(prev.Entries), len(cur.Entries))
	}
	for i := range cur.Entries {
		if prev.Entries[i] != cur.Entries[i] {
			t.Errorf("entry %d: old form %+v, lists %+v", i, prev.Entries[i], cur.Entries[i])
		}
	}
}
