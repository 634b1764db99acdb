package fake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// directives are the script lines found in the last user message.
type directives struct {
	calls      []directiveCall
	fault      *Fault
	faultTimes int // 0: every time
	say        []string
	rounds     int      // REPEAT: rounds of the CALL lines the turn makes (0: one)
	barrier    string   // WAIT: the barrier this call waits at ("" none)
	barrierN   int      // how many calls the barrier waits for
	text       []string // the lines that are not directives
	badLine    string   // first malformed directive, answered in text
}

type directiveCall struct {
	name string
	args string
}

func parseDirectives(content string) directives {
	var d directives
	for _, line := range strings.Split(content, "\n") {
		trimmed := strings.TrimSpace(line)
		word, rest, _ := strings.Cut(trimmed, " ")
		rest = strings.TrimSpace(rest)
		switch word {
		case "CALL":
			name, args, _ := strings.Cut(rest, " ")
			args = strings.TrimSpace(args)
			if args == "" {
				args = "{}"
			}
			var obj map[string]any
			if name == "" || json.Unmarshal([]byte(args), &obj) != nil {
				if d.badLine == "" {
					d.badLine = trimmed
				}
				continue
			}
			compact, _ := json.Marshal(json.RawMessage(args))
			d.calls = append(d.calls, directiveCall{name: name, args: string(compact)})
		case "FAULT":
			fields := strings.Fields(rest)
			times := 0
			if n := len(fields); n > 1 && strings.HasPrefix(fields[n-1], "x") {
				if v, err := strconv.Atoi(fields[n-1][1:]); err == nil && v > 0 {
					times, fields = v, fields[:n-1]
				}
			}
			f, err := ParseFault(strings.Join(fields, " "))
			if err != nil {
				if d.badLine == "" {
					d.badLine = trimmed
				}
				continue
			}
			d.fault, d.faultTimes = &f, times
		case "SAY":
			d.say = append(d.say, rest)
		case "REPEAT":
			n, err := strconv.Atoi(rest)
			if err != nil || n < 1 {
				if d.badLine == "" {
					d.badLine = trimmed
				}
				continue
			}
			d.rounds = n
		case "WAIT":
			fields := strings.Fields(rest)
			n := 0
			if len(fields) == 2 {
				n, _ = strconv.Atoi(fields[1])
			}
			if n < 1 {
				if d.badLine == "" {
					d.badLine = trimmed
				}
				continue
			}
			d.barrier, d.barrierN = fields[0], n
		default:
			if trimmed != "" {
				d.text = append(d.text, trimmed)
			}
		}
	}
	return d
}

// lastUserDirectives reads directives only when the model is answering a user message, so a
// CALL or FAULT line acts once per user turn and not again after the tool results come back.
func lastUserDirectives(msgs []provider.Message) directives {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "user" {
		return directives{}
	}
	return parseDirectives(msgs[len(msgs)-1].Content)
}

// callDirectives are the directives that act on this call. In a summary request only the lines
// before the turns are read: the turns may quote earlier directives, which must not fire again.
func callDirectives(c call) directives {
	if len(c.msgs) == 0 || !isSummaryRequest(c) {
		return lastUserDirectives(c.msgs)
	}
	content := c.msgs[len(c.msgs)-1].Content
	for _, mark := range []string{markPrevious, markTurns, markNewTurns} {
		if i := strings.Index(content, mark); i >= 0 {
			content = content[:i]
		}
	}
	return parseDirectives(content)
}

// respond is the script: summarizer, tool results, directives, or a plain answer.
func respond(c call, seed string) (string, []store.ToolCall, string) {
	if isSummaryRequest(c) {
		return summarize(c), nil, "stop"
	}
	last := c.msgs[len(c.msgs)-1]
	switch last.Role {
	case "tool":
		if calls := repeatCalls(c, seed); calls != nil {
			return "", calls, "tool_calls"
		}
		return answerToolResults(c.msgs), nil, "stop"
	case "user":
		d := parseDirectives(last.Content)
		if d.badLine != "" {
			return fmt.Sprintf("I could not follow the directive %q.", d.badLine), nil, "stop"
		}
		if len(d.say) > 0 {
			return strings.Join(d.say, "\n"), nil, "stop"
		}
		if len(d.calls) > 0 {
			offered := map[string]bool{}
			for _, t := range c.tools {
				offered[t.Name] = true
			}
			var calls []store.ToolCall
			for i, dc := range d.calls {
				if !offered[dc.name] {
					return fmt.Sprintf("I cannot call %s: it is not among the offered tools.", dc.name), nil, "stop"
				}
				calls = append(calls, store.ToolCall{
					ID:       c.idPrefix + shortHash(seed+strconv.Itoa(i), 24),
					Type:     "function",
					Function: store.ToolFunction{Name: dc.name, Arguments: dc.args},
				})
			}
			return "", calls, "tool_calls"
		}
		return answer(strings.Join(d.text, " ")), nil, "stop"
	}
	for i := len(c.msgs) - 1; i >= 0; i-- {
		if c.msgs[i].Role == "user" {
			return answer(strings.Join(parseDirectives(c.msgs[i].Content).text, " ")), nil, "stop"
		}
	}
	return answer(""), nil, "stop"
}

