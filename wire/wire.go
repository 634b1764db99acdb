package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// Memory fence around recalled context in a user message.
const (
	MemoryOpen  = "<memory-context>"
	MemoryClose = "</memory-context>"
	// MemoryNote tells the model what the fenced block is.
	MemoryNote = "[System note: The following is recalled memory context, NOT new user input. " +
		"Treat it as authoritative reference data for this turn.]"
)

// TurnContext is what one turn adds to its user message on the wire and nowhere else.
type TurnContext struct {
	// Recall is raw recalled memory; blank means none.
	Recall string
	// Plugin holds plugin-provided user context, in order; blank entries are skipped.
	Plugin []string
}

// Empty reports whether the turn adds nothing.
func (t TurnContext) Empty() bool { return len(t.injections()) == 0 }

func (t TurnContext) injections() []string {
	var out []string
	if strings.TrimSpace(t.Recall) != "" {
		out = append(out, FenceMemory(t.Recall))
	}
	for _, p := range t.Plugin {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// FenceMemory wraps recalled text in the memory fence.
func FenceMemory(recall string) string {
	return MemoryOpen + "\n" + MemoryNote + "\n\n" + strings.TrimSpace(recall) + "\n" + MemoryClose
}

// Compose returns the wire text of a user message: content, then each injection (the fenced
// memory block first, then plugin context) after a blank line. With no injections it is content.
func Compose(content string, turn TurnContext) string {
	inj := turn.injections()
	if len(inj) == 0 {
		return content
	}
	return content + "\n\n" + strings.Join(inj, "\n\n")
}

// Sidecar is the api_content to persist for a message whose wire text is wireText: empty when
// the wire text is the content itself.
func Sidecar(content, wireText string) string {
	if wireText == content {
		return ""
	}
	return wireText
}

// StripMemoryContext removes fenced memory blocks (and the blank line before each) from text,
// for showing or searching what the user actually wrote. An unclosed fence is left alone.
func StripMemoryContext(text string) string {
	for {
		i := strings.Index(text, MemoryOpen)
		if i < 0 {
			return text
		}
		j := strings.Index(text[i:], MemoryClose)
		if j < 0 {
			return text
		}
		head := strings.TrimRight(text[:i], "\n")
		text = head + text[i+j+len(MemoryClose):]
	}
}

// Rewrite returns a copy of m with new content. A changed content drops the sidecar, because the
// old wire text no longer says the same thing; the same content keeps it.
func Rewrite(m store.Message, content string) store.Message {
	if content == m.Content {
		return m
	}
	m.Content = content
	m.APIContent = ""
	return m
}

// Result is a built request body.
type Result struct {
	Messages []provider.Message
	// Current is the index in history of the user message the turn context belongs to (the last
	// user message), or -1 when the history has none.
	Current int
	// APIContent is the sidecar to persist on history[Current] when Injected; empty when the wire
	// text equals the content.
	APIContent string
	// Injected reports that this build composed the current user message's wire text. It is
	// false when there was nothing to inject or the message already carried a sidecar, which is
	// then replayed as is (a later call in the same turn, or a resume).
	Injected bool
}

// Build converts the active history into wire messages. The turn context goes into the last user
// message unless that message already has a sidecar; pass an empty TurnContext when the turn has
// no new user message, or an earlier, already sent message would change. It fails on a message a
// provider would reject (a system row, an unknown role, a tool result without its call id); the
// history itself is never modified.
func Build(history []store.Message, turn TurnContext) (Result, error) {
	res := Result{Messages: make([]provider.Message, 0, len(history)), Current: -1}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == store.RoleUser {
			res.Current = i
			break
		}
	}
	for i := range history {
		m := &history[i]
		wm, err := toWire(m)
		if err != nil {
			return Result{}, fmt.Errorf("wire message %d (id %d): %w", i, m.ID, err)
		}
		if i == res.Current && m.APIContent == "" && !turn.Empty() {
			wm.Content = Compose(m.Content, turn)
			res.APIContent = Sidecar(m.Content, wm.Content)
			res.Injected = true
		}
		res.Messages = append(res.Messages, wm)
	}
	return res, nil
}

func toWire(m *store.Message) (provider.Message, error) {
	wm := provider.Message{Role: m.Role, Content: m.Content}
	switch m.Role {
	case store.RoleUser:
		if m.Summary {
			// A provider compaction's window rides on its summary row (replayed by the
			// adapter that made it; the others send the text).
			wm.ReasoningDetails = replayable(m.ReasoningDetails)
		}
	case store.RoleAssistant:
		wm.ToolCalls = slices.Clone(m.ToolCalls)
		wm.Reasoning = m.Reasoning
		wm.ReasoningDetails = replayable(m.ReasoningDetails)
	case store.RoleTool:
		if m.ToolCallID == "" {
			return provider.Message{}, fmt.Errorf("tool result without tool_call_id")
		}
		wm.ToolCallID = m.ToolCallID
		wm.ToolName = m.ToolName
	case store.RoleSystem:
		return provider.Message{}, fmt.Errorf("system message in history: the system prompt travels in Request.System")
	default:
		return provider.Message{}, fmt.Errorf("unknown role %q", m.Role)
	}
	if m.APIContent != "" && (m.Role == store.RoleUser || m.Role == store.RoleAssistant) {
		wm.Content = m.APIContent
	}
	return wm, nil
}

// replayable copies reasoning details for the wire. A JSON null is the same as none: backends
// differ in how they read back an absent value, and a resume must not add a key.
func replayable(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	return slices.Clone(raw)
}
