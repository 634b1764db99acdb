package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// ErrToolResult: a turn's client tools clash, or its tool results do not answer the calls the
// session is waiting for.
var ErrToolResult = errors.New("invalid client tools or tool results")

// ToolResultError says which results or calls did not match.
type ToolResultError struct{ Reason string }

func (e *ToolResultError) Error() string { return e.Reason }

// Is makes errors.Is(err, ErrToolResult) true.
func (e *ToolResultError) Is(target error) bool { return target == ErrToolResult }

// UnansweredResult is the recorded result of a tool call that was never answered (a caller sent
// a new message instead, or a crash left it open), so the history stays acceptable to every
// provider and says what happened.
const UnansweredResult = "Tool call not answered: the conversation went on with a new message instead of this call's result."

// ToolResult is a caller's answer to one of its tool calls.
type ToolResult struct {
	CallID  string
	Content string
}

// offered is the tool list of one turn: the agent's own tools the options allow, in the
// registry's order, then the caller's tools in the caller's order.
func (r *run) offered() ([]provider.Tool, error) {
	var own []provider.Tool
	if r.a.tools != nil {
		for _, t := range r.a.tools.Definitions() {
			if !r.opts.RestrictTools || allowedTool(r.opts.AllowTools, t.Name) {
				own = append(own, t)
			}
		}
	}
	if !r.opts.RestrictTools || slices.Contains(r.opts.AllowTools, DelegateTool) {
		own = r.a.withDelegate(own)
	}
	if len(r.opts.ClientTools) == 0 {
		return own, nil
	}
	r.client = make(map[string]bool, len(r.opts.ClientTools))
	for _, t := range r.opts.ClientTools {
		if r.client[t.Name] {
			return nil, &ToolResultError{Reason: fmt.Sprintf("the tool %q is declared twice", t.Name)}
		}
		for _, o := range own {
			if o.Name == t.Name {
				return nil, &ToolResultError{Reason: fmt.Sprintf("the tool %q is one of spool's own tools enabled for this key; rename the client's tool", t.Name)}
			}
		}
		r.client[t.Name] = true
	}
	return append(own, r.opts.ClientTools...), nil
}

// allowedTool reports whether allow names the tool: as is, or by a prefix ending in "*" (an MCP
// server's every tool, mcp__<server>__*).
func allowedTool(allow []string, name string) bool {
	for _, a := range allow {
		if a == name {
			return true
		}
		if p, ok := strings.CutSuffix(a, "*"); ok && p != "" && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// pending are the tool calls of the history's last assistant message that have no result yet.
func pending(history []store.Message) []store.ToolCall {
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		if m.Role == store.RoleTool {
			continue
		}
		if m.Role != store.RoleAssistant || len(m.ToolCalls) == 0 {
			return nil
		}
		answered := map[string]bool{}
		for _, t := range history[i+1:] {
			answered[t.ToolCallID] = true
		}
		var out []store.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

// checkResults says whether results answer every call pending at the end of history, each
// exactly once.
func checkResults(history []store.Message, results []ToolResult) error {
	calls := pending(history)
	byID := make(map[string]bool, len(calls))
	for _, c := range calls {
		byID[c.ID] = true
	}
	seen := map[string]bool{}
	for _, res := range results {
		switch {
		case res.CallID == "":
			return &ToolResultError{Reason: "a tool result names no tool call id"}
		case seen[res.CallID]:
			return &ToolResultError{Reason: fmt.Sprintf("tool call %s is answered twice", res.CallID)}
		case !byID[res.CallID]:
			return &ToolResultError{Reason: fmt.Sprintf("tool call %s is not waiting for a result in this session", res.CallID)}
		}
		seen[res.CallID] = true
	}
	var missing []string
	for _, c := range calls {
		if !seen[c.ID] {
			missing = append(missing, c.ID)
		}
	}
	if len(missing) > 0 {
		return &ToolResultError{Reason: "tool calls without a result: " + strings.Join(missing, ", ")}
	}
	return nil
}

// answer queues the caller's results (checked by checkResults) in call order.
func (r *run) answer(results []ToolResult) {
	byID := make(map[string]string, len(results))
	for _, res := range results {
		byID[res.CallID] = res.Content
	}
	for _, c := range pending(r.history) {
		r.add(store.Message{Role: store.RoleTool, Content: capText(byID[c.ID], MaxToolResult), ToolCallID: c.ID, ToolName: c.Function.Name, Timestamp: r.a.now()})
	}
}

// split separates a response's calls into the agent's own (run now) and the caller's (returned).
func (r *run) split(calls []store.ToolCall) (own, client []store.ToolCall) {
	for _, c := range calls {
		if r.client[c.Function.Name] {
			client = append(client, c)
		} else {
			own = append(own, c)
		}
	}
	return own, client
}
