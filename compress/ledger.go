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
	EntryValue      EntryKind = "value"
	EntryAgent      EntryKind = "agent_decision"
	EntryDecision   EntryKind = "decision"
	EntryAsk        EntryKind = "ask"
)

var entryOrder = []EntryKind{EntryWrote, EntryRead, EntryCommand, EntryIdentifier, EntryError, EntryValue, EntryAgent, EntryDecision, EntryAsk}

var entryHeadings = map[EntryKind]string{
	EntryWrote:      "### Files written",
	EntryRead:       "### Files read",
	EntryCommand:    "### Commands run",
	EntryIdentifier: "### Identifiers",
	EntryError:      "### Errors seen",
	EntryValue:      "### Values seen in tool output",
	EntryAgent:      "### Assistant decisions (verbatim)",
	EntryDecision:   "### User decisions and constraints (verbatim)",
	EntryAsk:        "### User messages (verbatim, newest first)",
}

// PointerHeading opens the ledger's last section: entries that no longer fit as lines, kept
// as message pointers only, one line per kind.
const PointerHeading = "### Older entries, pointers only"

// pointerLabels name the kinds on the pointer lines; identifiers are split into paths and the
// rest (SHAs, issue numbers, URLs), which weigh differently.
var pointerLabels = map[EntryKind]string{
	EntryWrote: "files written", EntryRead: "files read", EntryCommand: "commands", EntryIdentifier: "identifiers",
	EntryError: "errors", EntryValue: "values", EntryAgent: "assistant decisions", EntryDecision: "user decisions",
	EntryAsk: "user messages",
}

// constraintsLabel holds the pointers of the user's corrections and constraints (see
// LedgerEntry.binding) whose lines no longer fit: these pointers go last of all.
const constraintsLabel = "constraints"

const (
	// pathsLabel holds the pointers of side paths (see LedgerEntry.side); taskPathsLabel those
	// of paths the user asked about that tools then read or wrote.
	pathsLabel     = "paths"
	taskPathsLabel = "task paths"
	routineLabel   = "repeated errors"
)

// routineErrors is how many error lines of one shape make that shape routine.
const routineErrors = 4

// errorShape is what error lines of one kind share: their first two words, digits dropped.
func errorShape(text string) string {
	f := strings.Fields(text)
	f = f[:min(2, len(f))]
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, strings.Join(f, " "))
}

// testFailureMarks open the lines a test runner prints for a failing test. Such a line is a
// progress report of the work (the command's entry keeps its exit status, the next run shows
// whether it was fixed), not a fact said once: it weighs as a repeated error however few of
// its shape one compaction sees (a small window compacts a few turns at a time).
var testFailureMarks = []string{"--- FAIL:", "FAIL\t", "FAILED ", "FAIL: "}

func isTestFailure(text string) bool {
	for _, m := range testFailureMarks {
		if strings.HasPrefix(text, m) {
			return true
		}
	}
	return false
}

// markRoutine flags the error lines whose shape at least routineErrors lines share, and
// test-failure lines.
func (l *Ledger) markRoutine() {
	count := map[string]int{}
	for _, e := range l.Entries {
		if e.Kind == EntryError && !e.Pointer {
			count[errorShape(e.Text)]++
		}
	}
	for i := range l.Entries {
		if e := &l.Entries[i]; e.Kind == EntryError && !e.Pointer {
			e.routine = count[errorShape(e.Text)] >= routineErrors || isTestFailure(e.Text)
		}
	}
}

// markSide flags the side paths among the entries extracted from compacted messages (fresh
// reports which; entries read back from an earlier ledger keep the flag their line or pointer
// carried, but their lines count as asked or touched): a path the user named that no tool then read or wrote, or one a
// tool read or wrote (or a command or the assistant named) that no user message named. A path
// the user asked about and the tools then worked on is the subject of its turn: the ask and
// the file entries carry it many times over, while a side path is said once or twice among
// hundreds of the same shape, and only its own entry keeps it. Side identifiers weigh like
// SHAs, side files read or written like commands. Paths seen only in tool output are neither
// (they are listed, never asked about).
// namesFile reports whether path p ends in a file name with an extension.
func namesFile(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	dot := strings.LastIndexByte(base, '.')
	return dot > 0 && dot < len(base)-1
}

// A turn can straddle two compactions: askedBefore are the paths of the ask an earlier
// compaction took (its summary's task snapshot quotes it), touchedLater the paths tools read
// or wrote in messages after these (the tail). Only a path that names a file can be a side
// path: a directory a command ran on ("go test ./internal/db/...") is the scope of routine
// work.
func markSide(entries []LedgerEntry, fresh func(int) bool, askedBefore, touchedLater map[string]bool) {
	asked, touched := map[string]bool{}, map[string]bool{}
	for p := range askedBefore {
		asked[p] = true
	}
	for _, e := range entries {
		switch {
		case e.Pointer:
		case e.Kind == EntryIdentifier && e.pathID && e.relevance >= 3:
			asked[e.Text] = true
		case e.Kind == EntryRead || e.Kind == EntryWrote:
			touched[e.Text] = true
		}
	}
	for p := range touchedLater {
		touched[p] = true
	}

	for i := range entries {
		e := &entries[i]
		if e.Pointer || !fresh(i) || !namesFile(e.Text) {
			continue
		}
		switch {
		case e.Kind == EntryRead || e.Kind == EntryWrote:
			e.side = !asked[e.Text]
		case e.Kind == EntryIdentifier && e.pathID:
			switch {
			case e.relevance >= 3:
				e.side = !touched[e.Text]
			case e.relevance == 2:
				e.side = !asked[e.Text] && !touched[e.Text]
			}
		}
	}
}

