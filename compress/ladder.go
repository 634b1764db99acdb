package compress

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spoolhq/spool/store"
)

// Rung names one step of the compaction ladder: each is tried only when the one before it did
// not reach the target.
type Rung string

// The ladder, in order.
const (
	// RungSummary: the model's summary within its budget, the full ledger, the normal tail.
	RungSummary Rung = "summary"
	// RungShorter: the model's summary cut to half its budget, half the ledger.
	RungShorter Rung = "shorter_summary"
	// RungFallback: the deterministic fallback summary (also the first rung when the model failed).
	RungFallback Rung = "fallback"
	// RungSmallTail: the fallback over a wider middle, only the newest exchange kept verbatim.
	RungSmallTail Rung = "small_tail"
	// RungPointer: the middle archived with a one-line pointer only (still searchable).
	RungPointer Rung = "pointer"
)

// summaryResult is what the summary call produced.
type summaryResult struct {
	body     string // the model's summary, post-processed; "" when the fallback is used
	model    string
	fallback bool
	class    FailureClass
	notices  []string
}

// candidate is one rung's assembled history.
type candidate struct {
	rung    Rung
	body    string // summary body with ledger
	ledger  Ledger
	trimmed int
	msgs    []store.Message
	origins []int64
	end     int
	tokens  int
	// ledgerFull: the rendered ledger reached its bound (it left entries out or cut lines to
	// pointers), so more room would keep more.
	ledgerFull bool
}

// ledgerFullSlack is how close to its bound a rendered ledger is taken as full.
const ledgerFullSlack = 200

// grownLedger is how many characters of ledger slack tokens of room left under the target
// pay for: nine tenths of them (the estimate of a longer body is not exactly linear), nothing
// for less than 100 tokens.
func grownLedger(slack int) int {
	if slack < 100 {
		return 0
	}
	return slack * 4 * 9 / 10
}

