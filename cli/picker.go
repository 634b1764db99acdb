package cli

import (
	"cmp"
	"context"
	"fmt"
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
	Depth                              int    // 0 a root, 1 a branch shown under its root, ... (at most 4)
	Parent                             string // the item this one nests under; "" for a root
	Current                            bool
	Context                            bool // shown only because an item under it matches the filter
}

// pickLimit is how many branch trees the picker lists (each root with all its branches).
const pickLimit = 500

// sessionLister is what the picker needs of the store.
type sessionLister interface {
	ListSessions(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error)
}

// listPickItems reads the picker's sessions: the pickLimit newest branch trees, each root with
// every branch under it however old the branch's activity (store.ListOptions.Trees).
func listPickItems(ctx context.Context, st sessionLister, current string) ([]pickItem, error) {
	ls, err := st.ListSessions(ctx, store.ListOptions{Trees: true, Limit: pickLimit})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return pickItems(ls, current), nil
}

// pickItems turns a tree listing (store.ListOptions.Trees: roots newest first, each followed
// by its branches depth first) into the picker's items, keeping its order; a row whose
// TreeParent is not listed before it stands as a root.
func pickItems(ls []store.SessionListing, current string) []pickItem {
	depth := make(map[string]int, len(ls))
	out := make([]pickItem, 0, len(ls))
	for _, l := range ls {
		d, parent := 0, ""
		if pd, ok := depth[l.TreeParent]; ok && l.TreeParent != "" && l.TreeParent != l.ID {
			d, parent = pd+1, l.TreeParent
		}
		depth[l.ID] = d
		out = append(out, pickItem{ID: l.ID, Title: l.Title, Preview: l.Preview, GitBranch: l.GitBranch, Cwd: l.Cwd,
			Messages: l.Shown.Messages, LastActive: l.LastActive, Depth: min(d, 4), Parent: parent,
			Current: l.ID == current || l.TipID == current && current != ""})
	}
	return out
}

// picker is the /resume picker's state: type to filter (title, first prompt, git branch, id),
// arrows to move, Enter to open, Esc to close.
type picker struct {
	all      []pickItem
	shown    []pickItem
	matches  int // shown items that match the query (the rest are their roots and parents)
	query    string
	filtered string // the query shown now
	cursor   int
	now      func() time.Time
}

func newPicker(items []pickItem) *picker {
	p := &picker{all: items, now: time.Now}
	p.filter()
	return p
}

// filter shows the items that match the query, each with the items it nests under (its root
// and the branches on the way), marked Context, so a match is always seen in its tree. After a
// change of query the cursor goes to the first match.
func (p *picker) filter() {
	q := strings.ToLower(p.query)
	index := make(map[string]int, len(p.all))
	for i, it := range p.all {
		index[it.ID] = i
	}
	match := make([]bool, len(p.all))
	show := make([]bool, len(p.all))
	for i, it := range p.all {
		hay := strings.ToLower(it.Title + "\x00" + it.Preview + "\x00" + it.GitBranch + "\x00" + it.ID)
		if q != "" && !strings.Contains(hay, q) {
			continue
		}
		match[i], show[i] = true, true
		for par := it.Parent; par != ""; {
			j, ok := index[par]
			if !ok || show[j] {
				break // listed already, with the items above it
			}
			show[j] = true
			par = p.all[j].Parent
		}
	}
	p.shown, p.matches = p.shown[:0], 0
	first := -1
	for i, it := range p.all {
		if !show[i] {
			continue
		}
		it.Context = !match[i]
		if match[i] {
			p.matches++
			if first < 0 {
				first = len(p.shown)
			}
		}
		p.shown = append(p.shown, it)
	}
	if p.query != p.filtered {
		p.filtered, p.cursor = p.query, max(first, 0)
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
			p.filter()
		}
	}
	return "", false
}

// view draws the picker in at most rows lines (the selected one always visible).
func (p *picker) view(width, rows int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Resume a session: %s▏  (%d of %d · ↑/↓ move · type to filter · Enter opens · Esc closes)\n",
		visible(p.query), p.matches, len(p.all))
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
		switch {
		case i == p.cursor:
			line = ansiBold + line + ansiBoldOff
		case it.Context:
			line = ansiDim + line + ansiDimOff
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
