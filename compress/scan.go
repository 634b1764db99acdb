package compress

import "github.com/spoolhq/spool/store"

// scanErrLines is how many error lines a scan keeps: the ledger takes up to 3 from tool output
// and 2 from user text, the fallback summary the first one.
const scanErrLines = 3

// msgScan is everything the working-set ledger, the fallback summary and pruning read out of
// one message. Each message is scanned (and its tool calls decoded, its exit status looked up)
// at most once per compaction, and all of them share the result.
type msgScan struct {
	// text is what was scanned for a user message (its human text) or an assistant message
	// (its content without think blocks); tool results are scanned in their first
	// scanToolPrefix and last scanToolSuffix bytes. Empty for summaries and tool results.
	text    string
	ids     []string // identifiers in text, in order of first appearance
	errs    []string // the first scanErrLines lines of text that report an error (user and tool only)
	values  []string // tool results: lines that read as settings or measured values (valueLines)
	scanned bool

	args []callArgs // decoded arguments, one per tool call of an assistant message

	exit      string // exit status reported by a tool result, once looked up
	exitKnown bool   // exit and exitFound are set
	exitFound bool
}

// exitStatus is exitStatus(content) of the scanned tool result, computed once.
func (s *msgScan) exitStatus(content string) (string, bool) {
	if !s.exitKnown {
		s.exit, s.exitFound = exitStatus(content)
		s.exitKnown = true
	}
	return s.exit, s.exitFound
}

// callArgs returns the decoded arguments of m's tool calls (m is the scanned message).
func (s *msgScan) callArgs(m store.Message) []callArgs {
	if s.args == nil && len(m.ToolCalls) > 0 {
		s.args = make([]callArgs, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			s.args[i] = parseArgs(tc.Function.Arguments)
		}
	}
	return s.args
}

// scanMessage scans one message. Summary carriers are not scanned: the ledger reads their
// previous ledger and the text merged into them instead.
func scanMessage(m store.Message) msgScan {
	var s msgScan
	s.fill(m)
	return s
}

func (s *msgScan) fill(m store.Message) {
	if s.scanned {
		return
	}
	s.scanned = true
	s.callArgs(m)
	switch m.Role {
	case store.RoleUser:
		if isSummary(m) {
			return
		}
		text, ok := userText(m)
		if !ok {
			return
		}
		s.text = text
		s.ids = identifiers(text)
		s.errs = errorLines(text, scanErrLines)
	case store.RoleAssistant:
		if isSummary(m) {
			return
		}
		s.text = stripThink(m.Content)
		s.ids = identifiers(s.text)
	case store.RoleTool:
		// The window's two parts are scanned in turn, as if joined by a newline (which ends
		// a token and a line), without building the joined copy.
		head, tail := toolScanParts(m.Content)
		s.ids = identifiers(head)
		s.errs = errorLines(head, scanErrLines)
		s.values = valueLines(head, maxValues)
		if tail != "" {
			s.ids = appendIdentifiers(s.ids, tail)
			s.errs = append(s.errs, errorLines(tail, scanErrLines-len(s.errs))...)
			s.values = append(s.values, valueLines(tail, maxValues-len(s.values))...)
		}
	}
}

// history is the input of one compaction with the scan of each message, filled as needed.
type history struct {
	ms    []store.Message // as given to Compress; never modified
	scans []msgScan
}

func newHistory(ms []store.Message) *history {
	return &history{ms: ms, scans: make([]msgScan, len(ms))}
}

// scanRange scans ms[start:end] and returns their scans (shared with h: results cached later,
// such as exit statuses, land in h too).
func (h *history) scanRange(start, end int) []msgScan {
	for i := start; i < end; i++ {
		h.scans[i].fill(h.ms[i])
	}
	return h.scans[start:end]
}

// toolScanParts is the part of a tool result that is scanned: all of it (tail empty), or its
// first scanToolPrefix and last scanToolSuffix bytes.
func toolScanParts(text string) (head, tail string) {
	if len(text) > scanToolPrefix+scanToolSuffix {
		return text[:scanToolPrefix], text[len(text)-scanToolSuffix:]
	}
	return text, ""
}

func scanMessages(ms []store.Message) []msgScan {
	out := make([]msgScan, len(ms))
	for i, m := range ms {
		out[i] = scanMessage(m)
	}
	return out
}
