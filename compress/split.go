package compress

import (
	"strings"

	"github.com/spoolhq/spool/store"
)

// split is a history cut into head / middle / tail, with what the later phases read of it.
// orig is the input (never modified); work is a copy with old tool output pruned and every
// summary carrier taken apart again (see unmerge), which is what the tail is copied from.
type split struct {
	orig, work []store.Message
	tok        []int // estimate of each work message
	hist       *history
	sys        int // 1 when the history starts with a system message
	start, end int // the middle is [start, end)
	before     int // estimate of the whole input
	// previous is the newest earlier summary's body without its ledger, prevLedger that
	// summary's ledger entries when the summary sat in the tail (a middle one is read by
	// ledgerEntries itself).
	previous   string
	prevLedger []LedgerEntry
	newest     int // index of the newest summary (-1: none)
	// original is the body of the session's original request section (see OriginalHeading):
	// carried from the previous summary, else taken from the first real user message when
	// that leaves the context now.
	original string
	// minEnd is the smallest tail the ladder may fall back to: from the newest real user
	// message on (see minimalTailCut).
	minEnd int
	// ledgerScale multiplies the ledger's per-kind caps (Budgets.LedgerChars over
	// baseLedgerChars, at least 1).
	ledgerScale int
	mids        map[int]*middle // middleTo's results by end
}

// splitHistory runs the phases before the summary call: head size from the budget, prune,
// unmerge earlier summaries, tail cut. It returns ErrNothingToCompress when no middle is left.
func (c *Compressor) splitHistory(req Request, st *State, b Budgets) (*split, error) {
	orig := req.Messages
	n := len(orig)
	sp := &split{orig: orig, ledgerScale: max(1, b.LedgerChars/baseLedgerChars)}
	if n > 0 && orig[0].Role == store.RoleSystem {
		sp.sys = 1
	}
	est := c.estimator()
	sp.work = append([]store.Message(nil), orig...)
	sp.tok = make([]int, n)
	for i, m := range sp.work {
		sp.tok[i] = est.Message(m)
		sp.before += sp.tok[i]
	}

	// The first exchange is protected on the first compaction only, and only as far as the
	// head's share of the budget goes.
	hasPrev := st.CompressionCount > 0
	for i := sp.sys; i < n && !hasPrev; i++ {
		hasPrev = isSummary(orig[i])
	}
	headN := sp.sys
	if !hasPrev {
		used := 0
		for k := 0; k < max(c.Config.ProtectFirstN, 0) && sp.sys+k < n; k++ {
			if used+sp.tok[sp.sys+k] > b.Head {
				break
			}
			used += sp.tok[sp.sys+k]
			headN++
		}
	}
	// A history over its target, or one compacted on request, is compacted however short it
	// is; otherwise the reference's rule: at least four messages beyond the head.
	minRest := 4
	if sp.before+b.Fixed > b.Target || req.Force {
		minRest = 1
	}
	if n <= headN+minRest {
		return nil, nothing("the session has %d messages: the first %d stay as they are and compaction needs %d more after them (the session, ~%d tokens, is within its target of %d)",
			n-sp.sys, headN-sp.sys, minRest+1, sp.before+b.Fixed, b.Target)
	}

	protectLastN := c.Config.ProtectLastN
	if protectLastN <= 0 {
		protectLastN = DefaultProtectLastN
	}
	// Each message is decoded and scanned at most once, by whichever phase needs it first.
	sp.hist = newHistory(orig)
	pruneHistory(sp.work, sp.hist, sp.tok, b.Tail, protectLastN, req.SessionID)
	for i := range sp.work {
		// Only what pruning rewrote is estimated again.
		if w, o := &sp.work[i], &orig[i]; w.Content != o.Content || w.APIContent != o.APIContent || !sameCalls(w.ToolCalls, o.ToolCalls) {
			sp.tok[i] = est.Message(*w)
		}
	}
	sp.unmerge(est)

	sp.start = alignForward(sp.work, headN)
	sp.end = findTailCut(sp.work, sp.tok, sp.start, tailParams{
		Budget: b.Tail, Soft: b.TailSoft,
		ProtectLastN: protectLastN, MinTailUsers: c.Config.minTailUsers(),
	})
	sp.end = sp.pastSummaries(sp.end)
	if u := nthLastRealUser(sp.work, sp.start, 1); u == sp.start && u < sp.end {
		// The ask being answered would leave with its exchange (a second compaction inside
		// one turn): it stays, verbatim with its wire text, and only what followed it goes.
		sp.start = alignForward(sp.work, u+1)
	}
	sp.minEnd = sp.pastSummaries(sp.minimalTailCut())
	if sp.start >= sp.end && sp.minEnd > sp.start && sp.minEnd < n {
		// The anchors left no middle; the smallest tail does.
		sp.end = sp.minEnd
	}
	if sp.start >= sp.end || sp.end > n {
		return nil, nothing("all %d messages are the first exchange and the newest turns, which compaction keeps verbatim", n-sp.sys)
	}
	sp.minEnd = max(sp.minEnd, sp.end)
	if sp.original == "" {
		// The first thing the user asked (goal, constraints) leaves the context now: it is
		// kept verbatim, within its budget, in every later summary.
		for i := sp.sys; i < sp.minEnd; i++ {
			if t, ok := userText(sp.work[i]); ok {
				if i >= sp.start && (sp.newest < 0 || i < sp.newest) {
					sp.original = indentQuote(truncateRunes(redact(t), originalChars(b)))
				}
				break
			}
		}
	}
	return sp, nil
}