// ladder assembles rungs until one reaches the target and is clearly smaller than what it
// replaces (it saves at least a quarter of the middle's tokens). When none does, the smallest candidate that is smaller than the input
// is taken; when even that is not, there is nothing to gain and ErrNothingToCompress is returned.
func (c *Compressor) ladder(req Request, sp *split, sum summaryResult, b Budgets) (candidate, error) {
	est := c.estimator()
	sid := req.SessionID
	md := sp.middleTo(sp.end, est)
	budget := summaryBudgetFor(md.content, b.Summary)

	build := func(rung Rung, body string, trimmed int, led Ledger, ledgerChars, askChars, end int) candidate {
		full := body
		if rung != RungPointer {
			full = sp.withOriginal(body)
		}
		lc := Ledger{Entries: slices.Clone(led.Entries)}
		r := lc.renderWithin(sid, askChars, ledgerChars)
		if r != "" {
			full = strings.TrimSpace(full + "\n\n" + r)
		} else {
			lc.Entries = nil
		}
		out, origins := c.assemble(sp.work, sp.orig, sp.start, end, summaryContentFor(full, b), sid)
		return candidate{rung: rung, body: full, ledger: lc, trimmed: trimmed, msgs: out, origins: origins, end: end, tokens: EstimateTokens(est, out),
			ledgerFull: len(r) > ledgerChars-ledgerFullSlack}
	}
	// Clearly smaller: the compaction saves at least a quarter of what it replaces.
	fits := func(k candidate) bool {
		replaced := 0
		for i := sp.start; i < k.end; i++ {
			replaced += sp.tok[i]
		}
		// 3% of the target is left as slack for estimators that count the same request
		// slightly differently (the caller's estimate of the next request is what is checked).
		return k.tokens+b.Fixed <= b.Target-b.Target*3/100 && 4*(sp.before-k.tokens) >= replaced
	}
	var best, summary *candidate
	try := func(k candidate) bool {
		if best == nil || k.tokens < best.tokens {
			best = &k
		}
		if summary == nil && k.rung != RungPointer {
			summary = &k
		}
		return fits(k)
	}
	// A rung that reached its target with room to spare gives the room to the ledger when
	// the ledger had to leave entries out (it keeps every fact or a pointer to it; see
	// grownLedger): up to twice its budget, the verbatim asks in proportion.
	grow := func(k candidate, rebuild func(ledgerChars, askChars int) candidate, ledgerChars, askChars int) candidate {
		limit := b.Target - b.Target*3/100 - b.Fixed
		extra := min(grownLedger(limit-k.tokens), ledgerChars)
		if extra <= 0 || len(k.ledger.Entries) == 0 || !k.ledgerFull {
			return k
		}
		g := rebuild(ledgerChars+extra, askChars+askChars*extra/max(ledgerChars, 1))
		if fits(g) {
			return g
		}
		return k
	}

	var fb string
	fallback := func() string {
		if fb == "" {
			fb = fallbackSummaryWithin(md.orig, md.scans, sp.previous, min(budget*4, FallbackSummaryCap))
		}
		return fb
	}
	// rung builds one rung and, when it fits, grows its ledger into the room left.
	rung := func(r Rung, body string, trimmed int, led Ledger, ledgerChars, askChars, end int) (candidate, bool) {
		rebuild := func(lc, ac int) candidate { return build(r, body, trimmed, led, lc, ac, end) }
		k := rebuild(ledgerChars, askChars)
		if !try(k) {
			return k, false
		}
		return grow(k, rebuild, ledgerChars, askChars), true
	}
	if !sum.fallback {
		body, trimmed := boundSummaryBy(sum.body, budget, summaryTrimFactor, est, sid)
		if k, ok := rung(RungSummary, body, trimmed, md.ledger, b.LedgerChars, b.AskChars, sp.end); ok {
			return k, nil
		}
		body, trimmed = boundSummaryBy(sum.body, budget/2, 1, est, sid)
		// The ledger keeps its budget on the rungs that shorten the summary: it is the part
		// that keeps pointers to everything compacted.
		if k, ok := rung(RungShorter, body, trimmed, md.ledger, b.LedgerChars, b.AskChars/2, sp.end); ok {
			return k, nil
		}
		body, trimmed = boundSummaryBy(fallback(), budget/2, 1, est, sid)
		if k, ok := rung(RungFallback, body, trimmed, md.ledger, b.LedgerChars, b.AskChars/2, sp.end); ok {
			return k, nil
		}
	} else {
		body, trimmed := boundSummaryBy(fallback(), budget, summaryTrimFactor, est, sid)
		if k, ok := rung(RungFallback, body, trimmed, md.ledger, b.LedgerChars, b.AskChars, sp.end); ok {
			return k, nil
		}
	}

	// A smaller tail: what leaves it is summarised mechanically, on top of the model's
	// summary when there is one.
	wide := md
	if sp.minEnd > sp.end {
		wide = sp.middleTo(sp.minEnd, est)
	}
	prev := sp.previous
	if !sum.fallback {
		prev = removeSection(removeSection(sum.body, LedgerHeading), OriginalHeading)
	}
	small := fallbackSummaryWithin(wide.orig, wide.scans, prev, min(budget*2, FallbackSummaryCap))
	body, trimmed := boundSummaryBy(small, budget/2, 1, est, sid)
	if k, ok := rung(RungSmallTail, body, trimmed, wide.ledger, b.LedgerChars/2, b.AskChars/4, sp.minEnd); ok {
		return k, nil
	}

	if sp.before+b.Fixed <= b.Target {
		// The history fits its target already and no summary saves a quarter of what it
		// replaces: a compaction asked for gets the summary when it saves anything at all.
		// A bare pointer is for a history that must shrink.
		if req.Force && summary != nil && summary.tokens < sp.before {
			return *summary, nil
		}
		replaced := 0
		for i := sp.start; i < sp.end; i++ {
			replaced += sp.tok[i]
		}
		return candidate{}, nothing("a summary would not be smaller than what it replaces (%s, ~%d tokens); the session (~%d tokens) is well within its target (%d)",
			olderMessages(sp.end-sp.start), replaced, sp.before+b.Fixed, b.Target)
	}
	// Last rung: a pointer only. Everything archived stays searchable.
	askChars := 160
	if !slices.ContainsFunc(sp.work[sp.minEnd:], isRealUser) {
		askChars = max(b.Room, 4*minRoom) // the ask to answer left the tail: quote it whole
	}
	// Its ledger is pointers mostly: a quarter of the budget, no verbatim asks.
	if k, ok := rung(RungPointer, archivePointer(sid, wide.orig, sp.orig[sp.start:sp.minEnd], askChars), 0, wide.ledger, b.LedgerChars/4, 0, sp.minEnd); ok {
		return k, nil
	}
	if best.tokens >= sp.before {
		return candidate{}, nothing("no summary is smaller than what it replaces (%s)", olderMessages(sp.end-sp.start))
	}
	return *best, nil
}

// archivePointer is the whole summary of the last rung: how many messages were archived and how
// to find them again.
// The newest archived user message is quoted up to askChars.
func archivePointer(sessionID string, turns, archived []store.Message, askChars int) string {
	var first, last int64
	for _, m := range archived {
		if m.ID <= 0 {
			continue
		}
		if first == 0 || m.ID < first {
			first = m.ID
		}
		last = max(last, m.ID)
	}
	where := "session_search(query=...)"
	if sessionID != "" {
		where = fmt.Sprintf("session_search(session_id=%q, query=...)", sessionID)
		if last > 0 {
			where += " or " + pointer(sessionID, last)
		}
	}
	span := ""
	if first > 0 {
		span = fmt.Sprintf(" (m%d–m%d)", first, last)
	}
	ask := ""
	for i := len(turns) - 1; i >= 0; i-- {
		if t, ok := userText(turns[i]); ok {
			if len(t) <= askChars {
				ask = "\nThe newest archived user message, verbatim:\n" + indentQuote(redact(t))
			} else {
				ask = "\nThe newest archived user message began: " + clip(redact(t), askChars)
			}
			break
		}
	}
	return fmt.Sprintf("%d earlier messages%s were archived without a summary to fit the model's window; they are not lost: recover any of them with %s.%s",
		len(turns), span, where, ask)
}

// olderMessages says how many older messages a compaction would replace.
func olderMessages(n int) string {
	if n == 1 {
		return "1 older message"
	}
	return fmt.Sprintf("%d older messages", n)
}
