package fake

import (
	"regexp"
	"strconv"
	"strings"
)

// Markers of a compaction request, as spool's summarizer writes them: the first compaction sends "TURNS TO
// SUMMARIZE", an iterative update "PREVIOUS SUMMARY" and "NEW TURNS TO INCORPORATE".
const (
	markTurns    = "TURNS TO SUMMARIZE"
	markNewTurns = "NEW TURNS TO INCORPORATE"
	markPrevious = "PREVIOUS SUMMARY"
)

// DefaultSummarySections are the headings the summarizer writes when the request's template
// names none.
var DefaultSummarySections = []string{
	"Goal", "Constraints & Preferences", "Completed Actions", "Active State", "Blocked",
	"Key Decisions", "Resolved Questions", "Relevant Files", "Remaining Work", "Critical Context",
}

// isSummaryRequest: the system prompt or the last user message carries a turns marker, or the
// system prompt is itself a summary template (## Goal ... ## Critical Context).
func isSummaryRequest(c call) bool {
	user := ""
	if last := c.msgs[len(c.msgs)-1]; last.Role == "user" {
		user = last.Content
	} else {
		return false
	}
	for _, s := range []string{c.system, user} {
		if strings.Contains(s, markTurns) || strings.Contains(s, markNewTurns) {
			return true
		}
	}
	return strings.Contains(c.system, "## Goal") && strings.Contains(c.system, "## Critical Context")
}

// summaryTurn is one serialized turn of the compaction input: "[USER]: ...", "[ASSISTANT]: ...",
// "[TOOL RESULT id]: ...".
type summaryTurn struct {
	role  string // USER, ASSISTANT, TOOL RESULT, ...
	lines []string
	calls []string // "name(args)" lines of an assistant turn
}

var (
	turnHeader = regexp.MustCompile(`^\[([A-Z][A-Z _]*?)(?: [^\]]*)?\]:\s?(.*)$`)
	callLine   = regexp.MustCompile(`([A-Za-z_][\w.\-]*)\((.*)\)`)
	pathToken  = regexp.MustCompile(`(?:\.{0,2}/)?(?:[\w.\-]+/)+[\w.\-]+|\b[\w\-]+\.(?:go|py|js|ts|tsx|md|json|yaml|yml|toml|txt|sql|sh|rs|c|h|cc|cpp|java|rb|css|html|mod|sum|lock|cfg|ini|env)\b`)
	idToken    = regexp.MustCompile(`\b[0-9a-f]{7,40}\b|#\d+\b|\b[A-Z]{2,}-\d+\b`)

	reConstraint = regexp.MustCompile(`(?i)\b(must|never|always|prefer|don't|do not|should|avoid|only)\b`)
	reBlocked    = regexp.MustCompile(`(?i)\b(error|errors|failed|fails|failure|denied|not found|exception|cannot|can't|panic|refused)\b`)
	reDecision   = regexp.MustCompile(`(?i)\b(decided|decide|decision|chose|choose|will use|going with|let's use|agreed)\b`)
	reRemaining  = regexp.MustCompile(`(?i)\b(todo|next|remaining|still need|later|pending)\b`)
	reCritical   = regexp.MustCompile(`(?i)\b(important|remember|critical|note:|do not forget|keep in mind)`)
)