// OriginalHeading opens the summary section that quotes the session's first user message: the
// goal and constraints said once at the start must outlive every compaction, whatever the
// summary model kept of them.
const OriginalHeading = "## Original Request"

// originalChars bounds the original request's quote: a share of the room, at most 2,000
// characters, at least 200.
func originalChars(b Budgets) int {
	return min(max(b.Room*4*6/100, 200), 2000)
}

const originalLabel = "(verbatim, the session's first user message)"

// withOriginal puts the original request section in front of a summary body.
func (sp *split) withOriginal(body string) string {
	if sp.original == "" {
		return body
	}
	return OriginalHeading + "\n" + originalLabel + "\n" + sp.original + "\n\n" + body
}

// pastSummaries moves a tail start past any pure summary at or after it: a summary never
// survives in the tail next to the new one.
func (sp *split) pastSummaries(end int) int {
	for i := len(sp.work) - 1; i >= end; i-- {
		if isSummary(sp.work[i]) {
			return alignForward(sp.work, i+1)
		}
	}
	return end
}

// unmerge takes every summary carrier apart: a message the summary was merged into gets its
// own text (and wire text, recall included) back, so it can stay in the tail or be summarised
// as the turn it is. The newest summary's body becomes previous; pure summaries stay in work
// (the middle skips them, the tail cut moves past them).
func (sp *split) unmerge(est Estimator) {
	sp.newest = -1
	for i := sp.sys; i < len(sp.work); i++ {
		if !isSummary(sp.work[i]) {
			continue
		}
		p, ok := parseSummary(sp.work[i].Content)
		if !ok {
			continue
		}
		sp.newest = i
		_, orig, _ := cutSection(p.Body, OriginalHeading)
		// The section is the label line withOriginal writes, then the quote: only the quote
		// is carried (a label kept with it came back once more at every compaction).
		orig = strings.TrimSpace(orig)
		for {
			rest, ok := strings.CutPrefix(orig, originalLabel)
			if !ok {
				break
			}
			orig = strings.TrimSpace(rest)
		}
		sp.original = orig
		sp.previous = removeSection(removeSection(p.Body, LedgerHeading), OriginalHeading)
		sp.prevLedger = parseLedger(p.Body).Entries
		text := p.Trailing
		if text == "" {
			text = p.Prior
		}
		if text == "" {
			continue
		}
		m := sp.work[i]
		m.Content, m.Summary = text, false
		if m.APIContent != "" {
			m.APIContent = ""
			if pa, ok := parseSummary(sp.orig[i].APIContent); ok {
				if w := pa.Trailing + pa.Prior; w != "" && w != text {
					m.APIContent = w
				}
			}
		}
		sp.work[i] = m
		sp.tok[i] = est.Message(m)
	}
}

