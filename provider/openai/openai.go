package openai

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

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// DefaultBaseURL is OpenAI's own endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// Max-tokens field names: OpenAI's reasoning models refuse max_tokens, while several
// compatible servers only know max_tokens.
const (
	MaxCompletionTokens = "max_completion_tokens"
	MaxTokens           = "max_tokens"
)

// Config configures one endpoint.
type Config struct {
	BaseURL string // e.g. "http://127.0.0.1:11434/v1"; empty means DefaultBaseURL
	APIKey  string // empty sends no Authorization header (local servers)
	// Name is what Name() and errors report ("openai", "openrouter", "ollama"); empty is "openai".
	Name       string
	HTTPClient *http.Client      // nil: the SDK's client (10 min response-header timeout)
	Headers    map[string]string // extra headers, e.g. OpenRouter's HTTP-Referer
	// MaxTokensField picks MaxCompletionTokens or MaxTokens. Empty: max_completion_tokens on
	// api.openai.com, max_tokens elsewhere.
	MaxTokensField string
	// API picks the wire API: APIChat (Chat Completions, the default when empty) or
	// APIResponses (POST /responses, stateless, with reasoning items replayed).
	API string
}

// Client is an OpenAI Chat Completions endpoint. It is safe for concurrent use.
type Client struct {
	sdk            sdk.Client
	name           string
	maxTokensField string
	api            string
}

var _ provider.Client = (*Client)(nil)

// New checks cfg and returns a Client. The SDK's own retries are off: wrap the client in
// provider.WithRetry for retries that respect streamed output.
func New(cfg Config) (*Client, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL", base)
	}
	field := cfg.MaxTokensField
	switch field {
	case "":
		field = MaxTokens
		if u.Host == "api.openai.com" {
			field = MaxCompletionTokens
		}
	case MaxTokens, MaxCompletionTokens:
	default:
		return nil, fmt.Errorf("openai: MaxTokensField %q is neither %q nor %q", field, MaxCompletionTokens, MaxTokens)
	}
	api := cfg.API
	switch api {
	case "":
		api = APIChat
	case APIChat, APIResponses:
	default:
		return nil, fmt.Errorf("openai: API %q is neither %q nor %q", api, APIChat, APIResponses)
	}
	name := cfg.Name
	if name == "" {
		name = "openai"
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey), // also overrides OPENAI_API_KEY from the environment
		option.WithMaxRetries(0),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	return &Client{sdk: sdk.NewClient(opts...), name: name, maxTokensField: field, api: api}, nil
}

// Name implements provider.Client.
func (c *Client) Name() string { return c.name }

// Chat implements provider.Client. On a stream cut short the error is provider.ClassNetwork and
// the Response holds what had arrived.
func (c *Client) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	if c.api == APIResponses {
		return c.chatResponses(ctx, req, onDelta)
	}
	params, err := c.params(req)
	if err != nil {
		return provider.Response{}, &provider.Error{Class: provider.ClassBadRequest, Provider: c.name, Message: err.Error()}
	}
	stream := onDelta != nil
	opts := []option.RequestOption{}
	if stream {
		params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
		opts = append(opts, option.WithJSONSet("stream", true), option.WithHeader("Accept", "text/event-stream"))
	}
	// The SDK drops a final SSE event that lacks a blank line and reads error messages only from
	// an "error" key, so it only builds and sends the request; the raw response is read here.
	var raw *http.Response
	opts = append(opts, option.WithResponseBodyInto(&raw))
	_, err = c.sdk.Chat.Completions.New(ctx, params, opts...)
	if raw != nil && raw.StatusCode >= 400 {
		body, _ := io.ReadAll(raw.Body)
		raw.Body.Close()
		return provider.Response{}, provider.ClassifyHTTP(c.name, raw.StatusCode, raw.Header, body)
	}
	if err != nil {
		return provider.Response{}, provider.ClassifyTransport(c.name, err)
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

// ctxErr prefers the context's own error, so a deadline that broke a read reads as a timeout.
func ctxErr(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return fmt.Errorf("%w (%v)", ce, err)
	}
	return err
}

func (c *Client) params(req provider.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	if req.Model == "" {
		return p, errors.New("request has no model")
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msg, err := message(m)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, msg)
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		schema, err := schemaParams(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		fn.Parameters = schema
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	if req.MaxTokens > 0 {
		if c.maxTokensField == MaxCompletionTokens {
			p.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if req.Temperature >= 0 {
		p.Temperature = param.NewOpt(req.Temperature)
	}
	return p, nil
}

func message(m provider.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case store.RoleUser:
		return sdk.UserMessage(m.Content), nil
	case store.RoleTool:
		if m.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, errors.New("tool message has no tool_call_id")
		}
		return sdk.ToolMessage(m.Content, m.ToolCallID), nil
	case store.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name: tc.Function.Name, Arguments: tc.Function.Arguments,
					},
				},
			})
		}
		if isOpenRouterReasoning(m.ReasoningDetails) {
			a.SetExtraFields(map[string]any{"reasoning_details": json.RawMessage(m.ReasoningDetails)})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("role %q cannot be sent (system goes in Request.System)", m.Role)
}

