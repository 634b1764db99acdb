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

type entryKey struct {
	kind EntryKind
	text string
}

func (e LedgerEntry) key() entryKey { return entryKey{e.Kind, e.Text} }

// merge adds entries, merging each into an equal one (same kind and text) by keeping the newest
// message id and the highest relevance.
func (l *Ledger) merge(other []LedgerEntry) {
	pos := make(map[entryKey]int, len(l.Entries)+len(other))
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
// Each kind keeps its most relevant, then newest, entries (ties: the earlier in the slice)
// and lists them oldest first (asks newest first). Indices are sorted, not entries.
func (l *Ledger) bound() {
	byKind := map[EntryKind][]int{}
	for i, e := range l.Entries {
		byKind[e.Kind] = append(byKind[e.Kind], i)
	}
	out := make([]LedgerEntry, 0, min(len(l.Entries), 255))
	for _, k := range entryOrder {
		idx := byKind[k]
		slices.SortFunc(idx, func(a, b int) int {
			ea, eb := &l.Entries[a], &l.Entries[b]
			if c := cmp.Compare(eb.relevance, ea.relevance); c != 0 {
				return c
			}
			if c := cmp.Compare(eb.MsgID, ea.MsgID); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		if len(idx) > entryCaps[k] {
			idx = idx[:entryCaps[k]]
		}
		// Rendering order by message id; equal ids keep the order just established.
		pos := make([]int, len(idx))
		for p := range pos {
			pos[p] = p
		}
		slices.SortFunc(pos, func(a, b int) int {
			c := cmp.Compare(l.Entries[idx[a]].MsgID, l.Entries[idx[b]].MsgID)
			if k == EntryAsk {
				c = -c
			}
			if c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		for _, p := range pos {
			out = append(out, l.Entries[idx[p]])
		}
	}
	l.Entries = out
}

// sourceMarks keep the relevance of identifiers and errors across compactions: what the user
// said outranks what the agent said, which outranks what a tool printed.
var sourceMarks = map[int]string{1: " (output)", 2: "", 3: " (user)"}

func idTag(id int64) string { return "[m" + strconv.FormatInt(id, 10) + "]" }

// render writes the ledger section. Asks are quoted verbatim newest first while askBudget
// lasts; later ones become excerpts (and stay excerpts in every later ledger). When the result
// would exceed MaxLedgerChars, entries go weakest first (see trimSequence) until it fits.
//
// Every entry's line is formatted once: dropping entries never changes another entry's line
// (an ask quoted verbatim stays within the budget when others go, one already cut to an excerpt
// stays one), so sizes are known up front and the ledger is written once.
func (l *Ledger) render(sessionID string, askBudget int) string {
	return l.renderWithin(sessionID, askBudget, MaxLedgerChars)
}

// renderWithin is render with maxChars instead of MaxLedgerChars as the bound. A bound too
// small for the header and one entry renders nothing.
func (l *Ledger) renderWithin(sessionID string, askBudget, maxChars int) string {
	header := ledgerHeader(sessionID)
	if maxChars < len(header)+64 {
		return ""
	}
	lines := l.formatLines(askBudget)
	kindCount := map[EntryKind]int{}
	size := len(header)
	for i, line := range lines {
		if line == "" {
			continue
		}
		k := l.Entries[i].Kind
		if kindCount[k] == 0 {
			size += len(entryHeadings[k]) + 2
		}
		kindCount[k]++
		size += len(line)
	}
	dropped := make([]bool, len(l.Entries))
	maxNL := trailingNewlines(header)
	for _, line := range lines {
		maxNL = max(maxNL, trailingNewlines(line))
	}
	// fits reports whether the ledger as written (trailing newlines cut) is within the bound.
	// What is written ends in at least one and at most maxNL newlines; only in between is the
	// last line written looked up.
	fits := func() bool {
		if size-1 <= maxChars {
			return true
		}
		if size-maxNL > maxChars {
			return false
		}
		last := header
		for ki := len(entryOrder) - 1; ki >= 0 && last == header; ki-- {
			if k := entryOrder[ki]; kindCount[k] > 0 {
				for i := len(l.Entries) - 1; i >= 0; i-- {
					if !dropped[i] && l.Entries[i].Kind == k && lines[i] != "" {
						last = lines[i]
						break
					}
				}
			}
		}
		return size-trailingNewlines(last) <= maxChars
	}
	if !fits() {
		for _, i := range l.trimSequence() {
			dropped[i] = true
			k := l.Entries[i].Kind
			size -= len(lines[i])
			if kindCount[k]--; kindCount[k] == 0 {
				size -= len(entryHeadings[k]) + 2
			}
			if fits() {
				break
			}
		}
		kept := l.Entries[:0]
		keptLines := lines[:0]
		for i, e := range l.Entries {
			if !dropped[i] {
				kept = append(kept, e)
				keptLines = append(keptLines, lines[i])
			}
		}
		l.Entries, lines = kept, keptLines
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(header)
	for _, k := range entryOrder {
		first := true
		for i := range l.Entries {
			if l.Entries[i].Kind != k || lines[i] == "" {
				continue
			}
			if first {
				b.WriteString("\n" + entryHeadings[k] + "\n")
				first = false
			}
			b.WriteString(lines[i])
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func trailingNewlines(s string) int {
	return len(s) - len(strings.TrimRight(s, "\n"))
}

func ledgerHeader(sessionID string) string {
	const intro = LedgerHeading + "\nExtracted mechanically from the compacted turns (no model involved); newer turns override it. "
	if sessionID != "" {
		return intro + fmt.Sprintf("Recover the original of any entry [mN] with session_search(session_id=%q, around_message_id=N).\n", sessionID)
	}
	return intro + "Recover the original of any entry [mN] with session_search(around_message_id=N).\n"
}

// formatLines formats each entry's line (with its newline) in rendering order: kinds in
// entryOrder, entries of a kind in slice order. Asks quoted past askBudget are cut to excerpts
// here, in place. Entries of unknown kinds get "" and are not written.
func (l *Ledger) formatLines(askBudget int) []string {
	lines := make([]string, len(l.Entries))
	left := askBudget
	for _, k := range entryOrder {
		for i := range l.Entries {
			e := &l.Entries[i]
			if e.Kind != k {
				continue
			}
			switch k {
			case EntryWrote, EntryRead:
				lines[i] = "- `" + e.Text + "` " + idTag(e.MsgID) + "\n"
			case EntryCommand:
				lines[i] = "- `" + e.Text + "` -> exit " + cmp.Or(e.Status, "?") + " " + idTag(e.MsgID) + "\n"
			case EntryDecision:
				lines[i] = "- " + strconv.Quote(e.Text) + " " + idTag(e.MsgID) + "\n"
			case EntryAsk:
				if !e.Trimmed && len(e.Text) <= left {
					left -= len(e.Text)
					lines[i] = "- " + idTag(e.MsgID) + " " + strings.ReplaceAll(e.Text, "\n", "\n  ") + "\n"
				} else {
					if !e.Trimmed {
						e.Text, e.Trimmed = clip(e.Text, askExcerpt), true
					}
					lines[i] = "- " + idTag(e.MsgID) + " (excerpt) " + e.Text + "\n"
				}
			default:
				lines[i] = "- " + e.Text + sourceMarks[e.relevance] + " " + idTag(e.MsgID) + "\n"
			}
		}
	}
	return lines
}

// trimSequence is the order in which entries leave an oversized ledger: first every kind down
// to 5 entries, then down to none, kinds in trimOrder; within a kind the least relevant, then
// oldest (then earliest in the slice) first.
func (l *Ledger) trimSequence() []int {
	byKind := map[EntryKind][]int{}
	for i, e := range l.Entries {
		byKind[e.Kind] = append(byKind[e.Kind], i)
	}
	for _, idx := range byKind {
		slices.SortStableFunc(idx, func(a, b int) int {
			ea, eb := l.Entries[a], l.Entries[b]
			if c := cmp.Compare(ea.relevance, eb.relevance); c != 0 {
				return c
			}
			return cmp.Compare(ea.MsgID, eb.MsgID)
		})
	}
	var seq []int
	for _, k := range trimOrder {
		if idx := byKind[k]; len(idx) > 5 {
			seq = append(seq, idx[:len(idx)-5]...)
		}
	}
	for _, k := range trimOrder {
		idx := byKind[k]
		seq = append(seq, idx[max(0, len(idx)-5):]...)
	}
	return seq
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

// ledgerEntries reads the working set out of messages mechanically; scans[i] is ms[i]'s scan.
func ledgerEntries(ms []store.Message, scans []msgScan) []LedgerEntry {
	size := 0
	for _, sc := range scans {
		size += 1 + len(sc.ids) + len(sc.errs) + 2*len(sc.args)
	}
	out := make([]LedgerEntry, 0, size)
	results := make(map[string]int)
	for i, m := range ms {
		if m.Role == store.RoleTool && m.ToolCallID != "" {
			results[m.ToolCallID] = i
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
	addIDs := func(ids []string, id int64, rel int) {
		for _, tok := range ids {
			add(EntryIdentifier, tok, id, rel)
		}
	}
	userFacts := func(sc msgScan, id int64) {
		add(EntryAsk, sc.text, id, 3)
		addIDs(sc.ids, id, 3)
		for _, d := range decisions(sc.text, 5) {
			add(EntryDecision, d, id, 3)
		}
		for _, e := range sc.errs[:min(2, len(sc.errs))] {
			// A user sentence merely mentioning a failure is an ask, not an error report.
			if containsAny(strings.ToLower(e), "error", "exception", "panic", "traceback") {
				add(EntryError, e, id, 3)
			}
		}
	}
	for i, m := range ms {
		sc := scans[i]
		switch m.Role {
		case store.RoleUser:
			if isSummary(m) {
				p, _ := parseSummary(m.Content)
				prev := parseLedger(p.Body)
				out = append(out, prev.Entries...)
				for _, text := range []string{p.Prior, p.Trailing} {
					if text != "" {
						userFacts(msgScan{text: text, ids: identifiers(text), errs: errorLines(text, 2)}, m.ID)
					}
				}
				continue
			}
			if sc.text != "" {
				userFacts(sc, m.ID)
			}
		case store.RoleAssistant:
			if isSummary(m) {
				p, _ := parseSummary(m.Content)
				out = append(out, parseLedger(p.Body).Entries...)
				if p.Prior != "" {
					addIDs(identifiers(p.Prior), m.ID, 2)
				}
			} else {
				addIDs(sc.ids, m.ID, 2)
			}
			for j, tc := range m.ToolCalls {
				args := sc.args[j]
				kind := classifyTool(tc.Function.Name)
				if args.Command != "" {
					status := "?"
					if r, ok := results[tc.ID]; ok {
						if s, ok := scans[r].exitStatus(ms[r].Content); ok {
							status = s
						}
					}
					cmdText := clip(args.Command, 160)
					out = append(out, LedgerEntry{Kind: EntryCommand, Text: cmdText, Status: status, MsgID: m.ID, relevance: 2})
					addIDs(identifiers(args.Command), m.ID, 2)
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
			addIDs(sc.ids, m.ID, 1)
			for _, e := range sc.errs {
				add(EntryError, e, m.ID, 1)
			}
		}
	}
	return out
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

var errorWordSet = newWordSet(errorWords)

// hasErrorWord reports whether line contains one of errorWords, ASCII case-insensitively.
func hasErrorWord(line string) bool { return errorWordSet.find(line, true) != 0 }

// errorLines returns up to limit lines of text that report an error, in one pass over text.
func errorLines(text string, limit int) []string {
	var out []string
	for pos := 0; pos < len(text) && len(out) < limit; {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		line := text[pos:end]
		pos = end + 1
		if t := strings.TrimSpace(line); len(t) >= 8 && hasErrorWord(line) {
			out = append(out, clip(t, maxEntryText))
		}
	}
	return out
}

// identifiers finds paths, SHAs, issue/PR numbers and URLs in text with one tokenising pass
// (no regular expressions: this runs over every compacted message).
func identifiers(text string) []string { return appendIdentifiers(nil, text) }

// appendIdentifiers appends the identifiers of text that out does not hold yet.
func appendIdentifiers(out []string, text string) []string {
	start := -1
	var seen uint8
	for i := 0; i <= len(text); i++ {
		var class uint8 = idSep
		if i < len(text) {
			class = idClass[text[i]]
		}
		if class != idSep {
			if start < 0 {
				start = i
			}
			seen |= class
			continue
		}
		// Only tokens with one of / . # or a digit can be an identifier; most words are skipped
		// unclassified. Without a letter, a slash or a hash only a 40-digit object name can be.
		if start >= 0 && seen&idInteresting != 0 && (seen&(idLetter|idSlashHash) != 0 || i-start >= 40) {
			var id string
			if seen&(idSlashHash|idDot) == 0 {
				// No path, URL or issue number: at most an object name (classifyIdentifier's
				// answer for such tokens, without its work).
				if tok := strings.TrimRight(text[start:i], ":!?"); isSHA(tok) {
					id = tok
				}
			} else {
				id = classifyIdentifier(text[start:i])
			}
			if id != "" && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		start, seen = -1, 0
	}
	return out
}

// Byte classes of the identifier tokenizer.
const (
	idSep         uint8 = 1 << iota // splits tokens
	idLetter                        // ASCII letter
	idSlashHash                     // '/' or '#'
	idInteresting                   // '/', '.', '#' or a digit
	idDot                           // '.'
)

var idClass = func() (t [256]uint8) {
	for _, c := range []byte(" \n\t\r\"'`()[]{}<>,;|*") {
		t[c] = idSep
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = idLetter, idLetter
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = idInteresting
	}
	t['.'] = idDot | idInteresting
	t['/'], t['#'] = idSlashHash|idInteresting, idSlashHash|idInteresting
	return t
}()

var knownExt = map[string]bool{
	"go": true, "py": true, "js": true, "ts": true, "tsx": true, "jsx": true, "rs": true, "java": true,
	"c": true, "h": true, "cc": true, "cpp": true, "hpp": true, "md": true, "json": true, "yaml": true,
	"yml": true, "toml": true, "sql": true, "sh": true, "txt": true, "html": true, "css": true, "rb": true,
	"php": true, "mod": true, "sum": true, "lock": true, "cfg": true, "ini": true, "env": true, "proto": true,
	"kt": true, "swift": true, "scala": true, "vue": true, "svelte": true, "xml": true, "csv": true, "log": true,
	"dockerfile": true, "tf": true, "gradle": true, "conf": true,
}

func classifyIdentifier(tok string) string {
	for len(tok) > 0 && (tok[len(tok)-1] == '.' || tok[len(tok)-1] == ':' || tok[len(tok)-1] == '!' || tok[len(tok)-1] == '?') {
		tok = tok[:len(tok)-1]
	}
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
	switch {
	case strings.Contains(p, "/") && strings.Count(p, "/") < len(p) && (dot > 0 || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "~/")) && len(strings.Trim(p, "/.~")) > 1:
		return p
	case dot > 0 && isKnownExt(base[dot+1:]):
		return p
	}
	return ""
}

// isKnownExt looks up an ASCII extension in knownExt, in any case, without allocating.
func isKnownExt(ext string) bool {
	var buf [12]byte
	if len(ext) > len(buf) {
		return false // longer than every known extension
	}
	for i := 0; i < len(ext); i++ {
		c := ext[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return knownExt[string(buf[:len(ext)])]
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
