package compress

import (
	"fmt"
	"strings"

	"github.com/spoolhq/spool/store"
)

// Fallback summary bounds.
const (
	FallbackSummaryCap = 8_000
	fallbackTurnCap    = 700
	fallbackTurns      = 8
	fallbackActions    = 12
	fallbackFiles      = 12
	carriedSectionCap  = 700
)

// fallbackSummary builds the deterministic summary used when the summary model failed: the same
// headings plus "## Last Dropped Turns", sections of the previous summary carried forward, redacted
// and capped at FallbackSummaryCap characters. The working-set ledger is appended after it (and
// is bounded on its own). scans[i] is the scan of turns[i], shared with the ledger: the files and
// errors listed here are those the ledger found in the same text.
func fallbackSummary(turns []store.Message, scans []msgScan, previous string) string {
	return fallbackSummaryWithin(turns, scans, previous, FallbackSummaryCap)
}

// fallbackSummaryWithin is fallbackSummary capped at capChars instead of FallbackSummaryCap.
func fallbackSummaryWithin(turns []store.Message, scans []msgScan, previous string, capChars int) string {
	carry := func(heading string) string {
		_, sec, ok := cutSection(previous, heading)
		if !ok {
			return ""
		}
		sec = strings.TrimSpace(sec)
		if sec == "" || sec == "None." {
			return ""
		}
		return truncateRunes(sec, carriedSectionCap)
	}
	sections := map[string]string{}

	sections["## Historical Task Snapshot"] = taskSnapshot(turns)

	results := map[string]int{}
	for i, m := range turns {
		if m.Role == store.RoleTool {
			results[m.ToolCallID] = i
		}
	}
	var actions, files, blockers []string
	seenFile := map[string]bool{}
	addFile := func(p string) {
		if p != "" && !seenFile[p] && len(files) < fallbackFiles {
			seenFile[p] = true
			files = append(files, "- "+p)
		}
	}
	for i, m := range turns {
		sc := scans[i]
		for j, tc := range m.ToolCalls {
			args := sc.args[j]
			target := args.Command
			if target == "" {
				target = strings.Join(args.Paths, ", ")
			}
			if target == "" {
				target = clip(tc.Function.Arguments, 80)
			}
			outcome := "no result recorded"
			if r, ok := results[tc.ID]; ok {
				outcome = "done"
				res := turns[r].Content
				if s, ok := scans[r].exitStatus(res); ok {
					outcome = "exit " + s
				} else if err := firstErrorLine(res, scans[r]); err != "" {
					outcome = "error: " + clip(err, 100)
				}
			}
			actions = append(actions, fmt.Sprintf("%s %s — %s [tool: %s]", strings.ToUpper(tc.Function.Name), clip(target, 120), outcome, tc.Function.Name))
			for _, p := range args.Paths {
				addFile(p)
			}
		}
		if len(files) < fallbackFiles {
			for _, id := range sc.ids {
				if strings.Contains(id, "/") || isKnownExt(id[strings.LastIndexByte(id, '.')+1:]) {
					addFile(id)
				}
			}
		}
		if (m.Role == store.RoleTool || m.Role == store.RoleUser) && len(sc.errs) > 0 && len(blockers) < 6 {
			blockers = append(blockers, "- "+sc.errs[0])
		}
	}
	if len(actions) > fallbackActions {
		actions = actions[len(actions)-fallbackActions:]
	}
	numbered := make([]string, len(actions))
	for i, a := range actions {
		numbered[i] = fmt.Sprintf("%d. %s", i+1, a)
	}
	joinOr := func(prev string, items []string, none string) string {
		var parts []string
		if prev != "" {
			parts = append(parts, prev)
		}
		if len(items) > 0 {
			parts = append(parts, strings.Join(items, "\n"))
		}
		if len(parts) == 0 {
			return none
		}
		return strings.Join(parts, "\n")
	}
	sections["## Goal"] = joinOr(carry("## Goal"), nil, "Not determined: the summary model failed and this summary was built mechanically. See the user messages in the working set below.")
	sections["## Constraints & Preferences"] = joinOr(carry("## Constraints & Preferences"), nil, "See the user decisions in the working set below.")
	sections["## Completed Actions"] = joinOr(carry("## Completed Actions"), numbered, "None recorded.")
	sections["## Active State"] = "Unknown after a fallback compaction: re-check files and processes with tools before relying on earlier state."
	sections["## Historical In-Progress State"] = joinOr(carry("## Historical In-Progress State"), nil, "None recorded.")
	sections["## Blocked"] = joinOr("", blockers, "None detected.")
	sections["## Key Decisions"] = joinOr(carry("## Key Decisions"), nil, "See the working set below.")
	sections["## Resolved Questions"] = joinOr(carry("## Resolved Questions"), nil, "None recorded.")
	sections["## Historical Pending User Asks"] = joinOr(carry("## Historical Pending User Asks"), nil, "None recorded.")
	sections["## Relevant Files"] = joinOr(carry("## Relevant Files"), files, "None recorded.")
	sections["## Historical Remaining Work"] = joinOr(carry("## Historical Remaining Work"), nil, "None recorded.")
	sections["## Critical Context"] = joinOr(carry("## Critical Context"), nil, "None recorded.")

	// Under a small cap, sections with nothing to say are left out: the words go to the turns.
	compact := capChars < FallbackSummaryCap/2
	placeholder := func(s string) bool {
		return s == "None recorded." || s == "None detected." || strings.HasPrefix(s, "Not determined:") ||
			strings.HasPrefix(s, "See the ") || strings.HasPrefix(s, "Unknown after a fallback")
	}
	var parts []string
	for _, h := range templateHeadings {
		if compact && h != "## Historical Task Snapshot" && placeholder(sections[h]) {
			continue
		}
		parts = append(parts, redact(fmt.Sprintf("%s\n%s\n\n", h, sections[h])))
	}
	head := strings.Join(parts, "")

	dropped := lastDroppedTurns(turns)
	tail := "## Last Dropped Turns\n" + redact(strings.Join(dropped, "\n\n"))
	for len(head)+len(tail) > capChars && len(dropped) > 1 {
		dropped = dropped[1:]
		tail = "## Last Dropped Turns\n" + redact(strings.Join(dropped, "\n\n"))
	}
	if len(head)+len(tail) > capChars {
		// Not even the newest dropped turn fits: whole sections go from the end (the task
		// snapshot first in the list stays), rather than a cut through the middle of one.
		tail = ""
		for len(parts) > 1 && len(head) > capChars {
			parts = parts[:len(parts)-1]
			head = strings.Join(parts, "")
		}
	}
	out := head + tail
	if len(out) > capChars {
		const mark = "\n...[truncated]"
		out = cutBytes(out, max(capChars-len(mark), 0)) + mark
	}
	return strings.TrimSpace(out)
}

