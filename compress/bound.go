package compress

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/store"
)

// summaryTrimFactor: a summary body estimated at more than this many times its budget is
// trimmed down to the budget. Below it the model's answer is kept as written.
const summaryTrimFactor = 2

// minKeptItem is how much of a section's newest item survives even when the section's share of
// the budget is smaller.
const minKeptItem = 200

// trimMarkerRe recognises the marker of an earlier trim, so counts add up across compactions
// instead of markers piling up.
var trimMarkerRe = regexp.MustCompile(`^\[(\d+) older items? trimmed`)

// summarySection is one "## " section of a summary body (heading "" for text before the first).
type summarySection struct {
	heading string
	items   [][]string // lines of each item
	whole   bool       // never trimmed: the deterministic task snapshot, the ledger
	trimmed int        // items trimmed by earlier compactions (from their marker)
	size    int        // bytes of the items as written, newlines included
}

// boundSummary enforces the summary budget (in tokens). A body whose
// estimate exceeds summaryTrimFactor × budget is cut back to about budget, section by section:
// every heading stays, the task snapshot and the working-set ledger stay whole, and each other
// section keeps its newest items (the end of the section: summaries append) within a fair
// share of the budget, under a marker counting what went and pointing at session_search,
// which recovers it from the original turns. It returns the body and how many items it
// trimmed now; an untouched body comes back byte for byte.
func boundSummary(body string, budget int, est Estimator, sessionID string) (string, int) {
	return boundSummaryBy(body, budget, summaryTrimFactor, est, sessionID)
}

// boundSummaryBy is boundSummary trimming a body over factor × budget (the ladder's shorter
// rungs trim anything over the budget itself).
func boundSummaryBy(body string, budget, factor int, est Estimator, sessionID string) (string, int) {
	if est == nil {
		est = CharEstimator{}
	}
	tokens := est.Message(store.Message{Role: store.RoleUser, Content: body})
	if budget <= 0 || tokens <= factor*budget {
		return body, 0
	}
	target := int(float64(len(body)) * float64(budget) / float64(tokens))
	sections, dropped := dropSections(parseSections(body), target, budget, sessionID)

	// Water-filling: what is left after the fixed parts is shared equally among the trimmable
	// sections; a section smaller than its share keeps everything and leaves the rest to others.
	avail := target
	var open []*summarySection
	for i := range sections {
		s := &sections[i]
		avail -= len(s.heading) + 2
		if s.whole {
			avail -= s.size
		} else {
			open = append(open, s)
		}
	}
	share := map[*summarySection]int{}
	for len(open) > 0 {
		each := max(avail, 0) / len(open)
		var rest []*summarySection
		for _, s := range open {
			if s.size <= each {
				share[s] = s.size
				avail -= s.size
			} else {
				rest = append(rest, s)
			}
		}
		if len(rest) == len(open) {
			for _, s := range rest {
				share[s] = each
			}
			break
		}
		open = rest
	}

	trimmedNow := dropped
	var b strings.Builder
	b.Grow(target + 1024)
	for i := range sections {
		s := &sections[i]
		if i > 0 {
			b.WriteString("\n\n")
		}
		if s.heading != "" {
			b.WriteString(s.heading)
			b.WriteString("\n")
		}
		keep := s.items
		if !s.whole && s.size > share[s] {
			room := share[s] - len(trimMarker(s.trimmed+len(s.items), budget, sessionID)) - 1
			n, used := 0, 0
			for n < len(s.items) {
				size := itemSize(s.items[len(s.items)-1-n])
				if used+size > room {
					break
				}
				used += size
				n++
			}
			if n == 0 {
				// The newest item alone is over the share: keep its head.
				last := strings.Join(s.items[len(s.items)-1], "\n")
				cut := cutBytes(last, max(room, minKeptItem))
				if len(cut) < len(last) {
					cut += "…"
				}
				keep = [][]string{{cut}}
				n = 1
			} else {
				keep = s.items[len(s.items)-n:]
			}
			trimmedNow += len(s.items) - n
			s.trimmed += len(s.items) - n
		}
		var lines []string
		if s.trimmed > 0 {
			lines = append(lines, trimMarker(s.trimmed, budget, sessionID))
		}
		for _, it := range keep {
			lines = append(lines, it...)
		}
		b.WriteString(strings.Join(lines, "\n"))
	}
	return strings.TrimSpace(b.String()), trimmedNow
}

