package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spoolhq/spool/store"
)

// Message is one message exactly as it goes on the wire. Content is the final text (the wire
// layer has already substituted api_content); private fields never reach this type.
type Message struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	ToolCalls  []store.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	ToolName   string           `json:"name,omitempty"`
	// Reasoning and ReasoningDetails are replayed to providers that need them.
	Reasoning        string          `json:"reasoning,omitempty"`
	ReasoningDetails json.RawMessage `json:"reasoning_details,omitempty"`
}

// Tool is a function the model may call; Parameters is a JSON schema object.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model call. System is the frozen system prompt; Messages never contain a
// system message.
type Request struct {
	Model       string
	System      string
	Messages    []Message
	Tools       []Tool
	MaxTokens   int     // 0: provider default
	Temperature float64 // negative: provider default
	// CompactThreshold, when positive, asks a provider that compacts on its own side while
	// answering (the Responses API's context_management) to do so once the rendered prompt
	// crosses this many tokens; the compaction item comes back in Response.ReasoningDetails and
	// Response.Compacted is set. Others ignore it.
	CompactThreshold int
}

// Usage is what one call consumed, as the provider reported it. InputTokens counts every prompt
// token, cached ones included (Anthropic's three input counters are summed into it).
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// CacheWrite1h is the part of CacheWriteTokens written with a one-hour lifetime, which
	// Anthropic charges at twice the input price (five-minute writes: 1.25x).
	CacheWrite1h    int64 `json:"cache_write_1h_tokens,omitempty"`
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// Response is a finished model call.
type Response struct {
	Model            string
	Content          string
	Reasoning        string
	ReasoningDetails json.RawMessage
	ToolCalls        []store.ToolCall
	FinishReason     string // "stop", "tool_calls", "length", "content_filter"
	Usage            Usage
	// Compacted is set when the provider compacted the conversation while answering (a
	// compaction item is among ReasoningDetails): the messages before this answer are carried
	// by it from now on.
	Compacted bool
}

// Delta is a piece of a streamed response.
type Delta struct {
	Content   string
	Reasoning string
}

// Client is one configured model endpoint. A Go program may bring its own (any model API);
// the agent relies on this contract:
//
//   - Response.Usage.InputTokens is the real number of prompt tokens the model read for this
//     request (cached ones included), as the model's API reports it, or 0 when the client
//     cannot know it: spool then estimates the prompt itself. Never report a smaller number
//     than the real one (for example only the new message's tokens): the agent calibrates its
//     estimates on this count to decide when to compact, and an under-reported count lets the
//     requests grow past the model's window before compaction starts.
//   - OutputTokens, CacheReadTokens and CacheWriteTokens are the provider's own counts (0 when
//     unknown); they feed the usage and cache figures only.
//   - A failure is returned as an error; wrapping a *Error with its Class (ClassifyHTTP,
//     ClassifyTransport) lets the agent retry, fall back or give up as it does for the
//     built-in adapters. Any other error is treated as not retryable.
//   - Chat honours ctx: it returns soon after ctx is done.
type Client interface {
	// Chat sends req and returns the whole response. When onDelta is non-nil the call streams
	// and onDelta receives text as it arrives; the returned Response is the same either way.
	Chat(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
	// Name identifies the provider ("openai", "anthropic", "fake").
	Name() string
}

// Compacted is a conversation compacted on the provider's side (the Responses API's POST
// /responses/compact): Items is the JSON array of output items, in compact form, that replaces
// the compacted input on later requests (retained messages and an opaque compaction item with
// its encrypted content); it is stored and sent back byte for byte.
type Compacted struct {
	Model string
	Items json.RawMessage
	Usage Usage
}

// Compactor is a Client whose provider compacts conversations itself. A client that is not one
// (or fails) leaves compaction to spool's own compressor.
type Compactor interface {
	// CanCompact reports whether the client's configured API compacts (the Responses API).
	CanCompact() bool
	// Compact sends req's system prompt and messages to be compacted (no tools, no output).
	Compact(ctx context.Context, req Request) (Compacted, error)
}

// CompactedWindowType marks ReasoningDetails that hold a provider compaction's window, as the
// summary row of that compaction keeps it: {"type":"compacted_window","items":[…]}, the items
// being Compacted.Items as the provider sent them (compact form). The adapter that made it
// replays the items byte for byte before the row's text; other adapters send the text only.
const CompactedWindowType = "compacted_window"

// CompactedWindow wraps Compacted.Items for a summary row's ReasoningDetails.
func CompactedWindow(items json.RawMessage) (json.RawMessage, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(items, &raws); err != nil {
		return nil, fmt.Errorf("compacted items: %w", err)
	}
	return json.Marshal(struct {
		Type  string            `json:"type"`
		Items []json.RawMessage `json:"items"`
	}{CompactedWindowType, raws})
}