// Ledger bounds. Each kind keeps its most important, then newest, entries up to its cap as
// lines (caps scale with the ledger's budget); the rest become pointers. The rendered ledger
// never exceeds MaxLedgerChars: entries turn into pointers, least important first, and
// pointers go, least important and oldest first, until it fits.
var entryCaps = map[EntryKind]int{
	EntryWrote: 30, EntryRead: 30, EntryCommand: 30, EntryIdentifier: 80,
	EntryError: 15, EntryValue: 30, EntryAgent: 30, EntryDecision: 30, EntryAsk: 40,
}

// maxPointers bounds the pointer entries of one kind (times the ledger's scale).
const maxPointers = 1000

// MaxLedgerChars bounds the rendered ledger (the window's budget, Budgets.LedgerChars, is
// usually smaller).
const MaxLedgerChars = 48_000

// baseLedgerChars is the ledger budget at which entryCaps apply unscaled.
const baseLedgerChars = 12_000

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
	Text   string // "" for a pointer
	Status string // exit status of a command ("?" when unknown)
	MsgID  int64
	// Pointer marks an entry kept as its message pointer only: its line no longer fit. The
	// original is recovered with session_search(around_message_id=MsgID).
	Pointer bool
	// Trimmed marks an ask read from an older ledger as an excerpt.
	Trimmed bool
	// relevance ranks entries of a kind: stated by the user > said or done by the agent > seen
	// in tool output.
	relevance int
	// pathID marks an identifier that is a path (weighs less than a SHA or an issue number).
	pathID bool
	// routine marks an error line whose shape many others share (a test failing now and
	// then): it weighs less than an error seen once.
	routine bool
	// side marks a path that is not the subject of its turn (see markSide): it weighs more
	// than the paths every turn names.
	side bool
	// covered marks an entry whose pointer would repeat another's (see markCovered): when its
	// line no longer fits, it goes without a pointer.
	covered bool
	// binding marks a user decision that ClassifyDirective reads as a correction or a
	// constraint: its line outweighs every other, and when it no longer fits its pointer stays
	// under constraintsLabel, gone only when nothing else is left to drop.
	binding bool
}

// bindingDropKey is the drop key of a binding pointer in trimSequence: above every other.
const bindingDropKey = 1 << 20

// Ledger is the mechanically extracted working set of a session.
type Ledger struct {
	Entries []LedgerEntry
}

type entryKey struct {
	kind EntryKind
	text string
	id   int64 // pointers only: one per kind and message
}

func (e LedgerEntry) key() entryKey {
	if e.Pointer {
		return entryKey{e.Kind, "", e.MsgID}
	}
	return entryKey{e.Kind, e.Text, 0}
}

// weight orders entries by what a later turn most needs: decisions and constraints, then
// errors and values, identifiers that are not paths, commands, files written, paths, files
// read, and user messages (their identifiers and decisions are entries of their own).
func (e LedgerEntry) weight() int {
	switch e.Kind {
	case EntryDecision:
		if e.binding {
			return 10
		}
		if e.Pointer {
			// The same words come back in many messages: a pointer to each would crowd out
			// everything else, and the line is what counts.
			return 6
		}
		return 9
	case EntryAgent:
		return 8
	case EntryError:
		switch {
		case e.routine:
			return 5
		case e.relevance >= 3:
			return 8
		}
		return 7
	case EntryValue:
		return 7
	case EntryIdentifier:
		if e.pathID && !e.side {
			if e.Pointer {
				return askPointerWeight
			}
			return 3
		}
		return 6
	case EntryCommand:
		return 5
	case EntryWrote, EntryRead:
		// A file read or written that no user message named (a file the agent found or
		// created) weighs like a command; the task's own files, which the ask names, least.
		switch {
		case e.side:
			return 5
		case e.Kind == EntryWrote:
			return 3
		}
		return 2
	case EntryAsk:
		if e.Pointer {
			return askPointerWeight
		}
		return 1
	}
	return 0
}

// askPointerWeight is the weight of a pointer to a user message (an ask's, or the task path
// its ask named).
var askPointerWeight = 5

// toPointer turns e into its pointer.
func (e *LedgerEntry) toPointer() {
	e.Pointer, e.Text, e.Status, e.Trimmed = true, "", "", false
}

