package compress

import (
	"slices"
	"strings"

	"github.com/spoolhq/spool/store"
)

// Sanitize returns a provider-acceptable copy of ms: every tool result sits in the block right
// after the assistant message that called it (orphans and repeats are dropped), every tool call
// has its result (calls without one are stripped; an assistant message left empty says
// "(tool call removed)"), and at least one user turn exists. A valid history comes back equal.
func Sanitize(ms []store.Message) []store.Message {
	out := make([]store.Message, 0, len(ms)+1)
	for i := 0; i < len(ms); {
		m := ms[i]
		switch {
		case m.Role == store.RoleTool:
			i++ // orphan: no calling assistant message right before its block
			continue
		case m.Role == store.RoleAssistant && len(m.ToolCalls) > 0:
			want := make(map[string]bool, len(m.ToolCalls))
			for _, tc := range m.ToolCalls {
				if _, dup := want[tc.ID]; !dup && tc.ID != "" {
					want[tc.ID] = false
				}
			}
			j := i + 1
			var results []store.Message
			for j < len(ms) && ms[j].Role == store.RoleTool {
				if got, ok := want[ms[j].ToolCallID]; ok && !got {
					want[ms[j].ToolCallID] = true
					results = append(results, ms[j])
				}
				j++
			}
			kept := make([]store.ToolCall, 0, len(m.ToolCalls))
			for _, tc := range m.ToolCalls {
				if want[tc.ID] {
					want[tc.ID] = false // a repeated call id keeps only its first call
					kept = append(kept, tc)
				}
			}
			if len(kept) != len(m.ToolCalls) {
				if len(kept) == 0 {
					kept = nil
				}
				m.ToolCalls = kept
				if len(kept) == 0 && strings.TrimSpace(m.Content) == "" {
					m.Content, m.APIContent = ToolCallRemoved, ""
				}
			}
			out = append(out, m)
			out = append(out, results...)
			i = j
			continue
		}
		out = append(out, m)
		i++
	}
	if !slices.ContainsFunc(out, func(m store.Message) bool { return m.Role == store.RoleUser }) {
		out = append(out, store.Message{Role: store.RoleUser, Content: ContinuationUser})
	}
	return out
}

// Validate reports the first reason ms is not provider-acceptable, or "" when it is. It checks
// what Sanitize guarantees plus at most one summary and known roles (system only first).
func Validate(ms []store.Message) string {
	users, summaries := 0, 0
	for i := 0; i < len(ms); i++ {
		m := ms[i]
		switch m.Role {
		case store.RoleSystem:
			if i != 0 {
				return "system message after the start"
			}
		case store.RoleUser:
			users++
		case store.RoleAssistant:
		case store.RoleTool:
			return "tool result " + m.ToolCallID + " without its call right before it"
		default:
			return "unknown role " + m.Role
		}
		if isSummary(m) {
			summaries++
		}
		if m.Role == store.RoleAssistant && len(m.ToolCalls) > 0 {
			want := map[string]bool{}
			for _, tc := range m.ToolCalls {
				if _, dup := want[tc.ID]; dup {
					return "duplicate tool call id " + tc.ID
				}
				want[tc.ID] = false
			}
			for i+1 < len(ms) && ms[i+1].Role == store.RoleTool {
				i++
				id := ms[i].ToolCallID
				got, ok := want[id]
				if !ok || got {
					return "tool result " + id + " has no matching call"
				}
				want[id] = true
			}
			for id, got := range want {
				if !got {
					return "tool call " + id + " has no result"
				}
			}
		}
	}
	if users == 0 {
		return "no user message"
	}
	if summaries > 1 {
		return "more than one compaction summary"
	}
	return ""
}
