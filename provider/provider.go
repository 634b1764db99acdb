package provider

import (
	"context"
	"encoding/json"

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
}

// Delta is a piece of a streamed response.
type Delta struct {
	Content   string
	Reasoning string
}

// Client is one configured model endpoint.
type Client interface {
	// Chat sends req and returns the whole response. When onDelta is non-nil the call streams
	// and onDelta receives text as it arrives; the returned Response is the same either way.
	Chat(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
	// Name identifies the provider ("openai", "anthropic", "fake").
	Name() string
}
