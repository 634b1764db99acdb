package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/spoolhq/spool/store"
)

// pickItem is one session the /resume picker offers.
type pickItem struct {
	ID, Title, Preview, GitBranch, Cwd string
	Messages                           int
	LastActive                         time.Time
	Depth                              int // 0 a root, 1 a branch shown under its root
	Current                            bool
}

// pickItems orders a session listing for the picker: roots newest first, each followed by its
// branches (newest first, indented); a branch whose root is not listed stands as a root.
func pickItems(ls []store.SessionListing, current string) []pickItem {
	listed := map[string]bool{}
	for _, l := range ls {
		listed[l.ID] = true
	}
	children := map[string][]store.SessionListing{}
	var roots []store.SessionListing
	for _, l := range ls {
		if l.Relation == store.RelationBranch && l.ParentID != "" && listed[l.ParentID] {
			children[l.ParentID] = append(children[l.ParentID], l)
			continue
		}
		roots = append(roots, l)
	}
	newest := func(a, b store.SessionListing) int { return b.LastActive.Compare(a.LastActive) }
	slices.SortStableFunc(roots, newest)
	var out []pickItem
	var walk func(l store.SessionListing, depth int)
	walk = func(l store.SessionListing, depth int) {
		out = append(out, pickItem{ID: l.ID, Title: l.Title, Preview: l.Preview, GitBranch: l.GitBranch, Cwd: l.Cwd,
			Messages: l.MessageCount, LastActive: l.LastActive, Depth: min(depth, 4), Current: l.ID == current || l.TipID == current && current != ""})
		kids := children[l.ID]
		slices.SortStableFunc(kids, newest)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return out
}

// picker is the /resume picker's state: type to filter (title, first prompt, git branch, id),
// arrows to move, Enter to open, Esc to close.
type picker struct {
	all    []pickItem
	shown  []pickItem
	query  string
	cursor int
	now    func() time.Time
}

func newPicker(items []pickItem) *picker {
	p := &picker{all: items, now: time.Now}
	p.filter()
	return p
}

func (p *picker) filter() {
	q := strings.ToLower(p.query)
	p.shown = p.shown[:0]
	for _, it := range p.all {
		hay := strings.ToLower(it.Title + "\x00" + it.Preview + "\x00" + it.GitBranch + "\x00" + it.ID)
		if q == "" || strings.Contains(hay, q) {
			p.shown = append(p.shown, it)
		}
	}
	p.cursor = min(p.cursor, max(len(p.shown)-1, 0))
}

// key handles one key press; done reports that the picker closes, with the chosen id ("" when
// dismissed).
func (p *picker) key(k, text string) (id string, done bool) {
	switch k {
	case "esc", "ctrl+c", "ctrl+g":
		return "", true
	case "enter":
		if len(p.shown) == 0 {
			return "", false
		}
		return p.shown[p.cursor].ID, true
	case "up", "ctrl+p":
		p.cursor = max(p.cursor-1, 0)
	case "down", "ctrl+n":
		p.cursor = min(p.cursor+1, max(len(p.shown)-1, 0))
	case "pgup":
		p.cursor = max(p.cursor-10, 0)
	case "pgdown":
		p.cursor = min(p.cursor+10, max(len(p.shown)-1, 0))
	case "backspace":
		if r := []rune(p.query); len(r) > 0 {
			p.query = string(r[:len(r)-1])
			p.filter()
		}
	default:
		if text != "" {
			p.query += text
			p.cursor = 0
			p.filter()
		}
	}
	return "", false
}

// view draws the picker in at most rows lines (the selected one always visible).
func (p *picker) view(width, rows int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Resume a session: %s▏  (%d of %d · ↑/↓ move · type to filter · Enter opens · Esc closes)\n",
		visible(p.query), len(p.shown), len(p.all))
	if len(p.shown) == 0 {
		b.WriteString("  no session matches\n")
		return b.String()
	}
	rows = max(rows-1, 1)
	first := 0
	if p.cursor >= rows {
		first = p.cursor - rows + 1
	}
	now := p.now()
	for i := first; i < len(p.shown) && i < first+rows; i++ {
		it := p.shown[i]
		mark := "  "
		if i == p.cursor {
			mark = "> "
		}
		cur := ""
		if it.Current {
			cur = " (current)"
		}
		indent := strings.Repeat("  ", it.Depth)
		if it.Depth > 0 {
			indent = strings.Repeat("  ", it.Depth-1) + "└ "
		}
		name := cmp.Or(it.Title, it.Preview, "(empty)")
		extra := ""
		if it.GitBranch != "" {
			extra += " · ⎇ " + it.GitBranch
		}
		if it.Cwd != "" {
			extra += " · " + it.Cwd
		}
		line := fmt.Sprintf("%s%s%s  %s · %d msgs · %s%s%s", mark, indent, visible(name), it.ID, it.Messages, relTime(now, it.LastActive), visible(extra), cur)
		line = ansi.Truncate(line, width, "…")
		if i == p.cursor {
			line = ansiBold + line + ansiBoldOff
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// relTime says how long ago t was, in the largest whole unit.
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}