// isOpenRouterReasoning reports whether details are OpenRouter reasoning_details (items typed
// "reasoning.*"), the only kind this wire format replays; other providers' blocks stay home.
func isOpenRouterReasoning(details json.RawMessage) bool {
	if len(details) == 0 {
		return false
	}
	var items []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(details, &items) != nil || len(items) == 0 {
		return false
	}
	for _, it := range items {
		if !strings.HasPrefix(it.Type, "reasoning.") {
			return false
		}
	}
	return true
}

// schemaParams keeps each top-level schema member's bytes as given; only the top-level key
// order is normalized (sorted), which keeps the request byte-stable.
func schemaParams(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	out := make(shared.FunctionParameters, len(members))
	for k, v := range members {
		out[k] = v
	}
	return out, nil
}

// decode reads a non-streamed completion.
func (c *Client) decode(body []byte) (provider.Response, error) {
	if status, errBody, ok := inlineError(body); ok {
		return provider.Response{}, provider.ClassifyHTTP(c.name, status, nil, errBody)
	}
	var cc sdk.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		return provider.Response{}, &provider.Error{Class: provider.ClassServer, Provider: c.name,
			Message: "malformed completion: " + err.Error(), Err: err}
	}
	if len(cc.Choices) == 0 {
		return provider.Response{}, &provider.Error{Class: provider.ClassServer, Provider: c.name,
			Message: "completion has no choices"}
	}
	ch := cc.Choices[0]
	resp := provider.Response{
		Model:        cc.Model,
		Content:      ch.Message.Content,
		FinishReason: ch.FinishReason,
		Usage:        usage(cc.Usage),
	}
	resp.Reasoning = reasoningText(ch.Message.JSON.ExtraFields)
	if raw := extraRaw(ch.Message.JSON.ExtraFields, "reasoning_details"); raw != "" {
		resp.ReasoningDetails = json.RawMessage(raw)
	}
	for _, tc := range ch.Message.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, store.ToolCall{
			ID: tc.ID, Type: "function",
			Function: store.ToolFunction{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
		})
	}
	resp.FinishReason = finishReason(resp.FinishReason, len(resp.ToolCalls) > 0)
	return resp, nil
}

// inlineError finds an {"error": ...} object sent with status 200 or inside a stream (OpenRouter
// and several proxies do this). A numeric error.code is taken as the HTTP status.
func inlineError(body []byte) (int, []byte, bool) {
	if !bytes.Contains(body, []byte(`"error"`)) {
		return 0, nil, false
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Error) == 0 || string(env.Error) == "null" {
		return 0, nil, false
	}
	var code struct {
		Code int `json:"code"`
	}
	_ = json.Unmarshal(env.Error, &code)
	return code.Code, body, true
}

// extraRaw returns the raw JSON of a field the SDK does not model; the SDK marks such fields
// not Valid, so presence is judged by the raw text. JSON null counts as absent.
func extraRaw(extra map[string]respjson.Field, key string) string {
	f, ok := extra[key]
	if !ok || f.Raw() == respjson.Null {
		return ""
	}
	return f.Raw()
}

// reasoningText reads the reasoning field of compatible servers: reasoning_content (DeepSeek,
// vLLM, llama.cpp) or reasoning (Ollama, OpenRouter).
func reasoningText(extra map[string]respjson.Field) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if raw := extraRaw(extra, key); raw != "" {
			var s string
			if json.Unmarshal([]byte(raw), &s) == nil && s != "" {
				return s
			}
		}
	}
	return ""
}

func usage(u sdk.CompletionUsage) provider.Usage {
	out := provider.Usage{
		InputTokens:      u.PromptTokens,
		OutputTokens:     u.CompletionTokens,
		CacheReadTokens:  u.PromptTokensDetails.CachedTokens,
		CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
		ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
	}
	if out.CacheReadTokens == 0 {
		// DeepSeek reports its prefix cache as prompt_cache_hit_tokens.
		if raw := extraRaw(u.JSON.ExtraFields, "prompt_cache_hit_tokens"); raw != "" {
			var n int64
			if json.Unmarshal([]byte(raw), &n) == nil {
				out.CacheReadTokens = n
			}
		}
	}
	return out
}

// finishReason maps the wire value onto provider.Response's vocabulary.
func finishReason(fr string, hasToolCalls bool) string {
	switch fr {
	case "function_call":
		return "tool_calls"
	case "":
		if hasToolCalls {
			return "tool_calls"
		}
		return "stop"
	}
	return fr
}