// minimalTailCut is the smallest tail that still answers the turn: from the newest real user
// message on (else from the newest assistant message), never inside the head or a tool group.
func (sp *split) minimalTailCut() int {
	cut := nthLastRealUser(sp.work, sp.start, 1)
	if cut < 0 {
		cut = alignBackward(sp.work, lastAssistant(sp.work, sp.start))
	}
	if cut < 0 {
		cut = len(sp.work) - 1
	}
	return alignForward(sp.work, max(cut, sp.start+1))
}

// middle is what leaves the active context for a tail starting at end: every message of
// [start, end) but the pure summaries (their body is previous), in the form the summariser
// reads (pruned) and in the original form (for the snapshot and the fallback), with scans.
type middle struct {
	orig, pruned []store.Message
	scans        []msgScan
	content      int // tokens of pruned
	ledger       Ledger
}

func (sp *split) middleTo(end int, est Estimator) middle {
	if md, ok := sp.mids[end]; ok {
		return *md
	}
	var md middle
	scans := sp.hist.scanRange(sp.start, end)
	n := max(end-sp.start, 0)
	md.orig, md.pruned, md.scans = make([]store.Message, 0, n), make([]store.Message, 0, n), make([]msgScan, 0, n)
	for i := sp.start; i < end; i++ {
		o := sp.orig[i]
		if isSummary(o) {
			w := sp.work[i]
			if isSummary(w) {
				continue // a pure summary: its body is in previous
			}
			// A carrier: the text merged into it is a turn of its own.
			w.ID = o.ID
			md.orig = append(md.orig, w)
			md.pruned = append(md.pruned, w)
			md.scans = append(md.scans, scanMessage(w))
			md.content += est.Message(w)
			continue
		}
		md.orig = append(md.orig, o)
		md.pruned = append(md.pruned, sp.work[i])
		md.scans = append(md.scans, scans[i-sp.start])
		md.content += sp.tok[i]
	}
	// The ledger reads earlier ledgers out of the summaries in the middle itself; one that sat
	// in the tail (its carrier stays) is merged first.
	if sp.newest >= end {
		md.ledger.merge(sp.prevLedger)
	}
	md.ledger.merge(ledgerEntriesBefore(sp.orig[sp.start:end], scans, sp.touchedFrom(end)))
	// A head or tail message that pruning cut to a stub stays in the context without what it
	// said: the ledger reads the original (archived by this compaction, so its pointer holds).
	var cut []store.Message
	var cutScans []msgScan
	for i := range sp.orig {
		if i >= sp.start && i < end {
			continue
		}
		if o := sp.orig[i]; o.Role == store.RoleTool && !isSummary(o) && sp.work[i].Content != o.Content {
			cut = append(cut, o)
			cutScans = append(cutScans, sp.hist.scanRange(i, i+1)[0])
		}
	}
	if len(cut) > 0 {
		md.ledger.merge(ledgerEntries(cut, cutScans))
	}
	md.ledger.bound(sp.ledgerScale)
	if sp.mids == nil {
		sp.mids = map[int]*middle{}
	}
	sp.mids[end] = &md
	return md
}

// touchedFrom is the set of paths the tool calls of messages from index end on read or wrote.
func (sp *split) touchedFrom(end int) map[string]bool {
	out := map[string]bool{}
	for i := end; i < len(sp.orig); i++ {
		m := sp.orig[i]
		if m.Role != store.RoleAssistant || len(m.ToolCalls) == 0 || isSummary(m) {
			continue
		}
		args := sp.hist.scans[i].callArgs(m)
		for j, tc := range m.ToolCalls {
			if k := classifyTool(tc.Function.Name); k == kindRead || k == kindWrite {
				for _, p := range args[j].Paths {
					out[p] = true
				}
			}
		}
	}
	return out
}

// sameCalls reports whether a and b are the same slice of tool calls (pruning copies a slice
// before it cuts an argument).
func sameCalls(a, b []store.ToolCall) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
