package compress

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/store"
)

// LedgerHeading opens the working-set ledger inside a summary body.
const LedgerHeading = "## Working Set"

// EntryKind is a section of the working-set ledger.
type EntryKind string

// Ledger sections, in rendering order.
const (
	EntryWrote      EntryKind = "wrote"
	EntryRead       EntryKind = "read"
	EntryCommand    EntryKind = "command"
	EntryIdentifier EntryKind = "identifier"
	EntryError      EntryKind = "error"
	EntryDecision   EntryKind = "decision"
	EntryAsk        EntryKind = "ask"
)

var entryOrder = []EntryKind{EntryWrote, EntryRead, EntryCommand, EntryIdentifier, EntryError, EntryDecision, EntryAsk}

var entryHeadings = map[EntryKind]string{
	EntryWrote:      "### Files written",
	EntryRead:       "### Files read",
	EntryCommand:    "### Commands run",
	EntryIdentifier: "### Identifiers",
	EntryError:      "### Errors seen",
	EntryDecision:   "### User decisions and constraints (verbatim)",
	EntryAsk:        "### User messages (verbatim, newest first)",
}

// Ledger bounds. Each kind keeps its most relevant, then newest, entries up to its cap; the
// rendered ledger never exceeds MaxLedgerChars (user asks are quoted within Config.UserAsksBudget
// of that and older ones become excerpts with a recovery pointer).
var entryCaps = map[EntryKind]int{
	EntryWrote: 30, EntryRead: 30, EntryCommand: 30, EntryIdentifier: 80,
	EntryError: 15, EntryDecision: 30, EntryAsk: 40,
}

// MaxLedgerChars bounds the rendered ledger.
const MaxLedgerChars = 12_000

// trimOrder is the order in which kinds lose their weakest entries when the ledger is too big.
var trimOrder = []EntryKind{EntryIdentifier, EntryError, EntryRead, EntryCommand, EntryAsk, EntryWrote, EntryDecision}

const (
	maxEntryText   = 200
	maxDecision    = 300
	askExcerpt     = 160
	scanToolPrefix = 6_000 // tool output scanned for identifiers: first and last part only
	scanToolSuffix = 2_000
)

// LedgerEntry is one fact of the working set, pointing at the message it came from.
type LedgerEntry struct {
	Kind   EntryKind
	Text   string
	Status string // exit status of a command ("?" when unknown)
	MsgID  int64
	// Trimmed marks an ask shown as an excerpt; the original is recovered with session_search.
	Trimmed bool
	// relevance ranks entries of a kind: stated by the user > said or done by the agent > seen
	// in tool output.
	relevance int
}

// Ledger is the mechanically extracted working set of a session.
type Ledger struct {
	Entries []LedgerEntry
}

func (e LedgerEntry) key() string { return string(e.Kind) + "\x00" + e.Text }

// add merges one entry, keeping the newest message id and the highest relevance.
func (l *Ledger) merge(other []LedgerEntry) {
	pos := make(map[string]int, len(l.Entries)+len(other))
	for i, e := range l.Entries {
		pos[e.key()] = i
	}
	for _, e := range other {
		if i, ok := pos[e.key()]; ok {
			cur := &l.Entries[i]
			cur.relevance = max(cur.relevance, e.relevance)
			if e.MsgID >= cur.MsgID {
				cur.MsgID = e.MsgID
				if e.Status != "" {
					cur.Status = e.Status
				}
			}
			cur.Trimmed = cur.Trimmed && e.Trimmed
			continue
		}
		pos[e.key()] = len(l.Entries)
		l.Entries = append(l.Entries, e)
	}
}