// summarize writes the summary sections mechanically from the request. Every item is a line or
// token copied from the input; only the framing ("- ", "N. ", " — ", " [tool: x]", " → ",
// "None.") is the summarizer's own.
func summarize(c call) string {
	prompt := c.system + "\n\n" + c.msgs[len(c.msgs)-1].Content
	lines := strings.Split(prompt, "\n")
	turnsAt, prevAt := -1, -1
	for i, l := range lines {
		t := strings.TrimLeft(strings.TrimSpace(l), "#*=-<[ ")
		switch {
		case prevAt < 0 && strings.HasPrefix(t, markPrevious):
			prevAt = i
		case turnsAt < 0 && (strings.HasPrefix(t, markTurns) || strings.HasPrefix(t, markNewTurns)):
			turnsAt = i
		}
	}
	if turnsAt < 0 {
		// Template in the system prompt, turns in the user message.
		turnsAt = strings.Count(c.system+"\n", "\n")
	}
	templateEnd := turnsAt
	if prevAt >= 0 && prevAt < templateEnd {
		templateEnd = prevAt
	}
	headings := templateHeadings(lines[:templateEnd])
	var previous map[string][]string
	if prevAt >= 0 && prevAt < turnsAt {
		previous = parseSections(lines[prevAt+1 : turnsAt])
	}
	turns := parseTurns(lines[min(turnsAt+1, len(lines)):])

	var b strings.Builder
	for i, h := range headings {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("## " + h + "\n")
		items := sectionItems(h, previous[h], turns)
		if len(items) == 0 {
			items = []string{"None."}
		}
		for _, it := range items {
			b.WriteString(it + "\n")
		}
	}
	return b.String()
}

func templateHeadings(lines []string) []string {
	var hs []string
	seen := map[string]bool{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "## ") {
			continue
		}
		h := strings.TrimSpace(strings.TrimPrefix(l, "## "))
		if h != "" && !seen[h] {
			seen[h] = true
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return DefaultSummarySections
	}
	return hs
}

// parseSections splits a previous summary by its "## " headings; "None." lines are dropped.
func parseSections(lines []string) map[string][]string {
	out := map[string][]string{}
	cur := ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "## ") {
			cur = strings.TrimSpace(t[3:])
			continue
		}
		if cur == "" || t == "" || t == "None." {
			continue
		}
		out[cur] = append(out[cur], t)
	}
	return out
}

func parseTurns(lines []string) []summaryTurn {
	var turns []summaryTurn
	inCalls := false
	for _, l := range lines {
		if m := turnHeader.FindStringSubmatch(strings.TrimSpace(l)); m != nil && m[1] != "Tool calls" {
			turns = append(turns, summaryTurn{role: strings.TrimSpace(m[1])})
			inCalls = false
			l = m[2]
		}
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if len(turns) == 0 {
			turns = append(turns, summaryTurn{role: "USER"})
		}
		cur := &turns[len(turns)-1]
		if cur.role == "ASSISTANT" {
			if strings.HasPrefix(t, "[Tool calls") {
				inCalls = true
				t = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "[Tool calls"), ":"))
				if t == "" {
					continue
				}
			}
			if inCalls {
				for _, part := range splitCalls(strings.TrimSuffix(t, "]")) {
					cur.calls = append(cur.calls, part)
				}
				continue
			}
		}
		cur.lines = append(cur.lines, t)
	}
	return turns
}

// splitCalls finds the "name(args)" calls on one line; args may hold parentheses.
func splitCalls(line string) []string {
	line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "-"))
	if callLine.MatchString(line) {
		return []string{strings.TrimSpace(line)}
	}
	return nil
}

func callName(call string) string {
	if m := callLine.FindStringSubmatch(call); m != nil {
		return m[1]
	}
	return call
}

