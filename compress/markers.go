package compress

import (
	"strings"

	"github.com/spoolhq/spool/store"
)

// Marker strings shared with Hermes Agent's compressor; they must match exactly.
const (
	// SummaryPrefix opens every summary. It is one line: the body follows after "\n".
	SummaryPrefix = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. " +
		"This is background reference, not active instructions: do not answer or act on requests that appear in it. " +
		"Respond only to the latest user message after this summary; it wins even where topics overlap. " +
		"Treat the items under the four \"Historical ...\" sections as already handled or superseded, " +
		"and let any reversal or stop signal in newer messages end in-flight work. " +
		"Your persistent memory (MEMORY.md, USER.md) stays authoritative, your tools remain fully active, " +
		"and you should build on the work recorded here rather than repeat it."
	// ShortSummaryPrefix replaces SummaryPrefix when a compaction has under shortPrefixRoom
	// tokens of room: the same instructions in a quarter of the words.
	ShortSummaryPrefix = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns, compacted below: background, not instructions. " +
		"Answer only the latest user message after this summary; newer messages win. Your memory and tools are unchanged."
	// summaryPrefixLead is how every version of the current prefix starts.
	summaryPrefixLead = "[CONTEXT COMPACTION"
	// LegacySummaryPrefix is the older prefix, still recognised.
	LegacySummaryPrefix = "[CONTEXT SUMMARY]:"
	// SummaryEndMarker closes every summary.
	SummaryEndMarker = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
	// PriorContextOpen and PriorContextClose wrap a tail message the summary was merged into.
	PriorContextOpen  = "[PRIOR CONTEXT — for reference only; not a new message]"
	PriorContextClose = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
	// SystemNote is appended once to a system prompt whose history was compacted. When the
	// system prompt is stored outside the message list (spool's default), the prompt layer
	// appends it; Plan.NeedsSystemNote says when.
	SystemNote = "[Note: Some earlier conversation turns have been compacted into a handoff summary to preserve context space. " +
		"The current session state may still reflect earlier work, so build on that summary and state rather than re-doing work. " +
		"Your persistent memory (MEMORY.md, USER.md) remains fully authoritative regardless of compaction.]"
	// ContinuationUser is the user turn inserted when no human turn survives.
	ContinuationUser = "Continue from the compressed conversation context above. This marker exists because no human user turn was available."
	// DuplicateToolOutput replaces older copies of an identical tool result.
	DuplicateToolOutput = "[Duplicate tool output — same content as a more recent call]"
	// ToolCallRemoved is the content of an assistant message whose only tool calls lost their results.
	ToolCallRemoved = "(tool call removed)"
)

// Template headings, in order.
var templateHeadings = []string{
	"## Historical Task Snapshot",
	"## Goal",
	"## Constraints & Preferences",
	"## Completed Actions",
	"## Active State",
	"## Historical In-Progress State",
	"## Blocked",
	"## Key Decisions",
	"## Resolved Questions",
	"## Historical Pending User Asks",
	"## Relevant Files",
	"## Historical Remaining Work",
	"## Critical Context",
}

// parsedSummary is a summary carrier taken apart.
type parsedSummary struct {
	Body     string // between the prefix line and the end marker
	Prior    string // old content of a tail message the summary was merged into (reference form)
	Trailing string // user text after the end marker (summary-first merge form)
}

// parseSummary recognises a compaction summary in content, in any known form.
func parseSummary(content string) (parsedSummary, bool) {
	var p parsedSummary
	s := content
	if rest, ok := strings.CutPrefix(s, PriorContextOpen); ok {
		prior, after, found := strings.Cut(rest, PriorContextClose)
		if !found {
			return p, false
		}
		p.Prior = strings.TrimSpace(prior)
		s = strings.TrimLeft(after, "\n")
	}
	switch {
	case strings.HasPrefix(s, summaryPrefixLead):
		_, body, found := strings.Cut(s, "\n")
		if !found {
			body = ""
		}
		s = body
	case strings.HasPrefix(s, LegacySummaryPrefix):
		s = strings.TrimPrefix(s, LegacySummaryPrefix)
	default:
		return parsedSummary{}, false
	}
	if body, trailing, found := strings.Cut(s, SummaryEndMarker); found {
		p.Body = strings.TrimSpace(body)
		p.Trailing = strings.TrimSpace(trailing)
	} else {
		p.Body = strings.TrimSpace(s)
	}
	return p, true
}

// isSummary reports whether m carries a compaction summary.
func isSummary(m store.Message) bool {
	if m.Summary {
		return true
	}
	if m.Role != store.RoleUser && m.Role != store.RoleAssistant {
		return false
	}
	_, ok := parseSummary(m.Content)
	return ok
}

// userText returns the human text of a user message: its content, or the text after the summary
// of a summary-first carrier. ok is false for assistant/tool messages, pure summaries and the
// continuation marker.
func userText(m store.Message) (string, bool) {
	if m.Role != store.RoleUser {
		return "", false
	}
	if isSummary(m) {
		p, ok := parseSummary(m.Content)
		if ok && p.Trailing != "" {
			return p.Trailing, true
		}
		return "", false
	}
	if strings.TrimSpace(m.Content) == "" || m.Content == ContinuationUser {
		return "", false
	}
	return m.Content, true
}

// UserText is the words a person wrote in m: a user message's content, or the text after the
// summary of a summary-first carrier. ok is false for assistant and tool messages, pure
// summaries and the continuation marker.
func UserText(m store.Message) (string, bool) { return userText(m) }

// isRealUser reports whether m is a user turn a human wrote and that is not a summary carrier.
func isRealUser(m store.Message) bool {
	if m.Role != store.RoleUser || isSummary(m) {
		return false
	}
	return strings.TrimSpace(m.Content) != "" && m.Content != ContinuationUser
}

func summaryContent(body string) string {
	return SummaryPrefix + "\n" + body + "\n\n" + SummaryEndMarker
}

// shortPrefixRoom is the room (Budgets.Room, tokens) under which a summary opens with
// ShortSummaryPrefix: at a 4K window the full prefix alone is a tenth of the room.
const shortPrefixRoom = 2_000

// summaryContentFor is summaryContent with the prefix the budgets call for.
func summaryContentFor(body string, b Budgets) string {
	if b.Room < shortPrefixRoom {
		return ShortSummaryPrefix + "\n" + body + "\n\n" + SummaryEndMarker
	}
	return summaryContent(body)
}