// taskSnapshot is the newest user message of the compacted turns, quoted ("None." without one).
func taskSnapshot(turns []store.Message) string {
	for i := len(turns) - 1; i >= 0; i-- {
		if t, ok := userText(turns[i]); ok {
			return "(deterministic fallback: the newest user message of the compacted turns, verbatim. Historical only; newer protected-tail messages after this summary win.)\n" +
				indentQuote(truncateRunes(t, snapshotMax))
		}
	}
	return "None."
}

// lastDroppedTurns renders the newest compacted turns (at most fallbackTurns), one entry each:
// the role and the text, an assistant's tool calls named.
func lastDroppedTurns(turns []store.Message) []string {
	var dropped []string
	for _, m := range turns[max(0, len(turns)-fallbackTurns):] {
		text := m.Content
		if m.Role == store.RoleAssistant {
			text = stripThink(text)
			for _, tc := range m.ToolCalls {
				text += fmt.Sprintf(" [calls %s(%s)]", tc.Function.Name, clip(tc.Function.Arguments, 120))
			}
		}
		dropped = append(dropped, fmt.Sprintf("[%s]: %s", strings.ToUpper(m.Role), truncateRunes(strings.TrimSpace(text), fallbackTurnCap)))
	}
	return dropped
}

// firstErrorLine is the first line of a tool result that reports an error. The scan covers all
// of a result up to scanToolPrefix+scanToolSuffix bytes; a longer one is read in full, as before.
func firstErrorLine(content string, sc msgScan) string {
	if len(content) <= scanToolPrefix+scanToolSuffix {
		if len(sc.errs) > 0 {
			return sc.errs[0]
		}
		return ""
	}
	if errs := errorLines(content, 1); len(errs) > 0 {
		return errs[0]
	}
	return ""
}