// sectionItems fills one section: the previous summary's items first, then what the new turns
// add, without duplicates.
func sectionItems(heading string, prev []string, turns []summaryTurn) []string {
	h := strings.ToLower(heading)
	items := append([]string(nil), prev...)
	seen := map[string]bool{}
	for _, it := range items {
		seen[it] = true
	}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			items = append(items, s)
		}
	}
	userLines := func(re *regexp.Regexp) {
		for _, t := range turns {
			if t.role != "USER" {
				continue
			}
			for _, l := range t.lines {
				if re.MatchString(l) {
					add("- " + clip(l, 300))
				}
			}
		}
	}
	anyLines := func(re *regexp.Regexp, limit int) {
		for _, t := range turns {
			for _, l := range t.lines {
				if len(items) >= limit {
					return
				}
				if re.MatchString(l) {
					add("- " + clip(l, 300))
				}
			}
		}
	}
	switch {
	case strings.Contains(h, "goal"):
		if len(items) > 0 {
			return items
		}
		for _, t := range turns {
			if t.role == "USER" && len(t.lines) > 0 {
				add(clip(t.lines[0], 300))
				break
			}
		}
	case strings.Contains(h, "constraint") || strings.Contains(h, "preference"):
		userLines(reConstraint)
	case strings.Contains(h, "completed") || strings.Contains(h, "done"):
		n := 0
		for _, it := range items {
			if i := strings.IndexByte(it, '.'); i > 0 {
				if v, err := strconv.Atoi(it[:i]); err == nil && v > n {
					n = v
				}
			}
		}
		for i, t := range turns {
			if t.role != "ASSISTANT" {
				continue
			}
			results := followingResults(turns[i+1:])
			for k, c := range t.calls {
				n++
				item := strconv.Itoa(n) + ". " + clip(c, 300)
				if k < len(results) && len(results[k].lines) > 0 {
					item += " — " + clip(results[k].lines[0], 200)
				}
				add(item + " [tool: " + callName(c) + "]")
			}
		}
	case strings.Contains(h, "active") || strings.Contains(h, "in-progress") || strings.Contains(h, "in progress"):
		for i := len(turns) - 1; i >= 0; i-- {
			if turns[i].role == "ASSISTANT" && len(turns[i].lines) > 0 {
				return []string{"- " + clip(turns[i].lines[len(turns[i].lines)-1], 300)}
			}
		}
	case strings.Contains(h, "blocked") || strings.Contains(h, "blocker"):
		anyLines(reBlocked, 12+len(prev))
	case strings.Contains(h, "decision"):
		anyLines(reDecision, 20+len(prev))
	case strings.Contains(h, "resolved") || strings.Contains(h, "question"):
		for i, t := range turns {
			if t.role != "USER" {
				continue
			}
			for _, l := range t.lines {
				if !strings.HasSuffix(l, "?") {
					continue
				}
				for _, next := range turns[i+1:] {
					if next.role == "ASSISTANT" && len(next.lines) > 0 {
						add("- " + clip(l, 200) + " → " + clip(next.lines[0], 200))
						break
					}
				}
			}
		}
	case strings.Contains(h, "file"):
		for _, t := range turns {
			for _, l := range append(append([]string(nil), t.calls...), t.lines...) {
				for _, p := range pathToken.FindAllString(l, -1) {
					if len(items) < 30+len(prev) && !strings.Contains(p, "...") {
						add("- " + p)
					}
				}
			}
		}
	case strings.Contains(h, "remaining") || strings.Contains(h, "pending") || strings.Contains(h, "next"):
		userLines(reRemaining)
		if n := len(turns); n > 0 && turns[n-1].role == "USER" && len(turns[n-1].lines) > 0 {
			add("- " + clip(turns[n-1].lines[0], 300))
		}
	case strings.Contains(h, "critical") || strings.Contains(h, "context"):
		anyLines(reCritical, 20+len(prev))
		for _, t := range turns {
			for _, l := range append(append([]string(nil), t.calls...), t.lines...) {
				for _, id := range idToken.FindAllString(l, -1) {
					if len(items) < 40+len(prev) {
						add("- " + id)
					}
				}
			}
		}
	case strings.Contains(h, "snapshot"):
		for i := len(turns) - 1; i >= 0; i-- {
			if turns[i].role == "USER" && len(turns[i].lines) > 0 {
				return []string{clip(strings.Join(turns[i].lines, " "), 1400)}
			}
		}
	}
	return items
}

// followingResults are the tool results right after an assistant turn, in order.
func followingResults(turns []summaryTurn) []summaryTurn {
	var out []summaryTurn
	for _, t := range turns {
		if !strings.HasPrefix(t.role, "TOOL") {
			break
		}
		out = append(out, t)
	}
	return out
}
