package hermes

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/store"
)

func validRole(r string) bool {
	switch r {
	case store.RoleSystem, store.RoleUser, store.RoleAssistant, store.RoleTool:
		return true
	}
	return false
}

// clip shortens untrusted text quoted in a report.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "..."
	}
	return s
}

// parseToolCalls reads a stored tool_calls value: a JSON list of OpenAI-shaped calls (possibly
// encoded twice, as a JSON string), whose arguments are a string or an object. Empty is no calls;
// ok is false when the value is not such a list.
func parseToolCalls(raw string) (calls []store.ToolCall, ok bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "null" || raw == "[]" {
		return nil, true
	}
	var inner string
	if json.Unmarshal([]byte(raw), &inner) == nil {
		return parseToolCalls(inner)
	}
	var list []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, false
	}
	for _, c := range list {
		args := strings.TrimSpace(string(c.Function.Arguments))
		var s string
		switch {
		case args == "" || args == "null":
			args = ""
		case json.Unmarshal(c.Function.Arguments, &s) == nil:
			args = s
		}
		calls = append(calls, store.ToolCall{ID: c.ID, Type: c.Type, Function: store.ToolFunction{Name: c.Function.Name, Arguments: args}})
	}
	return calls, true
}

// details keeps reasoning_details as JSON: a JSON value as is, other text as a JSON string.
func details(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" || t == "null" {
		return nil
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}

// convert turns a Hermes row into a store message; notes name what could not be carried.
func convert(sessionID string, r rawMessage) (m store.Message, skip *Skip, notes []Skip) {
	where := fmt.Sprintf("%s#%d", sessionID, r.rowID.Int64)
	if !validRole(r.role.String) {
		return m, &Skip{Kind: "message", ID: where, Reason: fmt.Sprintf("role %q is not a message role", clip(r.role.String))}, nil
	}
	m = store.Message{Role: r.role.String, Content: r.content.String, APIContent: r.apiContent.String,
		ToolCallID: r.toolCallID.String, ToolName: r.toolName.String, FinishReason: r.finishReason.String,
		TokenCount: int(r.tokenCount.Int64), Timestamp: r.timestamp, Active: true, Summary: r.summary.Int64 == 1}
	if m.APIContent == m.Content {
		m.APIContent = ""
	}
	if r.active.Valid {
		m.Active = r.active.Int64 == 1
		m.Compacted = !m.Active && r.compacted.Int64 == 1
	}
	m.Reasoning = r.reasoning.String
	if m.Reasoning == "" {
		m.Reasoning = r.reasoningContent.String
	} else if rc := r.reasoningContent.String; rc != "" && rc != m.Reasoning {
		notes = append(notes, Skip{Kind: "field", ID: where, Reason: "reasoning_content differs from reasoning; reasoning kept"})
	}
	m.ReasoningDetails = details(r.reasoningDetails.String)
	calls, ok := parseToolCalls(r.toolCalls.String)
	if !ok {
		notes = append(notes, Skip{Kind: "tool_calls", ID: where, Reason: "tool_calls is not a JSON list of calls; stored without them"})
	}
	m.ToolCalls = calls
	for _, f := range []struct{ name, v string }{{"codex_reasoning_items", r.codexReasoning.String}, {"codex_message_items", r.codexMessages.String}} {
		if v := strings.TrimSpace(f.v); v != "" && v != "null" && v != "[]" {
			notes = append(notes, Skip{Kind: "field", ID: where, Reason: f.name + " has no spool field; not carried"})
		}
	}
	return m, nil, notes
}
