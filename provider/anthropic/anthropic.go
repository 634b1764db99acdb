package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// DefaultBaseURL is Anthropic's endpoint; the client appends "v1/messages".
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is sent when a Request leaves MaxTokens at 0: the Messages API requires it.
const DefaultMaxTokens = 8192

// cachedTail is how many trailing messages get a cache breakpoint; with the system prompt's
// that is four, Anthropic's maximum.
const cachedTail = 3

// Config configures one endpoint.
type Config struct {
	BaseURL    string // empty means DefaultBaseURL (no /v1 suffix)
	APIKey     string // sent as x-api-key
	Name       string // what Name() and errors report; empty is "anthropic"
	HTTPClient *http.Client
	Headers    map[string]string // extra headers, e.g. anthropic-beta
	// MaxTokens replaces DefaultMaxTokens for requests that set none.
	MaxTokens int
	// CacheTTL is the lifetime asked for every cache breakpoint: 0 or 5 minutes (the API's
	// default), or one hour, which costs twice the input price to write instead of 1.25x but
	// survives the pauses of a long working session.
	CacheTTL time.Duration
}

// Client is an Anthropic Messages endpoint. It is safe for concurrent use.
type Client struct {
	sdk       sdk.Client
	name      string
	maxTokens int
	cache     sdk.CacheControlEphemeralParam
}

var _ provider.Client = (*Client)(nil)

// New checks cfg and returns a Client. Credentials come from cfg only, never from the
// environment or SDK profile files, and the SDK's own retries are off (see provider.WithRetry).
func New(cfg Config) (*Client, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL", base)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: MaxTokens %d is negative", cfg.MaxTokens)
	}
	name := cfg.Name
	if name == "" {
		name = "anthropic"
	}
	maxTokens := cfg.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	cache := sdk.NewCacheControlEphemeralParam()
	switch cfg.CacheTTL {
	case 0, 5 * time.Minute:
	case time.Hour:
		cache.TTL = sdk.CacheControlEphemeralTTLTTL1h
	default:
		return nil, fmt.Errorf("anthropic: cache TTL %s is not offered (5m or 1h)", cfg.CacheTTL)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	return &Client{sdk: sdk.NewClient(opts...), name: name, maxTokens: maxTokens, cache: cache}, nil
}

// Name implements provider.Client.
func (c *Client) Name() string { return c.name }

// Chat implements provider.Client. On a stream cut short the error is provider.ClassNetwork and
// the Response holds what had arrived.
func (c *Client) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	params, err := c.params(req)
	if err != nil {
		return provider.Response{}, &provider.Error{Class: provider.ClassBadRequest, Provider: c.name, Message: err.Error()}
	}
	stream := onDelta != nil
	// The SDK only builds and sends the request; the raw response is read here (its SSE decoder
	// drops a final event that lacks a blank line and cannot tell a cut stream from an end).
	var raw *http.Response
	opts := []option.RequestOption{option.WithResponseBodyInto(&raw)}
	if stream {
		opts = append(opts, option.WithJSONSet("stream", true), option.WithHeader("Accept", "text/event-stream"))
	} else {
		// The SDK refuses large non-streamed max_tokens unless a timeout is given; ctx governs.
		opts = append(opts, option.WithRequestTimeout(time.Hour))
	}
	_, err = c.sdk.Messages.New(ctx, params, opts...)
	if raw != nil && raw.StatusCode >= 400 {
		body, _ := io.ReadAll(raw.Body)
		raw.Body.Close()
		return provider.Response{}, provider.ClassifyHTTP(c.name, raw.StatusCode, raw.Header, body)
	}
	if err != nil {
		return provider.Response{}, provider.ClassifyTransport(c.name, ctxErr(ctx, err))
	}
	defer raw.Body.Close()
	if stream {
		return c.readStream(ctx, raw.Body, onDelta)
	}
	body, err := io.ReadAll(raw.Body)
	if err != nil {
		return provider.Response{}, provider.ClassifyTransport(c.name, ctxErr(ctx, err))
	}
	return c.decode(body)
}

func ctxErr(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil && !errors.Is(err, ce) {
		return fmt.Errorf("%w (%v)", ce, err)
	}
	return err
}

func (c *Client) params(req provider.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(req.Model), MaxTokens: int64(c.maxTokens)}
	if req.Model == "" {
		return p, errors.New("request has no model")
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.Temperature >= 0 {
		p.Temperature = param.NewOpt(req.Temperature)
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: c.cache}}
	}
	msgs, err := messages(req.Messages, c.cache)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		tool := sdk.ToolParam{Name: t.Name}
		if t.Description != "" {
			tool.Description = param.NewOpt(t.Description)
		}
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		tool.InputSchema = schema
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	return p, nil
}

// inputSchema sends the tool's JSON schema as given (compacted), not re-encoded through the
// SDK's struct, so its bytes stay what the tool registry wrote.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return sdk.ToolInputSchemaParam{}, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return sdk.ToolInputSchemaParam{}, err
	}
	return param.Override[sdk.ToolInputSchemaParam](json.RawMessage(buf.Bytes())), nil
}