// placeholderItems are what a summary writes in a section with nothing to say.
var placeholderItems = []string{"none", "none.", "- none", "- none.", "none recorded.", "none detected.", "n/a", "- n/a"}

func isPlaceholder(s summarySection) bool {
	if len(s.items) != 1 || len(s.items[0]) != 1 || s.trimmed > 0 {
		return false
	}
	t := strings.ToLower(strings.TrimSpace(s.items[0][0]))
	for _, p := range placeholderItems {
		if t == p {
			return true
		}
	}
	return false
}

// dropSections makes a budget too small for every section keep fewer: when the room left
// after the whole sections and every heading cannot give each trimmable section its marker and
// minKeptItem of its newest item, sections that only say "None." go first, then trimmable
// sections from the end of the body, until it can. Keeping every heading with a cut item
// under a budget of a few hundred characters wrote three times the budget (a dozen headings,
// each with a marker and a 200-character stub) and pushed small windows off the summary rung.
// What a dropped section said is in the original turns (session_search) and the ledger. It
// returns the sections kept and how many items went with the dropped ones.
func dropSections(sections []summarySection, target, budget int, sessionID string) ([]summarySection, int) {
	need := minKeptItem + len(trimMarker(100, budget, sessionID)) + 2
	short := func(ss []summarySection) bool {
		avail, open := target, 0
		for _, s := range ss {
			avail -= len(s.heading) + 2
			if s.whole {
				avail -= s.size
			} else {
				open++
			}
		}
		return open > 0 && avail < open*need
	}
	if !short(sections) {
		return sections, 0
	}
	dropped := 0
	out := sections[:0:0]
	for _, s := range sections {
		if !s.whole && s.heading != "" && isPlaceholder(s) {
			continue
		}
		out = append(out, s)
	}
	for short(out) {
		last := -1
		for i := len(out) - 1; i >= 0; i-- {
			if !out[i].whole && out[i].heading != "" {
				last = i
				break
			}
		}
		if last < 0 {
			break
		}
		dropped += len(out[last].items)
		out = append(out[:last], out[last+1:]...)
	}
	return out, dropped
}

// trimMarker is one short line (it is repeated in every trimmed section, so small windows
// cannot afford more): how many items went, and that search finds them; the session id and the
// search call are spelled out once, in the ledger's header.
func trimMarker(n, budget int, sessionID string) string {
	items := "items"
	if n == 1 {
		items = "item"
	}
	return fmt.Sprintf("[%d older %s trimmed (~%d-token budget); session_search finds the original turns]", n, items, budget)
}

func itemSize(lines []string) int {
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	return n
}

// parseSections splits a summary body at its "## " heading lines. Items start at lines that
// are neither blank nor indented; blank and indented lines continue the item before them.
func parseSections(body string) []summarySection {
	var out []summarySection
	cur := summarySection{}
	flush := func() {
		// Blank lines at the end of an item are spacing between sections.
		if n := len(cur.items); n > 0 {
			last := cur.items[n-1]
			for len(last) > 1 && strings.TrimSpace(last[len(last)-1]) == "" {
				last = last[:len(last)-1]
			}
			cur.items[n-1] = last
		}
		for _, it := range cur.items {
			cur.size += itemSize(it)
		}
		if cur.heading != "" || len(cur.items) > 0 {
			out = append(out, cur)
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "## ") {
			flush()
			h := strings.TrimRight(line, " \t\r")
			cur = summarySection{heading: h, whole: h == "## Historical Task Snapshot" || h == LedgerHeading || h == OriginalHeading}
			continue
		}
		blank := strings.TrimSpace(line) == ""
		switch {
		case !blank && line[0] != ' ' && line[0] != '\t':
			if m := trimMarkerRe.FindStringSubmatch(line); m != nil && !cur.whole {
				n, _ := strconv.Atoi(m[1])
				cur.trimmed += n
				continue
			}
			cur.items = append(cur.items, []string{line})
		case len(cur.items) > 0:
			cur.items[len(cur.items)-1] = append(cur.items[len(cur.items)-1], line)
		case !blank:
			cur.items = append(cur.items, []string{line})
		}
	}
	flush()
	return out
}