// repeatCalls are the CALL lines of the turn's user message again, while a REPEAT n directive
// there asks for more rounds than the turn has made (nil otherwise), so one turn can run many
// rounds of tool calls as a real agent does.
func repeatCalls(c call, seed string) []store.ToolCall {
	u := len(c.msgs) - 1
	for u >= 0 && c.msgs[u].Role != "user" {
		u--
	}
	if u < 0 {
		return nil
	}
	d := parseDirectives(c.msgs[u].Content)
	if d.rounds < 2 || len(d.calls) == 0 || d.badLine != "" {
		return nil
	}
	made := 0
	for _, m := range c.msgs[u+1:] {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			made++
		}
	}
	if made >= d.rounds {
		return nil
	}
	offered := map[string]bool{}
	for _, t := range c.tools {
		offered[t.Name] = true
	}
	var calls []store.ToolCall
	for i, dc := range d.calls {
		if !offered[dc.name] {
			return nil
		}
		calls = append(calls, store.ToolCall{
			ID:       c.idPrefix + shortHash(seed+strconv.Itoa(i), 24),
			Type:     "function",
			Function: store.ToolFunction{Name: dc.name, Arguments: dc.args},
		})
	}
	return calls
}

// answer is the plain reply to text: short, derived from the text alone.
func answer(text string) string {
	quoted := clip(text, 80)
	if quoted == "" {
		quoted = "(nothing)"
	}
	return fmt.Sprintf("Answer %s: you said %q.", shortHash(text, 8), quoted)
}

// answerToolResults mentions each trailing tool result by tool name.
func answerToolResults(msgs []provider.Message) string {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == "tool" {
		start--
	}
	names := map[string]string{}
	if start > 0 {
		for _, tc := range msgs[start-1].ToolCalls {
			names[tc.ID] = tc.Function.Name
		}
	}
	parts := make([]string, 0, len(msgs)-start)
	for _, m := range msgs[start:] {
		name := names[m.ToolCallID]
		if name == "" {
			name = m.ToolName
		}
		if name == "" {
			name = m.ToolCallID
		}
		parts = append(parts, fmt.Sprintf("%s returned %q", name, clip(firstLine(m.Content), 80)))
	}
	return "Tool results: " + strings.Join(parts, "; ") + "."
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// clip shortens s to at most n runes, on a rune boundary.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

// splitText cuts text into stream pieces, one word (with its trailing space) each.
func splitText(text string) []string {
	if text == "" {
		return nil
	}
	return strings.SplitAfter(text, " ")
}

func emptyMessagesText(wire string) string {
	if wire == "anthropic" {
		return "messages: at least one message is required"
	}
	return "[] is too short - 'messages'"
}

// validatePairs refuses what both providers refuse: a tool result that answers no call of the
// message before it, and a tool call left without a result. The wording is each provider's.
func validatePairs(c call) string {
	var pending []string // unanswered call ids of the last assistant message
	pendingAt := 0
	idx := func(i int) int {
		if c.msgIndex != nil {
			return c.msgIndex[i]
		}
		return i
	}
	missing := func() string {
		if c.wire == "anthropic" {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
				idx(pendingAt), strings.Join(pending, ", "))
		}
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(pending, ", ")
	}
	answered := map[string]bool{}
	for i, m := range c.msgs {
		if m.Role == "tool" {
			ok := false
			for _, id := range pending {
				ok = ok || id == m.ToolCallID
			}
			if !ok || answered[m.ToolCallID] {
				if c.wire == "anthropic" {
					return fmt.Sprintf("messages.%d.content.0: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
						idx(i), m.ToolCallID)
				}
				return fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages.[%d].role)", i)
			}
			answered[m.ToolCallID] = true
			continue
		}
		var left []string
		for _, id := range pending {
			if !answered[id] {
				left = append(left, id)
			}
		}
		if len(left) > 0 {
			pending = left
			return missing()
		}
		pending, answered, pendingAt = nil, map[string]bool{}, i
		for _, tc := range m.ToolCalls {
			pending = append(pending, tc.ID)
		}
	}
	var left []string
	for _, id := range pending {
		if !answered[id] {
			left = append(left, id)
		}
	}
	if len(left) > 0 {
		pending = left
		return missing()
	}
	return ""
}