// messages maps the neutral history onto Anthropic turns: tool results (and any user text right
// after them) join one user message, assistant tool calls become tool_use blocks after any
// replayed thinking, and the last cachedTail messages carry the cache breakpoint cc.
func messages(in []provider.Message, cc sdk.CacheControlEphemeralParam) ([]sdk.MessageParam, error) {
	var out []sdk.MessageParam
	appendUser := func(blocks ...sdk.ContentBlockParamUnion) {
		if n := len(out); n > 0 && out[n-1].Role == sdk.MessageParamRoleUser {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, sdk.MessageParam{Role: sdk.MessageParamRoleUser, Content: blocks})
	}
	for i, m := range in {
		switch m.Role {
		case store.RoleUser:
			if m.Content == "" {
				return nil, fmt.Errorf("message %d: user message is empty", i)
			}
			appendUser(sdk.NewTextBlock(m.Content))
		case store.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool message has no tool_call_id", i)
			}
			tr := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
			}
			appendUser(sdk.ContentBlockParamUnion{OfToolResult: &tr})
		case store.RoleAssistant:
			blocks, err := assistantBlocks(m)
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			if len(blocks) == 0 {
				return nil, fmt.Errorf("message %d: assistant message has no content, tool calls or thinking", i)
			}
			out = append(out, sdk.MessageParam{Role: sdk.MessageParamRoleAssistant, Content: blocks})
		default:
			return nil, fmt.Errorf("message %d: role %q cannot be sent (system goes in Request.System)", i, m.Role)
		}
	}
	marked := 0
	for i := len(out) - 1; i >= 0 && marked < cachedTail; i-- {
		if markLastBlock(out[i].Content, cc) {
			marked++
		}
	}
	return out, nil
}

// markLastBlock sets the breakpoint cc on the last block that may carry one (thinking blocks
// may not).
func markLastBlock(blocks []sdk.ContentBlockParamUnion, cc sdk.CacheControlEphemeralParam) bool {
	for j := len(blocks) - 1; j >= 0; j-- {
		b := blocks[j]
		switch {
		case b.OfText != nil:
			b.OfText.CacheControl = cc
		case b.OfToolUse != nil:
			b.OfToolUse.CacheControl = cc
		case b.OfToolResult != nil:
			b.OfToolResult.CacheControl = cc
		default:
			continue
		}
		return true
	}
	return false
}

// thinkingBlock is one replayable reasoning block as kept in Response.ReasoningDetails; field
// order is fixed so stored details re-encode to the same bytes.
type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

func assistantBlocks(m provider.Message) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	if len(m.ReasoningDetails) > 0 {
		var items []thinkingBlock
		// Details from other providers (another shape, or OpenRouter's "reasoning.*" items) are
		// not Anthropic's to replay and are left out.
		if json.Unmarshal(m.ReasoningDetails, &items) == nil {
			for _, it := range items {
				switch it.Type {
				case "thinking":
					blocks = append(blocks, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: it.Thinking, Signature: it.Signature}})
				case "redacted_thinking":
					blocks = append(blocks, sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: it.Data}})
				}
			}
		}
	}
	if m.Content != "" {
		blocks = append(blocks, sdk.NewTextBlock(m.Content))
	}
	for _, tc := range m.ToolCalls {
		input := json.RawMessage(`{}`)
		if args := strings.TrimSpace(tc.Function.Arguments); args != "" {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(args), &obj); err != nil {
				return nil, fmt.Errorf("tool call %s: arguments are not a JSON object: %w", tc.ID, err)
			}
			input = json.RawMessage(args)
		}
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: tc.ID, Name: tc.Function.Name, Input: input}})
	}
	return blocks, nil
}

// decode reads a non-streamed Message.
func (c *Client) decode(body []byte) (provider.Response, error) {
	var env struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(body, &env) == nil && env.Type == "error" {
		return provider.Response{}, provider.ClassifyHTTP(c.name, 0, nil, body)
	}
	var msg sdk.Message
	if err := json.Unmarshal(body, &msg); err != nil {
		return provider.Response{}, &provider.Error{Class: provider.ClassServer, Provider: c.name,
			Message: "malformed message: " + err.Error(), Err: err}
	}
	var a assembly
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			a.text.WriteString(b.Text)
		case "thinking":
			a.reasoning.WriteString(b.Thinking)
			a.details = append(a.details, thinkingBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			a.details = append(a.details, thinkingBlock{Type: "redacted_thinking", Data: b.Data})
		case "tool_use":
			a.calls = append(a.calls, toolCall(b.ID, b.Name, string(b.Input)))
		}
	}
	a.resp.Model = msg.Model
	a.resp.FinishReason = string(msg.StopReason)
	a.resp.Usage = usage(msg.Usage)
	return a.response(), nil
}

// usage maps Anthropic's counters: its input_tokens excludes the cached part, provider.Usage's
// InputTokens includes it.
func usage(u sdk.Usage) provider.Usage {
	return provider.Usage{
		InputTokens:      u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
		CacheWrite1h:     u.CacheCreation.Ephemeral1hInputTokens,
		ReasoningTokens:  u.OutputTokensDetails.ThinkingTokens,
	}
}

// assembly collects a response from blocks, streamed or not.
type assembly struct {
	resp            provider.Response
	text, reasoning strings.Builder
	details         []thinkingBlock
	calls           []store.ToolCall
}

func (a *assembly) response() provider.Response {
	r := a.resp
	r.Content = a.text.String()
	r.Reasoning = a.reasoning.String()
	r.ToolCalls = a.calls
	if len(a.details) > 0 {
		r.ReasoningDetails, _ = json.Marshal(a.details)
	}
	r.FinishReason = finishReason(r.FinishReason)
	return r
}

// toolCall normalizes tool_use input to compact JSON text; a tool without arguments gets "{}".
func toolCall(id, name, input string) store.ToolCall {
	args := strings.TrimSpace(input)
	var buf bytes.Buffer
	switch {
	case args == "":
		args = "{}"
	case json.Compact(&buf, []byte(args)) == nil:
		args = buf.String()
	}
	return store.ToolCall{ID: id, Type: "function", Function: store.ToolFunction{Name: name, Arguments: args}}
}

// finishReason maps stop_reason onto provider.Response's vocabulary.
func finishReason(sr string) string {
	switch sr {
	case "end_turn", "stop_sequence", "pause_turn", "":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return sr
}