// bound applies the per-kind caps and returns the entries of each kind in rendering order.
func (l *Ledger) bound() {
	byKind := map[EntryKind][]LedgerEntry{}
	for _, e := range l.Entries {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	out := l.Entries[:0:0]
	for _, k := range entryOrder {
		es := byKind[k]
		slices.SortStableFunc(es, func(a, b LedgerEntry) int {
			if c := cmp.Compare(b.relevance, a.relevance); c != 0 {
				return c
			}
			return cmp.Compare(b.MsgID, a.MsgID)
		})
		if len(es) > entryCaps[k] {
			es = es[:entryCaps[k]]
		}
		slices.SortStableFunc(es, func(a, b LedgerEntry) int {
			if k == EntryAsk {
				return cmp.Compare(b.MsgID, a.MsgID)
			}
			return cmp.Compare(a.MsgID, b.MsgID)
		})
		out = append(out, es...)
	}
	l.Entries = out
}

// sourceMarks keep the relevance of identifiers and errors across compactions: what the user
// said outranks what the agent said, which outranks what a tool printed.
var sourceMarks = map[int]string{1: " (output)", 2: "", 3: " (user)"}

func idTag(id int64) string { return "[m" + strconv.FormatInt(id, 10) + "]" }

// render writes the ledger section. Asks are quoted verbatim newest first while askBudget
// lasts; later ones become excerpts (and stay excerpts in every later ledger).
func (l *Ledger) render(sessionID string, askBudget int) string {
	for {
		s := l.renderOnce(sessionID, askBudget)
		if len(s) <= MaxLedgerChars || !l.dropWeakest() {
			return s
		}
	}
}

func (l *Ledger) renderOnce(sessionID string, askBudget int) string {
	var b strings.Builder
	b.WriteString(LedgerHeading)
	b.WriteString("\nExtracted mechanically from the compacted turns (no model involved); newer turns override it. ")
	if sessionID != "" {
		fmt.Fprintf(&b, "Recover the original of any entry [mN] with session_search(session_id=%q, around_message_id=N).\n", sessionID)
	} else {
		b.WriteString("Recover the original of any entry [mN] with session_search(around_message_id=N).\n")
	}
	left := askBudget
	for _, k := range entryOrder {
		first := true
		for i := range l.Entries {
			e := &l.Entries[i]
			if e.Kind != k {
				continue
			}
			if first {
				b.WriteString("\n" + entryHeadings[k] + "\n")
				first = false
			}
			switch k {
			case EntryWrote, EntryRead:
				fmt.Fprintf(&b, "- `%s` %s\n", e.Text, idTag(e.MsgID))
			case EntryCommand:
				fmt.Fprintf(&b, "- `%s` -> exit %s %s\n", e.Text, cmp.Or(e.Status, "?"), idTag(e.MsgID))
			case EntryDecision:
				fmt.Fprintf(&b, "- %q %s\n", e.Text, idTag(e.MsgID))
			case EntryAsk:
				if !e.Trimmed && len(e.Text) <= left {
					left -= len(e.Text)
					fmt.Fprintf(&b, "- %s %s\n", idTag(e.MsgID), strings.ReplaceAll(e.Text, "\n", "\n  "))
				} else {
					if !e.Trimmed {
						e.Text, e.Trimmed = clip(e.Text, askExcerpt), true
					}
					fmt.Fprintf(&b, "- %s (excerpt) %s\n", idTag(e.MsgID), e.Text)
				}
			default:
				fmt.Fprintf(&b, "- %s%s %s\n", e.Text, sourceMarks[e.relevance], idTag(e.MsgID))
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// dropWeakest removes the least relevant, oldest entry of the first kind in trimOrder that has
// more than a few entries left. It reports false when nothing can go.
func (l *Ledger) dropWeakest() bool {
	for _, minKeep := range []int{5, 0} {
		for _, k := range trimOrder {
			idx, count := -1, 0
			for i, e := range l.Entries {
				if e.Kind != k {
					continue
				}
				count++
				if idx < 0 || e.relevance < l.Entries[idx].relevance ||
					(e.relevance == l.Entries[idx].relevance && e.MsgID < l.Entries[idx].MsgID) {
					idx = i
				}
			}
			if count > minKeep && idx >= 0 {
				l.Entries = slices.Delete(l.Entries, idx, idx+1)
				return true
			}
		}
	}
	return false
}

var (
	leadIDRe  = regexp.MustCompile(`^- \[m(\d+)\] `)
	trailIDRe = regexp.MustCompile(` \[m(\d+)\]$`)
	cmdRe     = regexp.MustCompile("^`(.*)` -> exit (\\S+)$")
)

// parseLedger reads back the ledger section of a summary body (a rendered ledger round-trips).
func parseLedger(body string) Ledger {
	var l Ledger
	_, section, ok := cutSection(body, LedgerHeading)
	if !ok {
		return l
	}
	var kind EntryKind
	var cur *LedgerEntry
	flush := func() {
		if cur != nil {
			l.Entries = append(l.Entries, *cur)
			cur = nil
		}
	}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "  ") && cur != nil && cur.Kind == EntryAsk && !cur.Trimmed {
			cur.Text += "\n" + line[2:]
			continue
		}
		flush()
		if strings.HasPrefix(line, "### ") {
			kind = ""
			for k, h := range entryHeadings {
				if line == h {
					kind = k
				}
			}
			continue
		}
		if kind == "" || !strings.HasPrefix(line, "- ") {
			continue
		}
		e := LedgerEntry{Kind: kind, relevance: 2}
		if kind == EntryAsk {
			m := leadIDRe.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			e.MsgID, _ = strconv.ParseInt(m[1], 10, 64)
			rest := line[len(m[0]):]
			if ex, ok := strings.CutPrefix(rest, "(excerpt) "); ok {
				rest, e.Trimmed = ex, true
			}
			e.Text, e.relevance = rest, 3
			cur = &e
			continue
		}
		rest := line[2:]
		if m := trailIDRe.FindStringSubmatch(rest); m != nil {
			e.MsgID, _ = strconv.ParseInt(m[1], 10, 64)
			rest = rest[:len(rest)-len(m[0])]
		}
		switch kind {
		case EntryIdentifier, EntryError:
			for rel, mark := range sourceMarks {
				if mark != "" && strings.HasSuffix(rest, mark) {
					rest, e.relevance = strings.TrimSuffix(rest, mark), rel
				}
			}
		case EntryWrote, EntryRead:
			rest = strings.TrimSuffix(strings.TrimPrefix(rest, "`"), "`")
		case EntryCommand:
			if m := cmdRe.FindStringSubmatch(rest); m != nil {
				rest, e.Status = m[1], m[2]
			}
		case EntryDecision:
			if uq, err := strconv.Unquote(rest); err == nil {
				rest = uq
			}
			e.relevance = 3
		}
		if rest == "" {
			continue
		}
		e.Text = rest
		cur = &e
	}
	flush()
	return l
}

// cutSection splits body at a "## " heading line: before it, and the section up to the next
// "## " heading (exclusive). ok is false when the heading is absent.
func cutSection(body, heading string) (before, section string, ok bool) {
	i := -1
	if strings.HasPrefix(body, heading+"\n") || body == heading {
		i = 0
	} else if j := strings.Index(body, "\n"+heading+"\n"); j >= 0 {
		i = j + 1
	} else if strings.HasSuffix(body, "\n"+heading) {
		i = len(body) - len(heading)
	}
	if i < 0 {
		return body, "", false
	}
	rest := body[i+len(heading):]
	end := len(rest)
	if j := strings.Index(rest, "\n## "); j >= 0 {
		end = j
	}
	return body[:i], rest[:end], true
}

// removeSection drops a "## " section from body.
func removeSection(body, heading string) string {
	before, section, ok := cutSection(body, heading)
	if !ok {
		return body
	}
	after := body[len(before)+len(heading)+len(section):]
	return strings.TrimSpace(strings.TrimRight(before, "\n") + "\n" + strings.TrimLeft(after, "\n"))
}

// extractLedger reads the working set out of messages mechanically.
func extractLedger(ms []store.Message) []LedgerEntry {
	var out []LedgerEntry
	results := make(map[string]string)
	for _, m := range ms {
		if m.Role == store.RoleTool && m.ToolCallID != "" {
			results[m.ToolCallID] = m.Content
		}
	}
	add := func(k EntryKind, text string, id int64, rel int) {
		text = strings.TrimSpace(text)
		if text == "" {
			return
		}
		limit := maxEntryText
		if k == EntryDecision {
			limit = maxDecision
		}
		if k != EntryAsk {
			text = clip(text, limit)
		}
		out = append(out, LedgerEntry{Kind: k, Text: text, MsgID: id, relevance: rel})
	}
	scanIDs := func(text string, id int64, rel int) {
		for _, tok := range identifiers(text) {
			add(EntryIdentifier, tok, id, rel)
		}
	}
	for _, m := range ms {
		switch m.Role {
		case store.RoleUser:
			if isSummary(m) {
				p, _ := parseSummary(m.Content)
				prev := parseLedger(p.Body)
				out = append(out, prev.Entries...)
				for _, text := range []string{p.Prior, p.Trailing} {
					if text != "" {
						userFacts(text, m.ID, add, scanIDs)
					}
				}
				continue
			}
			if text, ok := userText(m); ok {
				userFacts(text, m.ID, add, scanIDs)
			}
		case store.RoleAssistant:
			if isSummary(m) {
				p, _ := parseSummary(m.Content)
				out = append(out, parseLedger(p.Body).Entries...)
				if p.Prior != "" {
					scanIDs(p.Prior, m.ID, 2)
				}
			} else {
				scanIDs(stripThink(m.Content), m.ID, 2)
			}
			for _, tc := range m.ToolCalls {
				args := parseArgs(tc.Function.Arguments)
				kind := classifyTool(tc.Function.Name)
				if args.Command != "" {
					status := "?"
					if res, ok := results[tc.ID]; ok {
						if s, ok := exitStatus(res); ok {
							status = s
						}
					}
					cmdText := clip(args.Command, 160)
					out = append(out, LedgerEntry{Kind: EntryCommand, Text: cmdText, Status: status, MsgID: m.ID, relevance: 2})
					scanIDs(args.Command, m.ID, 2)
				}
				for _, p := range args.Paths {
					switch kind {
					case kindWrite:
						add(EntryWrote, p, m.ID, 2)
					case kindRead:
						add(EntryRead, p, m.ID, 2)
					default:
						add(EntryIdentifier, p, m.ID, 2)
					}
				}
			}
		case store.RoleTool:
			text := m.Content
			if len(text) > scanToolPrefix+scanToolSuffix {
				text = text[:scanToolPrefix] + "\n" + text[len(text)-scanToolSuffix:]
			}
			scanIDs(text, m.ID, 1)
			for _, e := range errorLines(text, 3) {
				add(EntryError, e, m.ID, 1)
			}
		}
	}
	return out
}

func userFacts(text string, id int64, add func(EntryKind, string, int64, int), scanIDs func(string, int64, int)) {
	add(EntryAsk, text, id, 3)
	scanIDs(text, id, 3)
	for _, d := range decisions(text, 5) {
		add(EntryDecision, d, id, 3)
	}
	for _, e := range errorLines(text, 2) {
		// A user sentence merely mentioning a failure is an ask, not an error report.
		if containsAny(strings.ToLower(e), "error", "exception", "panic", "traceback") {
			add(EntryError, e, id, 3)
		}
	}
}

// decisionCues mark a user sentence as a decision or constraint.
var decisionCues = []string{
	"let's", "let us", "we will", "we'll", "we should", "we must", "must", "never", "always",
	"don't", "do not", "dont", "decided", "decide", "instead", "prefer", "make sure", "remember",
	"should not", "shouldn't", "only use", "avoid", "from now on", "keep ",
}

// decisions returns the sentences of a user message that state a decision or constraint.
func decisions(text string, limit int) []string {
	var out []string
	for _, s := range sentences(text) {
		ls := strings.ToLower(s)
		for _, cue := range decisionCues {
			if i := strings.Index(ls, cue); i >= 0 && (i == 0 || !isWordByte(ls[i-1])) {
				out = append(out, s)
				break
			}
		}
		if len(out) == limit {
			break
		}
	}
	return out
}

func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		end := c == '\n' || ((c == '.' || c == '!' || c == '?' || c == ';') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n'))
		if end {
			if s := strings.TrimSpace(text[start : i+1]); len(s) > 3 {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); len(s) > 3 {
		out = append(out, s)
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

var errorWords = []string{"error", "exception", "panic:", "traceback", "fatal", "fail", "segmentation fault", "undefined", "cannot ", "can't ", "permission denied", "not found", "does not exist", "no such ", "refused", "invalid "}

// errorLines returns up to limit lines of text that report an error.
func errorLines(text string, limit int) []string {
	lower := asciiLower(text)
	var words []string
	for _, w := range errorWords {
		if strings.Contains(lower, w) {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return nil
	}
	var out []string
	for pos := 0; pos < len(text) && len(out) < limit; {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		line := lower[pos:end]
		pos = end + 1
		if len(strings.TrimSpace(line)) < 8 {
			continue
		}
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, clip(strings.TrimSpace(text[pos-1-len(line):pos-1]), maxEntryText))
				break
			}
		}
	}
	return out
}

// asciiLower lowers ASCII letters only, so byte offsets stay valid in the original.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// identifiers finds paths, SHAs, issue/PR numbers and URLs in text with one tokenising pass
// (no regular expressions: this runs over every compacted message).
func identifiers(text string) []string {
	var out []string
	start := -1
	interesting := false
	flush := func(end int) {
		if start >= 0 && interesting {
			if id := classifyIdentifier(text[start:end]); id != "" && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		start, interesting = -1, false
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < 0x80 && isIDSeparator(rune(c)) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
		// Only tokens with one of these can be an identifier; most words are skipped unclassified.
		switch {
		case c == '/' || c == '.' || c == '#':
			interesting = true
		case c >= '0' && c <= '9':
			interesting = true
		}
	}
	flush(len(text))
	return out
}

func isIDSeparator(r rune) bool {
	switch r {
	case ' ', '\n', '\t', '\r', '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', ';', '|', '*':
		return true
	}
	return false
}

var knownExt = map[string]bool{
	"go": true, "py": true, "js": true, "ts": true, "tsx": true, "jsx": true, "rs": true, "java": true,
	"c": true, "h": true, "cc": true, "cpp": true, "hpp": true, "md": true, "json": true, "yaml": true,
	"yml": true, "toml": true, "sql": true, "sh": true, "txt": true, "html": true, "css": true, "rb": true,
	"php": true, "mod": true, "sum": true, "lock": true, "cfg": true, "ini": true, "env": true, "proto": true,
	"kt": true, "swift": true, "scala": true, "vue": true, "svelte": true, "xml": true, "csv": true, "log": true,
	"dockerfile": true, "tf": true, "gradle": true, "conf": true,
}

func classifyIdentifier(tok string) string {
	tok = strings.TrimRight(tok, ".:!?")
	if len(tok) < 2 || len(tok) > maxEntryText {
		return ""
	}
	if strings.HasPrefix(tok, "http://") || strings.HasPrefix(tok, "https://") {
		if len(tok) > len("https://x") {
			return tok
		}
		return ""
	}
	if tok[0] == '#' {
		if n := len(tok) - 1; n >= 1 && n <= 6 && allDigits(tok[1:]) {
			return tok
		}
		return ""
	}
	if isSHA(tok) {
		return tok
	}
	// path, possibly with :line[:col]
	p := tok
	for range 2 {
		if i := strings.LastIndexByte(p, ':'); i > 0 && allDigits(p[i+1:]) && i+1 < len(p) {
			p = p[:i]
		}
	}
	if !pathChars(p) {
		return ""
	}
	base := p[strings.LastIndexByte(p, '/')+1:]
	dot := strings.LastIndexByte(base, '.')
	ext := ""
	if dot > 0 {
		ext = strings.ToLower(base[dot+1:])
	}
	switch {
	case strings.Contains(p, "/") && strings.Count(p, "/") < len(p) && (dot > 0 || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "~/")) && len(strings.Trim(p, "/.~")) > 1:
		return p
	case knownExt[ext] && dot > 0:
		return p
	}
	return ""
}

func pathChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isWordByte(c) || c == '/' || c == '.' || c == '-' || c == '~' || c == '@' || c == '+') {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isSHA accepts 40-hex object names and 7–12 character short SHAs that mix digits and letters.
func isSHA(s string) bool {
	if len(s) != 40 && (len(s) < 7 || len(s) > 12) {
		return false
	}
	digits, letters := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'f':
			letters++
		default:
			return false
		}
	}
	return len(s) == 40 || digits > 0 && letters > 0
}

var thinkRe = regexp.MustCompile(`(?s)<(think|thinking|reasoning)>.*?</(think|thinking|reasoning)>`)

func stripThink(s string) string {
	if !strings.Contains(s, "<think") && !strings.Contains(s, "<reasoning") {
		return s
	}
	return strings.TrimSpace(thinkRe.ReplaceAllString(s, ""))
}
