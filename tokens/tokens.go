package tokens

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// PerMessage is the fixed overhead counted for every message (role, separators).
const PerMessage = 10

// EstimateText is the rough token count of s: characters / 4, rounded up.
func EstimateText(s string) int { return chars(utf8.RuneCountInString(s)) }

func chars(n int) int { return (n + 3) / 4 }

// EstimateMessage is the rough token count of one stored message as it goes on the wire: its
// api_content when it has one, else its content, plus the tool-call envelope and replayed
// reasoning fields.
func EstimateMessage(m store.Message) int {
	text := m.Content
	if m.APIContent != "" && (m.Role == store.RoleUser || m.Role == store.RoleAssistant) {
		text = m.APIContent
	}
	return PerMessage + EstimateText(text) + envelope(m.ToolCalls) +
		EstimateText(m.Reasoning) + chars(len(m.ReasoningDetails))
}

// Estimate is the rough token count of messages.
func Estimate(messages []store.Message) int {
	n := 0
	for i := range messages {
		n += EstimateMessage(messages[i])
	}
	return n
}

// EstimateWire is the rough token count of wire messages.
func EstimateWire(messages []provider.Message) int {
	n := 0
	for i := range messages {
		m := &messages[i]
		n += PerMessage + EstimateText(m.Content) + envelope(m.ToolCalls) +
			EstimateText(m.Reasoning) + chars(len(m.ReasoningDetails))
	}
	return n
}

// EstimateRequest is the rough token count of a whole request: system prompt, tool schemas and
// messages.
func EstimateRequest(req provider.Request) int {
	n := EstimateText(req.System) + EstimateWire(req.Messages)
	for _, t := range req.Tools {
		n += EstimateText(t.Name) + EstimateText(t.Description) + chars(len(t.Parameters))
	}
	return n
}

// envelope counts tool calls at their serialized length, as the reference does: the JSON
// structure costs tokens too, not only the arguments.
func envelope(calls []store.ToolCall) int {
	if len(calls) == 0 {
		return 0
	}
	b, err := json.Marshal(calls)
	if err != nil { // cannot happen for these plain string fields; count the arguments instead
		n := 0
		for _, c := range calls {
			n += EstimateText(c.Function.Name) + EstimateText(c.Function.Arguments)
		}
		return n
	}
	return chars(utf8.RuneCount(b))
}