// merge adds entries, merging each into an equal one (same kind and text, or the same kind's
// pointer to the same message) by keeping the highest relevance and the newest message id of
// that relevance.
func (l *Ledger) merge(other []LedgerEntry) {
	pos := make(map[entryKey]int, len(l.Entries)+len(other))
	for i, e := range l.Entries {
		pos[e.key()] = i
	}
	for _, e := range other {
		if i, ok := pos[e.key()]; ok {
			cur := &l.Entries[i]
			// The message the entry points at is the newest of those with the highest
			// relevance: a path the user named points at the user's message (which recovers
			// the ask too), not at the tool result that printed it last.
			take := e.relevance > cur.relevance || e.relevance == cur.relevance && e.MsgID >= cur.MsgID
			cur.relevance = max(cur.relevance, e.relevance)
			cur.pathID = cur.pathID && e.pathID
			cur.routine = cur.routine && e.routine
			cur.side = cur.side || e.side
			cur.binding = cur.binding || e.binding
			if take {
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

// bound applies the per-kind caps (times scale) and returns the entries of each kind in
// rendering order: lines first, oldest first (asks newest first), then pointers by message.
// Entries past a kind's cap become pointers (merged into an equal pointer); pointers past
// maxPointers×scale go, least important and oldest first.
func (l *Ledger) bound(scale int) {
	scale = max(scale, 1)
	l.markRoutine()
	l.markCovered()
	byKind := map[EntryKind][]int{}
	for i, e := range l.Entries {
		byKind[e.Kind] = append(byKind[e.Kind], i)
	}
	out := make([]LedgerEntry, 0, min(len(l.Entries), 1024))
	for _, k := range entryOrder {
		var lines, ptrs []LedgerEntry
		for _, i := range byKind[k] {
			if l.Entries[i].Pointer {
				ptrs = append(ptrs, l.Entries[i])
			} else {
				lines = append(lines, l.Entries[i])
			}
		}
		// The most important, then newest, lines stay; ties keep slice order.
		sortEntries(lines, func(a, b *LedgerEntry) int {
			if c := cmp.Compare(b.weight(), a.weight()); c != 0 {
				return c
			}
			if c := cmp.Compare(b.relevance, a.relevance); c != 0 {
				return c
			}
			return cmp.Compare(b.MsgID, a.MsgID)
		})
		if c := entryCaps[k] * scale; len(lines) > c {
			for _, e := range lines[c:] {
				if e.covered {
					continue // the entry it repeats keeps the pointer
				}
				e.toPointer()
				ptrs = append(ptrs, e)
			}
			lines = lines[:c]
		}
		sortEntries(lines, func(a, b *LedgerEntry) int {
			if k == EntryAsk {
				return cmp.Compare(b.MsgID, a.MsgID)
			}
			return cmp.Compare(a.MsgID, b.MsgID)
		})
		var pl Ledger
		pl.merge(ptrs)
		ptrs = pl.Entries[:0]
		for _, e := range pl.Entries {
			if !e.covered {
				ptrs = append(ptrs, e)
			}
		}
		sortEntries(ptrs, func(a, b *LedgerEntry) int {
			if c := cmp.Compare(b.weight(), a.weight()); c != 0 {
				return c
			}
			return cmp.Compare(b.MsgID, a.MsgID)
		})
		if c := maxPointers * scale; len(ptrs) > c {
			// Binding pointers sort first (their weight) and are never cut here.
			keep := c
			for keep < len(ptrs) && ptrs[keep].binding {
				keep++
			}
			ptrs = ptrs[:keep]
		}
		sortEntries(ptrs, func(a, b *LedgerEntry) int { return cmp.Compare(a.MsgID, b.MsgID) })
		out = append(out, lines...)
		out = append(out, ptrs...)
	}
	l.Entries = out
}

// isPathEntry reports whether e is a path: a file read or written, or a path identifier.
func (e LedgerEntry) isPathEntry() bool {
	return e.Kind == EntryRead || e.Kind == EntryWrote || e.Kind == EntryIdentifier && e.pathID
}

// markCovered keeps one pointer per fact. A path is written in many messages of its turn (the
// ask, the assistant's words, the tool call, the listing, the write): one pointer to any of
// them recovers it, so only one entry per path, the one in the user's message if there is one
// (it also recovers the ask), else the one the agent wrote, else the newest, keeps a pointer
// when its line goes; it takes the side mark of any of them. An ask whose message another
// identifier (a SHA, an issue, a side path) already points at needs no pointer of its own; the
// task path an ask names needs none besides the ask's.
func (l *Ledger) markCovered() {
	best := map[string]int{}
	for i, e := range l.Entries {
		l.Entries[i].covered = false
		if e.Pointer || !e.isPathEntry() {
			continue
		}
		j, ok := best[e.Text]
		if !ok {
			best[e.Text] = i
			continue
		}
		if b := l.Entries[j]; e.relevance > b.relevance || e.relevance == b.relevance && e.MsgID > b.MsgID {
			best[e.Text] = i
		}
	}
	pointed := map[int64]bool{}
	for i := range l.Entries {
		e := &l.Entries[i]
		if e.Pointer || !e.isPathEntry() {
			continue
		}
		if b := best[e.Text]; b != i {
			e.covered = true
			l.Entries[b].side = l.Entries[b].side || e.side
		}
	}
	asked := map[int64]bool{}
	commands := map[int64][]string{}
	for _, e := range l.Entries {
		switch {
		case e.Kind == EntryAsk:
			asked[e.MsgID] = true
		case e.Kind == EntryCommand && !e.Pointer:
			commands[e.MsgID] = append(commands[e.MsgID], e.Text)
		}
	}
	inCommand := func(e LedgerEntry) bool {
		return slices.ContainsFunc(commands[e.MsgID], func(c string) bool { return strings.Contains(c, e.Text) })
	}
	for i := range l.Entries {
		e := &l.Entries[i]
		switch {
		case e.Kind != EntryIdentifier || e.covered:
		case e.pathID && !e.side && !e.Pointer && e.relevance < 3 && inCommand(*e):
			// The directory a command ran on: the command's pointer recovers it.
			e.covered = true
		case e.pathID && !e.side && asked[e.MsgID]:
			// The task path the ask named: the ask's pointer recovers both, under the
			// user messages.
			e.covered = true
		default:
			pointed[e.MsgID] = true
		}
	}
	for i := range l.Entries {
		if e := &l.Entries[i]; e.Kind == EntryAsk && pointed[e.MsgID] {
			e.covered = true
		}
	}
}

// sortEntries sorts es stably by cmp. It sorts a permutation and moves each entry once: a
// LedgerEntry is large, and a stable sort of the structs themselves moved them many times.
func sortEntries(es []LedgerEntry, cmp func(a, b *LedgerEntry) int) {
	if len(es) < 2 {
		return
	}
	idx := make([]int32, len(es))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(x, y int32) int { return cmp(&es[x], &es[y]) })
	sorted := make([]LedgerEntry, len(es))
	for i, j := range idx {
		sorted[i] = es[j]
	}
	copy(es, sorted)
}

// sourceMarks keep the relevance of identifiers and errors across compactions: what the user
// said outranks what the agent said, which outranks what a tool printed.
var sourceMarks = map[int]string{1: " (output)", 2: "", 3: " (user)"}

// sideMarkText marks the line of a side path (see markSide), so the flag survives the next
// compaction's reading of the ledger.
const sideMarkText = " (side)"

func (e LedgerEntry) sideMark() string {
	if e.side && (e.Kind == EntryIdentifier || e.Kind == EntryRead || e.Kind == EntryWrote) {
		return sideMarkText
	}
	return ""
}

func idTag(id int64) string { return "[m" + strconv.FormatInt(id, 10) + "]" }

// render writes the ledger section within MaxLedgerChars. Asks are quoted verbatim newest
// first while askBudget lasts; later ones become pointers.
func (l *Ledger) render(sessionID string, askBudget int) string {
	return l.renderWithin(sessionID, askBudget, MaxLedgerChars)
}

// pointerLabel is the label of e's pointer line.
func (e LedgerEntry) pointerLabel() string {
	if e.binding {
		return constraintsLabel
	}
	if e.side && (e.Kind == EntryIdentifier || e.Kind == EntryRead || e.Kind == EntryWrote) {
		return pathsLabel
	}
	if e.Kind == EntryIdentifier && e.pathID {
		return taskPathsLabel
	}
	if e.Kind == EntryError && e.routine {
		return routineLabel
	}
	return pointerLabels[e.Kind]
}

// pointerLabelOrder is the order of the pointer lines.
var pointerLabelOrder = func() []string {
	var out []string
	for _, k := range entryOrder {
		out = append(out, pointerLabels[k])
		switch k {
		case EntryIdentifier:
			out = append(out, pathsLabel, taskPathsLabel)
		case EntryError:
			out = append(out, routineLabel)
		case EntryDecision:
			out = append(out, constraintsLabel)
		}
	}
	return out
}()

// renderWithin is render with maxChars as the bound. When the ledger is too big, entries
// become pointers in trimSequence order, then pointers go, until it fits; l.Entries is left
// holding what was written. A bound too small for the header and one pointer renders nothing.
func (l *Ledger) renderWithin(sessionID string, askBudget, maxChars int) string {
	header := ledgerHeaderWithin(sessionID, maxChars)
	if maxChars < len(header)+len(PointerHeading)+32 {
		l.Entries = nil
		return ""
	}
	lines := l.formatLines(askBudget)
	// Sizes, kept as entries turn into pointers and pointers go.
	lineKinds := map[EntryKind]int{}      // lines per kind
	ptrRefs := map[string]map[int64]int{} // pointer label -> message -> entries
	size := len(header)
	nPtrLabels := 0
	addPtr := func(e LedgerEntry) {
		lab := e.pointerLabel()
		m := ptrRefs[lab]
		if m == nil {
			m = map[int64]int{}
			ptrRefs[lab] = m
		}
		if len(m) == 0 {
			if nPtrLabels == 0 {
				size += len(PointerHeading) + 2
			}
			nPtrLabels++
			size += pointerLineCost(lab)
		}
		if m[e.MsgID] == 0 {
			size += pointerIDCost(e.MsgID)
		}
		m[e.MsgID]++
	}
	dropPtr := func(e LedgerEntry) {
		lab := e.pointerLabel()
		m := ptrRefs[lab]
		if m[e.MsgID]--; m[e.MsgID] == 0 {
			delete(m, e.MsgID)
			size -= pointerIDCost(e.MsgID)
			if len(m) == 0 {
				size -= pointerLineCost(lab)
				if nPtrLabels--; nPtrLabels == 0 {
					size -= len(PointerHeading) + 2
				}
			}
		}
	}
	addLine := func(i int) {
		k := l.Entries[i].Kind
		if lineKinds[k] == 0 {
			size += len(entryHeadings[k]) + 2
		}
		lineKinds[k]++
		size += len(lines[i])
	}
	dropLine := func(i int) {
		k := l.Entries[i].Kind
		size -= len(lines[i])
		if lineKinds[k]--; lineKinds[k] == 0 {
			size -= len(entryHeadings[k]) + 2
		}
	}
	gone := make([]bool, len(l.Entries))
	for i, e := range l.Entries {
		switch {
		case e.Pointer && e.covered:
			gone[i] = true // an ask over its budget whose message another pointer names
		case e.Pointer && pointerLabels[e.Kind] != "":
			addPtr(e)
		case lines[i] != "":
			addLine(i)
		default:
			gone[i] = true
		}
	}
	// What is written ends in one newline, which is cut.
	if size-1 > maxChars {
		// The user's corrections and constraints keep their words within a share of the
		// bound, newest first; older ones are merged into the constraints pointer line.
		room := int(float64(maxChars) * bindingShare)
		for _, i := range l.bindingLinesNewestFirst() {
			if room -= len(lines[i]); room < 0 {
				dropLine(i)
				lines[i] = ""
				l.Entries[i].toPointer()
				addPtr(l.Entries[i])
			}
		}
	}
	if size-1 > maxChars {
		for _, st := range l.trimSequence(gone) {
			i := st.i
			e := &l.Entries[i]
			if gone[i] {
				continue // a covered line that went with its demotion
			}
			if st.demote {
				dropLine(i)
				lines[i] = ""
				if e.covered {
					gone[i] = true
				} else {
					e.toPointer()
					addPtr(*e)
				}
			} else {
				dropPtr(*e)
				gone[i] = true
			}
			if size-1 <= maxChars {
				break
			}
		}
	}
	kept := l.Entries[:0]
	keptLines := lines[:0]
	for i, e := range l.Entries {
		if !gone[i] {
			kept = append(kept, e)
			keptLines = append(keptLines, lines[i])
		}
	}
	l.Entries, lines = kept, keptLines
	return l.write(header, lines, size, nPtrLabels > 0)
}

// write assembles the ledger text: the header, the lines by kind in entryOrder, then the
// pointer section when there are pointers. size is the expected length.
func (l *Ledger) write(header string, lines []string, size int, pointers bool) string {
	var b strings.Builder
	b.Grow(size)
	b.WriteString(header)
	for _, k := range entryOrder {
		first := true
		for i := range l.Entries {
			if l.Entries[i].Kind != k || l.Entries[i].Pointer {
				continue
			}
			if first {
				b.WriteString("\n" + entryHeadings[k] + "\n")
				first = false
			}
			b.WriteString(lines[i])
		}
	}
	if pointers {
		b.WriteString("\n" + PointerHeading + "\n")
		byLabel := map[string][]int64{}
		for _, e := range l.Entries {
			if e.Pointer {
				lab := e.pointerLabel()
				if !slices.Contains(byLabel[lab], e.MsgID) {
					byLabel[lab] = append(byLabel[lab], e.MsgID)
				}
			}
		}
		for _, lab := range pointerLabelOrder {
			ids := byLabel[lab]
			if len(ids) == 0 {
				continue
			}
			slices.Sort(ids)
			b.WriteString(pointerLine(lab, ids))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// pointerLine lists a label's messages in one bracket, "- paths: [m90,407,1663]" for [m90],
// [m407] and [m1663]: four characters a pointer instead of seven (a 4K window's ledger is
// about 1,100 characters). parsePointerLine reads both forms.
func pointerLine(lab string, ids []int64) string {
	b := make([]byte, 0, pointerLineCost(lab)+8*len(ids))
	b = append(b, "- "...)
	b = append(b, lab...)
	b = append(b, ": [m"...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, "]\n"...))
}

// pointerLineCost is what a pointer line costs before its ids (its newline included, less
// the comma the first id does not take); pointerIDCost what each id adds.
func pointerLineCost(lab string) int { return len("- " + lab + ": [m]") }

func pointerIDCost(id int64) int {
	n := 2 // the comma and the first digit
	for ; id >= 10; id /= 10 {
		n++
	}
	return n
}

// shortHeaderBelow is the ledger bound under which the header leaves out its first sentence:
// at a 4K window those 60 characters are seven pointers.
const shortHeaderBelow = 2_000

// ledgerHeaderWithin is the ledger's header for a ledger bounded by maxChars.
func ledgerHeaderWithin(sessionID string, maxChars int) string {
	if maxChars >= shortHeaderBelow {
		return ledgerHeader(sessionID)
	}
	if sessionID != "" {
		return LedgerHeading + "\n" + fmt.Sprintf("Open any [mN] (%s) with session_search(session_id=%q, around_message_id=N).\n", listNote, sessionID)
	}
	return LedgerHeading + "\nOpen any [mN] (" + listNote + ") with session_search(around_message_id=N).\n"
}

// listNote tells the model how to read a pointer line's list.
const listNote = "[mA,B] is mA and mB"

func ledgerHeader(sessionID string) string {
	const intro = LedgerHeading + "\nExtracted mechanically (no model); newer turns override it. "
	if sessionID != "" {
		return intro + fmt.Sprintf("Open any [mN] (%s) with session_search(session_id=%q, around_message_id=N).\n", listNote, sessionID)
	}
	return intro + "Open any [mN] (" + listNote + ") with session_search(around_message_id=N).\n"
}

// formatLines formats each entry's line (with its newline) in rendering order: kinds in
// entryOrder, entries of a kind in slice order. Asks quoted past askBudget become pointers
// here, in place. Pointers and entries of unknown kinds get "".
func (l *Ledger) formatLines(askBudget int) []string {
	lines := make([]string, len(l.Entries))
	left := askBudget
	for _, k := range entryOrder {
		for i := range l.Entries {
			e := &l.Entries[i]
			if e.Kind != k || e.Pointer {
				continue
			}
			switch k {
			case EntryWrote, EntryRead:
				lines[i] = "- `" + e.Text + "`" + e.sideMark() + " " + idTag(e.MsgID) + "\n"
			case EntryCommand:
				lines[i] = "- `" + e.Text + "` -> exit " + cmp.Or(e.Status, "?") + " " + idTag(e.MsgID) + "\n"
			case EntryDecision, EntryAgent:
				lines[i] = "- " + strconv.Quote(e.Text) + " " + idTag(e.MsgID) + "\n"
			case EntryAsk:
				if !e.Trimmed && len(e.Text) <= left {
					left -= len(e.Text)
					lines[i] = "- " + idTag(e.MsgID) + " " + strings.ReplaceAll(e.Text, "\n", "\n  ") + "\n"
				} else {
					e.toPointer()
				}
			default:
				lines[i] = "- " + e.Text + sourceMarks[e.relevance] + e.sideMark() + " " + idTag(e.MsgID) + "\n"
			}
		}
	}
	return lines
}

// bindingShare is the share of an oversized ledger's bound that the lines of the user's
// corrections and constraints may take; the rest of them become pointers.
const bindingShare = 0.3

// bindingLinesNewestFirst are the indices of the binding lines, newest message first.
func (l *Ledger) bindingLinesNewestFirst() []int {
	var out []int
	for i, e := range l.Entries {
		if e.binding && !e.Pointer {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(l.Entries[b].MsgID, l.Entries[a].MsgID) })
	return out
}

// trimStep is one step of shrinking an oversized ledger: entry i becomes a pointer (demote)
// or its pointer goes.
type trimStep struct {
	i      int
	demote bool
}

// dropLag is how much more important than a pointer a line must be before the line is cut to
// a pointer ahead of the pointer going (in half weights): a pointer of weight w goes after
// the lines of weight w+2 became pointers and before those of weight w+3.
const dropLag = 5

// newestBonus raises the drop key of a label's newest pointers (rank 0 is the newest).
func newestBonus(rank int) int {
	switch {
	case rank < 5:
		return 3
	case rank < 15:
		return 2
	case rank < 40:
		return 1
	}
	return 0
}

// trimSequence is the order in which entries shrink in an oversized ledger: lines become
// pointers and pointers go, least important (weight, then relevance) and oldest first, a
// pointer lagging dropLag half-weights behind the lines (so a decision stays a line while a
// file read keeps its pointer only if there is room). Entries marked gone are skipped.
func (l *Ledger) trimSequence(gone []bool) []trimStep {
	type keyed struct {
		trimStep
		key int
	}
	// Each label's newest pointers go last: one kind with many entries (a constraint repeated
	// in every other message, a test that fails every week) cannot crowd the others out.
	rank := make([]int, len(l.Entries))
	{
		byLabel := map[string][]int{}
		for i, e := range l.Entries {
			if !gone[i] {
				lab := e.pointerLabel()
				byLabel[lab] = append(byLabel[lab], i)
			}
		}
		for _, idx := range byLabel {
			slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(l.Entries[b].MsgID, l.Entries[a].MsgID) })
			for r, i := range idx {
				rank[i] = r
			}
		}
	}
	var steps []keyed
	for i, e := range l.Entries {
		if gone[i] {
			continue
		}
		p := e
		p.Pointer = true
		drop := 2*p.weight() + dropLag + newestBonus(rank[i])
		switch {
		case e.binding:
			drop = bindingDropKey
		case e.Kind == EntryAsk:
			// The user's own words outlast the commands, repeated errors and task paths of
			// the same weight, never the facts of a higher one.
			drop++
		}
		if !e.Pointer {
			demote := 2 * e.weight()
			steps = append(steps, keyed{trimStep{i, true}, demote})
			drop = max(drop, demote+1) // a line becomes a pointer before its pointer goes
		}
		steps = append(steps, keyed{trimStep{i, false}, drop})
	}
	slices.SortFunc(steps, func(x, y keyed) int {
		if c := cmp.Compare(x.key, y.key); c != 0 {
			return c
		}
		ex, ey := &l.Entries[x.i], &l.Entries[y.i]
		if c := cmp.Compare(ex.relevance, ey.relevance); c != 0 {
			return c
		}
		if c := cmp.Compare(ex.MsgID, ey.MsgID); c != 0 {
			return c
		}
		if c := cmp.Compare(x.i, y.i); c != 0 {
			return c
		}
		if x.demote != y.demote { // an entry's demotion comes before its drop
			if x.demote {
				return -1
			}
			return 1
		}
		return 0
	})
	out := make([]trimStep, len(steps))
	for j, st := range steps {
		out[j] = st.trimStep
	}
	return out
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
	pointers := false
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
			kind, pointers = "", line == PointerHeading
			for k, h := range entryHeadings {
				if line == h {
					kind = k
				}
			}
			continue
		}
		if pointers {
			l.Entries = append(l.Entries, parsePointerLine(line)...)
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
			if strings.HasPrefix(rest, "(excerpt) ") {
				// An older ledger's excerpt: its pointer is what is kept of it.
				e.relevance = 3
				e.toPointer()
				l.Entries = append(l.Entries, e)
				continue
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
		if kind == EntryIdentifier || kind == EntryRead || kind == EntryWrote {
			if r, ok := strings.CutSuffix(rest, sideMarkText); ok {
				rest, e.side = r, true
			}
		}
		switch kind {
		case EntryIdentifier, EntryError:
			for rel, mark := range sourceMarks {
				if mark != "" && strings.HasSuffix(rest, mark) {
					rest, e.relevance = strings.TrimSuffix(rest, mark), rel
				}
			}
			if kind == EntryIdentifier {
				e.pathID = isPathIdentifier(rest)
			}
		case EntryValue:
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
		case EntryDecision, EntryAgent:
			if uq, err := strconv.Unquote(rest); err == nil {
				rest = uq
			}
			if kind == EntryDecision {
				e.relevance, e.binding = 3, ClassifyDirective(rest).Binding()
			}
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

// parsePointerLine reads one line of the pointer section: "- <label>: [m1] [m2] ...".
func parsePointerLine(line string) []LedgerEntry {
	rest, ok := strings.CutPrefix(line, "- ")
	if !ok {
		return nil
	}
	lab, ids, ok := strings.Cut(rest, ":")
	if !ok {
		return nil
	}
	kind, path, routine, side, binding := EntryKind(""), false, false, false, false
	switch lab {
	case constraintsLabel:
		kind, binding = EntryDecision, true
	case pathsLabel:
		kind, path, side = EntryIdentifier, true, true
	case taskPathsLabel:
		kind, path = EntryIdentifier, true
	case routineLabel:
		kind, routine = EntryError, true
	}
	for k, name := range pointerLabels {
		if name == lab {
			kind = k
		}
	}
	if kind == "" {
		return nil
	}
	rel := 2
	if kind == EntryDecision || kind == EntryAsk {
		rel = 3
	}
	var out []LedgerEntry
	for _, m := range pointerListRe.FindAllStringSubmatch(ids, -1) {
		for _, d := range strings.Split(m[1], ",") {
			id, err := strconv.ParseInt(d, 10, 64)
			if err != nil {
				continue
			}
			out = append(out, LedgerEntry{Kind: kind, MsgID: id, Pointer: true, relevance: rel, pathID: path, routine: routine, side: side, binding: binding})
		}
	}
	return out
}

// pointerListRe is one bracket of a pointer line: "[m12]" or "[m12,40,513]" (pointerLine;
// ledgers written before the lists had one bracket per message).
var pointerListRe = regexp.MustCompile(`\[m(\d+(?:,\d+)*)\]`)

// isPathIdentifier reports whether an identifier is a path (not a SHA, an issue number or a URL).
func isPathIdentifier(id string) bool {
	return !strings.HasPrefix(id, "#") && !isSHA(id) && !strings.Contains(id, "://")
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
	return ledgerEntriesBefore(ms, scans, nil)
}

// ledgerEntriesBefore is ledgerEntries for messages followed by others in which tools read or
// wrote the paths touchedLater (see markSide).
func ledgerEntriesBefore(ms []store.Message, scans []msgScan, touchedLater map[string]bool) []LedgerEntry {
	size := 0
	for _, sc := range scans {
		size += 1 + len(sc.ids) + len(sc.errs) + 2*len(sc.args)
	}
	out := make([]LedgerEntry, 0, size)
	var carried [][2]int // ranges of out read back from earlier ledgers
	askedBefore := map[string]bool{}
	carry := func(es []LedgerEntry) {
		carried = append(carried, [2]int{len(out), len(out) + len(es)})
		out = append(out, es...)
	}
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
			if n := len(out); n > 0 && out[n-1].Kind == EntryIdentifier {
				out[n-1].pathID = isPathIdentifier(out[n-1].Text)
			}
		}
	}
	userFacts := func(sc msgScan, id int64) {
		add(EntryAsk, sc.text, id, 3)
		addIDs(sc.ids, id, 3)
		for _, d := range Directives(sc.text, 5) {
			add(EntryDecision, d, id, 3)
			if n := len(out); n > 0 && out[n-1].Kind == EntryDecision {
				out[n-1].binding = ClassifyDirective(d).Binding()
			}
		}
		for _, e := range sc.errs[:min(2, len(sc.errs))] {
			// A user sentence merely mentioning a failure is an ask, not an error report; one
			// quoting output ("logs show: dial tcp ...: connection refused") is a report.
			if containsAny(strings.ToLower(e), "error", "exception", "panic", "traceback") || strings.Count(e, ": ") >= 2 {
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
				carry(parseLedger(p.Body).Entries)
				snapshotPaths(p.Body, askedBefore)
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
				carry(parseLedger(p.Body).Entries)
				snapshotPaths(p.Body, askedBefore)
				if p.Prior != "" {
					addIDs(identifiers(p.Prior), m.ID, 2)
				}
			} else {
				addIDs(sc.ids, m.ID, 2)
				for _, d := range agentDecisions(sc.text, 5) {
					add(EntryAgent, d, m.ID, 2)
				}
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
			for _, v := range sc.values {
				add(EntryValue, v, m.ID, 1)
			}
		}
	}
	markSide(out, func(i int) bool {
		for _, r := range carried {
			if i >= r[0] && i < r[1] {
				return false
			}
		}
		return true
	}, askedBefore, touchedLater)
	return out
}

// snapshotHeading quotes the newest user message an earlier compaction took.
const snapshotHeading = "## Historical Task Snapshot"

// snapshotPaths adds the paths of a summary body's task snapshot to into.
func snapshotPaths(body string, into map[string]bool) {
	if _, snap, ok := cutSection(body, snapshotHeading); ok {
		for _, id := range identifiers(snap) {
			into[id] = true
		}
	}
}

// cued returns up to limit sentences of text holding one of cues at the start of a word
// (ASCII case-insensitively), in one pass over each sentence.
func cued(text string, cues *wordSet, limit int) []string {
	var out []string
	for _, s := range sentences(text) {
		if cues.atWordStart(s) {
			out = append(out, s)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

// agentCues mark a sentence of the assistant as a decision it took or a rule it states.
var agentCues = []string{
	"decided", "decision:", "i chose", "we chose", "chose to", "going with", "we will", "we'll", "i will use",
	"instead of", "never", "always", "must", "from now on",
}

var agentCueSet = newWordSet(agentCues)

// agentDecisions returns the sentences of an assistant message that state a decision.
func agentDecisions(text string, limit int) []string { return cued(text, agentCueSet, limit) }

// maxValues is how many settings one tool result contributes.
const maxValues = 4

// valueLines returns up to limit lines of tool output that read as a setting or a measured
// value: "key: value" or "KEY=value", short, the key a name (letters, digits, _ . - / and at
// most four spaces), the line not code, not an error and not an exit status.
func valueLines(text string, limit int) []string {
	var out []string
	for pos := 0; pos < len(text) && len(out) < limit; {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		line := strings.TrimSpace(text[pos:end])
		pos = end + 1
		if v := valueLine(line); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func valueLine(line string) string {
	// The cheap shape checks first: most lines have no "key: value" shape at all, and the
	// code and error-word scans are only worth running on those that do.
	if len(line) < 4 || len(line) > 100 {
		return ""
	}
	i := strings.IndexAny(line, ":=")
	if i <= 0 || i+1 >= len(line) {
		return ""
	}
	key, val := line[:i], strings.TrimSpace(line[i+1:])
	if line[i] == ':' && line[i+1] != ' ' {
		return "" // a URL, a time or a path:line
	}
	if val == "" || strings.HasPrefix(val, "//") || strings.Count(key, " ") > 4 || !isLetter(key[0]) {
		return ""
	}
	for j := 0; j < len(key); j++ {
		c := key[j]
		if !(isWordByte(c) || c == ' ' || c == '.' || c == '-' || c == '/') {
			return ""
		}
	}
	if looksLikeCode(line) || hasErrorWord(line) {
		return ""
	}
	lk := strings.ToLower(key)
	if lk == "exit code" || lk == "exit status" || strings.HasPrefix(lk, "author") || strings.HasPrefix(lk, "date") {
		return ""
	}
	if dot := strings.LastIndexByte(key, '.'); dot > 0 && isKnownExt(key[dot+1:]) {
		return "" // file.go: a compiler or test message
	}
	return line
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// looksLikeCode reports whether a line is source code rather than a message: a numbered
// listing line, or one with code punctuation.
func looksLikeCode(line string) bool {
	t := strings.TrimLeft(line, " \t")
	digits := 0
	for digits < len(t) && t[digits] >= '0' && t[digits] <= '9' {
		digits++
	}
	if digits > 0 && digits < len(t) && t[digits] == '\t' {
		return true
	}
	for _, p := range []string{"func ", "return ", ":= ", "err != nil", "fmt.Errorf", "){", ") {", "def ", "=> ", "};"} {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
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

var errorWords = []string{"error", "exception", "panic:", "traceback", "fatal", "fail", "segmentation fault", "undefined", "cannot ", "can't ", "permission denied", "not found", "does not exist", "no such ", "refused", "invalid ", "deadline exceeded", "timed out"}

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
		if t := strings.TrimSpace(line); len(t) >= 8 && hasErrorWord(line) && !looksLikeCode(t) {
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
