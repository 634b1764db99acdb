package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// treeListing is a listing as store.ListOptions.Trees returns it: each root followed by its
// branches depth first, TreeParent naming the row each nests under.
func treeListing() []store.SessionListing {
	l := func(id, treeParent, title string) store.SessionListing {
		s := store.SessionListing{TreeParent: treeParent}
		s.ID, s.Title = id, title
		if treeParent != "" {
			s.ParentID, s.Relation = treeParent, store.RelationBranch
		}
		return s
	}
	return []store.SessionListing{
		l("root-a", "", "alpha"),
		l("a1", "root-a", "side one"),
		l("a1x", "a1", "deep fix"),
		l("root-b", "", "beta"),
		l("b1", "root-b", "other side"),
		l("lost", "not-listed", "orphan"), // its tree parent is not listed: it stands as a root
	}
}

// TestPickerFilterKeepsTrees: the picker keeps the tree listing's order and depths, and a filter
// shows each match under the rows it nests under (marked as context, drawn dim), with the
// cursor on the first match, so Enter opens what was typed for.
func TestPickerFilterKeepsTrees(t *testing.T) {
	t.Parallel()
	items := pickItems(treeListing(), "a1")
	var depths []string
	for _, it := range items {
		depths = append(depths, fmt.Sprintf("%s:%d", it.ID, it.Depth))
	}
	if got, want := strings.Join(depths, " "), "root-a:0 a1:1 a1x:2 root-b:0 b1:1 lost:0"; got != want {
		t.Fatalf("items = %s, want %s", got, want)
	}
	if !items[1].Current || items[0].Current {
		t.Fatalf("current not marked on a1 alone: %+v", items)
	}
	for _, tc := range []struct {
		query   string
		shown   string // ids, context rows in brackets
		matches int
		enter   string
	}{
		{"", "root-a a1 a1x root-b b1 lost", 6, "root-a"},
		{"deep", "[root-a] [a1] a1x", 1, "a1x"},
		{"side", "[root-a] a1 [root-b] b1", 2, "a1"},
		{"beta", "root-b", 1, "root-b"},
		{"orph", "lost", 1, "lost"},
		{"nothing like it", "", 0, ""},
	} {
		t.Run(tc.query, func(t *testing.T) {
			p := newPicker(items)
			for _, r := range tc.query {
				p.key(string(r), string(r))
			}
			var ids []string
			for _, it := range p.shown {
				if it.Context {
					ids = append(ids, "["+it.ID+"]")
				} else {
					ids = append(ids, it.ID)
				}
			}
			if got := strings.Join(ids, " "); got != tc.shown || p.matches != tc.matches {
				t.Errorf("shown %q (%d matches), want %q (%d)", got, p.matches, tc.shown, tc.matches)
			}
			view := p.view(200, 20)
			if !strings.Contains(view, fmt.Sprintf("(%d of 6 ", tc.matches)) {
				t.Errorf("header does not count %d of 6:\n%s", tc.matches, view)
			}
			if id, done := p.key("enter", ""); id != tc.enter || done != (tc.enter != "") {
				t.Errorf("Enter opens %q (done %v), want %q", id, done, tc.enter)
			}
		})
	}
	// The look: a match nested two deep under its dimmed root and parent, the cursor on it.
	p := newPicker(items)
	for _, r := range "deep" {
		p.key(string(r), string(r))
	}
	view := p.view(200, 20)
	want := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ansiDim+"  alpha  root-a") + `.*\n` +
		regexp.QuoteMeta(ansiDim+"  └ side one  a1") + `.*\(current\)` + regexp.QuoteMeta(ansiDimOff) + `\n` +
		regexp.QuoteMeta(ansiBold+">   └ deep fix  a1x"))
	if !want.MatchString(view) {
		t.Errorf("filtered view does not nest the match under its dimmed parents:\n%q", view)
	}
	// Backspacing to an empty query lists everything again, cursor back on the first row.
	for range "deep" {
		p.key("backspace", "")
	}
	if len(p.shown) != 6 || p.cursor != 0 || p.shown[0].Context {
		t.Errorf("after backspacing: %d shown, cursor %d, first context %v", len(p.shown), p.cursor, p.shown[0].Context)
	}
}

// The picker counts a session's messages as every listing does (store.Shown), not the rows a
// compaction left the model.
func TestPickerCountsShownMessages(t *testing.T) {
	t.Parallel()
	l := store.SessionListing{}
	l.ID, l.MessageCount, l.Shown = "s1", 2, store.Shown{Messages: 80, ToolCalls: 4}
	if items := pickItems([]store.SessionListing{l}, ""); len(items) != 1 || items[0].Messages != 80 {
		t.Fatalf("picker items %+v; want 80 messages", items)
	}
}
