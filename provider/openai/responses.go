package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/internal/sse"
	"github.com/spoolhq/spool/store"
)

// Wire APIs a Client can speak (Config.API).
const (
	APIChat      = "chat"
	APIResponses = "responses"
)

// chatResponses sends req to POST /responses: stateless (store false), with the reasoning items'
// encrypted content included so they can be replayed on the next request.
func (c *Client) chatResponses(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	params, err := responsesParams(req)
	if err != nil {
		return provider.Response{}, &provider.Error{Class: provider.ClassBadRequest, Provider: c.name, Message: err.Error()}
	}
	stream := onDelta != nil
	var opts []option.RequestOption
	if stream {
		opts = append(opts, option.WithJSONSet("stream", true), option.WithHeader("Accept", "text/event-stream"))
	}
	var raw *http.Response
	opts = append(opts, option.WithResponseBodyInto(&raw))
	_, err = c.sdk.Responses.New(ctx, params, opts...)
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
		return c.readResponsesStream(ctx, raw.Body, onDelta)
	}
	body, err := io.ReadAll(raw.Body)
	if err != nil {
		return provider.Response{}, provider.ClassifyTransport(c.name, ctxErr(ctx, err))
	}
	if status, errBody, ok := inlineError(body); ok {
		return provider.Response{}, provider.ClassifyHTTP(c.name, status, nil, errBody)
	}
	var r wireResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return provider.Response{}, &provider.Error{Class: provider.ClassServer, Provider: c.name,
			Message: "malformed response: " + err.Error(), Err: err}
	}
	return c.finish(r, nil)
}

// responsesParams builds the request body. Equal Requests give byte-identical bodies.
func responsesParams(req provider.Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{
		Model:   shared.ResponsesModel(req.Model),
		Store:   param.NewOpt(false),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	}
	if req.Model == "" {
		return p, errors.New("request has no model")
	}
	if req.System != "" {
		p.Instructions = param.NewOpt(req.System)
	}
	items := responses.ResponseInputParam{}
	for i, m := range req.Messages {
		its, err := inputItems(m)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		items = append(items, its...)
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range req.Tools {
		schema, err := schemaParams(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		fn := responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: param.NewOpt(false)}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &fn})
	}
	if req.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if req.CompactThreshold > 0 {
		p.ContextManagement = []responses.ResponseNewParamsContextManagement{{
			Type: "compaction", CompactThreshold: param.NewOpt(int64(req.CompactThreshold)),
		}}
	}
	if req.Temperature >= 0 {
		p.Temperature = param.NewOpt(req.Temperature)
	}
	return p, nil
}

// outputItem is the part of a Responses output item this adapter reads; Raw keeps its bytes.
type outputItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Args    string `json:"arguments"`
	Role    string `json:"role"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"summary"`
	Raw json.RawMessage `json:"-"`
}

// responsesItems reads ReasoningDetails written by this adapter: a JSON array of output items
// that holds at least one item of type "reasoning". Anything else (OpenRouter's
// reasoning_details, Anthropic's blocks) yields nil and is not replayed here.
func responsesItems(details json.RawMessage) []outputItem {
	if len(details) == 0 {
		return nil
	}
	var raws []json.RawMessage
	if json.Unmarshal(details, &raws) != nil {
		return nil
	}
	out := make([]outputItem, 0, len(raws))
	hasReasoning := false
	for _, r := range raws {
		var it outputItem
		if json.Unmarshal(r, &it) != nil {
			return nil
		}
		switch it.Type {
		case "reasoning", "compaction":
			hasReasoning = true
		case "message", "function_call":
		default:
			return nil
		}
		it.Raw = r
		out = append(out, it)
	}
	if !hasReasoning {
		return nil
	}
	return out
}

type compactedWindow struct {
	Type  string            `json:"type"`
	Items []json.RawMessage `json:"items"`
}

// compactedItems reads a summary row's compacted window (CompactedWindow); nil for anything else.
func compactedItems(details json.RawMessage) []outputItem {
	t := bytes.TrimSpace(details)
	if len(t) == 0 || t[0] != '{' {
		return nil
	}
	var w compactedWindow
	if json.Unmarshal(t, &w) != nil || w.Type != provider.CompactedWindowType || len(w.Items) == 0 {
		return nil
	}
	out := make([]outputItem, 0, len(w.Items))
	for _, r := range w.Items {
		var it outputItem
		if json.Unmarshal(r, &it) != nil || it.Type == "" {
			return nil
		}
		it.Raw = r
		out = append(out, it)
	}
	return out
}

// rawItem is an input item sent as its stored bytes, unchanged.
func rawItem(it outputItem) responses.ResponseInputItemUnionParam {
	switch it.Type {
	case "reasoning":
		return responses.ResponseInputItemUnionParam{OfReasoning: ptr(param.Override[responses.ResponseReasoningItemParam](it.Raw))}
	case "message":
		return responses.ResponseInputItemUnionParam{OfInputMessage: ptr(param.Override[responses.ResponseInputItemMessageParam](it.Raw))}
	case "function_call":
		return responses.ResponseInputItemUnionParam{OfFunctionCall: ptr(param.Override[responses.ResponseFunctionToolCallParam](it.Raw))}
	}
	// compaction, and any other item a compaction returned: its bytes are what matters.
	return responses.ResponseInputItemUnionParam{OfCompaction: ptr(param.Override[responses.ResponseCompactionItemParam](it.Raw))}
}

func userItem(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
		Role:    responses.EasyInputMessageRoleUser,
		Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(text)},
	}}
}

func callItem(tc store.ToolCall, id string) responses.ResponseInputItemUnionParam {
	fc := &responses.ResponseFunctionToolCallParam{CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
	if id != "" {
		fc.ID = param.NewOpt(id)
	}
	return responses.ResponseInputItemUnionParam{OfFunctionCall: fc}
}

// inputItems turns one canonical message into input items. An assistant message whose
// ReasoningDetails came from this adapter replays its reasoning items byte for byte, in their
// original order, and its text and calls under their original item ids (a reasoning item must be
// followed by the item it belongs to); the text and arguments come from the message itself.
func inputItems(m provider.Message) ([]responses.ResponseInputItemUnionParam, error) {
	if win := compactedItems(m.ReasoningDetails); win != nil && (m.Role == store.RoleUser || m.Role == store.RoleAssistant) {
		// A provider compaction's summary row replays the compacted window byte for byte, then
		// its own text: spool's working-set ledger (and the words of the message it was merged
		// into, if any).
		out := make([]responses.ResponseInputItemUnionParam, 0, len(win)+1)
		for _, it := range win {
			out = append(out, rawItem(it))
		}
		if m.Role == store.RoleUser {
			return append(out, userItem(m.Content)), nil
		}
		return append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role:    responses.EasyInputMessageRoleAssistant,
			Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(m.Content)},
		}}), nil
	}
	switch m.Role {
	case store.RoleUser:
		return []responses.ResponseInputItemUnionParam{userItem(m.Content)}, nil
	case store.RoleTool:
		if m.ToolCallID == "" {
			return nil, errors.New("tool message has no tool_call_id")
		}
		return []responses.ResponseInputItemUnionParam{{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: param.NewOpt(m.ToolCallID),
			Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(m.Content)},
		}}}, nil
	case store.RoleAssistant:
	default:
		return nil, fmt.Errorf("role %q cannot be sent (system goes in Request.System)", m.Role)
	}
	var out []responses.ResponseInputItemUnionParam
	textSent := false
	sent := map[string]bool{}
	for _, it := range responsesItems(m.ReasoningDetails) {
		switch it.Type {
		case "reasoning", "compaction":
			out = append(out, rawItem(it))
		case "message":
			if textSent || m.Content == "" {
				continue
			}
			textSent = true
			out = append(out, responses.ResponseInputItemUnionParam{OfOutputMessage: &responses.ResponseOutputMessageParam{
				ID:     it.ID,
				Status: responses.ResponseOutputMessageStatusCompleted,
				Content: []responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{
					Text: m.Content, Annotations: []responses.ResponseOutputTextAnnotationUnionParam{},
				}}},
			}})
		case "function_call":
			for _, tc := range m.ToolCalls {
				if tc.ID == it.CallID && !sent[tc.ID] {
					sent[tc.ID] = true
					out = append(out, callItem(tc, it.ID))
				}
			}
		}
	}
	if !textSent && m.Content != "" {
		out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role:    responses.EasyInputMessageRoleAssistant,
			Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(m.Content)},
		}})
	}
	for _, tc := range m.ToolCalls {
		if !sent[tc.ID] {
			out = append(out, callItem(tc, ""))
		}
	}
	if len(out) == 0 {
		// An empty assistant turn still holds its place in the conversation.
		out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role:    responses.EasyInputMessageRoleAssistant,
			Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt("")},
		}})
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// wireResponse is a Responses API response object (the body, or response.* events' "response").
type wireResponse struct {
	Model             string            `json:"model"`
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	Error             json.RawMessage   `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens     int64 `json:"cached_tokens"`
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

// finish turns a final response object into a provider.Response. streamed holds the items from
// response.output_item.done events, used when the final object carries no output.
func (c *Client) finish(r wireResponse, streamed []json.RawMessage) (provider.Response, error) {
	if r.Status == "failed" || (len(r.Error) > 0 && string(r.Error) != "null") {
		return provider.Response{}, c.eventError(r.Error)
	}
	out := provider.Response{Model: r.Model}
	if r.Usage != nil {
		out.Usage = provider.Usage{
			InputTokens:      r.Usage.InputTokens,
			OutputTokens:     r.Usage.OutputTokens,
			CacheReadTokens:  r.Usage.InputTokensDetails.CachedTokens,
			CacheWriteTokens: r.Usage.InputTokensDetails.CacheWriteTokens,
			ReasoningTokens:  r.Usage.OutputTokensDetails.ReasoningTokens,
		}
	}
	raws := r.Output
	if len(raws) == 0 {
		raws = streamed
	}
	var keep []json.RawMessage
	hasReasoning := false
	var text, reasoning strings.Builder
	for _, raw := range raws {
		var it outputItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return out, &provider.Error{Class: provider.ClassServer, Provider: c.name,
				Message: "malformed output item: " + err.Error(), Err: err}
		}
		switch it.Type {
		case "reasoning":
			hasReasoning = true
			for _, s := range it.Summary {
				if reasoning.Len() > 0 {
					reasoning.WriteString("\n\n")
				}
				reasoning.WriteString(s.Text)
			}
		case "message":
			for _, part := range it.Content {
				switch part.Type {
				case "output_text":
					text.WriteString(part.Text)
				case "refusal":
					text.WriteString(part.Refusal)
				}
			}
		case "function_call":
			out.ToolCalls = append(out.ToolCalls, store.ToolCall{ID: it.CallID, Type: "function",
				Function: store.ToolFunction{Name: it.Name, Arguments: it.Args}})
		case "compaction":
			// The server compacted the conversation while answering (context_management): the
			// item carries the context from here on and is replayed byte for byte.
			hasReasoning, out.Compacted = true, true
		default:
			continue // hosted tools and other items are not kept
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return out, &provider.Error{Class: provider.ClassServer, Provider: c.name,
				Message: "malformed output item: " + err.Error(), Err: err}
		}
		keep = append(keep, buf.Bytes())
	}
	out.Content = text.String()
	out.Reasoning = reasoning.String()
	if hasReasoning {
		// Stored with the assistant message and replayed on later requests (compact form, so
		// the stored bytes are the bytes sent).
		details, err := json.Marshal(keep)
		if err != nil {
			return out, err
		}
		out.ReasoningDetails = details
	}
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter":
		out.FinishReason = "content_filter"
	case r.Status == "incomplete":
		out.FinishReason = "length"
	case len(out.ToolCalls) > 0:
		out.FinishReason = "tool_calls"
	default:
		out.FinishReason = "stop"
	}
	return out, nil
}

// eventError classifies an error object from a response.failed or error event. Such errors
// arrive with HTTP 200, so the class comes from the code and message alone.
func (c *Client) eventError(errObj json.RawMessage) *provider.Error {
	if len(errObj) == 0 || string(errObj) == "null" {
		return &provider.Error{Class: provider.ClassServer, Provider: c.name, Message: "response failed without an error object"}
	}
	body, _ := json.Marshal(map[string]json.RawMessage{"error": errObj})
	e := provider.ClassifyHTTP(c.name, 0, nil, body)
	if e.Class == provider.ClassUnknown {
		e.Class = provider.ClassServer
		if bytes.Contains(errObj, []byte("invalid_request")) {
			e.Class = provider.ClassBadRequest
		}
	}
	return e
}

// streamEvent covers the Responses stream events this adapter reads.
type streamEvent struct {
	Type     string          `json:"type"`
	Delta    string          `json:"delta"`
	Item     json.RawMessage `json:"item"`
	Response *wireResponse   `json:"response"`
	Error    json.RawMessage `json:"error"`
	// Older error events carry code and message at the top level.
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// readResponsesStream reads Responses SSE. The stream is complete only at response.completed or
// response.incomplete; response.failed and error events are errors; anything else is a cut.
func (c *Client) readResponsesStream(ctx context.Context, body io.Reader, onDelta func(provider.Delta)) (provider.Response, error) {
	r := sse.NewReader(body)
	var items []json.RawMessage
	var partial provider.Response
	var text, reasoning strings.Builder
	cut := func(err error) (provider.Response, error) {
		partial.Content, partial.Reasoning = text.String(), reasoning.String()
		if err != nil && ctx.Err() != nil {
			return partial, provider.ClassifyTransport(c.name, ctxErr(ctx, err))
		}
		return partial, provider.StreamCut(c.name, err)
	}
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return cut(nil)
		}
		if err != nil {
			return cut(err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 || bytes.Equal(data, []byte("[DONE]")) {
			continue
		}
		var e streamEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return partial, &provider.Error{Class: provider.ClassServer, Provider: c.name,
				Message: "malformed stream event: " + err.Error(), Err: err}
		}
		if e.Type == "" {
			e.Type = ev.Type
		}
		switch e.Type {
		case "response.output_text.delta", "response.refusal.delta":
			text.WriteString(e.Delta)
			onDelta(provider.Delta{Content: e.Delta})
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			reasoning.WriteString(e.Delta)
			onDelta(provider.Delta{Reasoning: e.Delta})
		case "response.reasoning_summary_part.added":
			if reasoning.Len() > 0 {
				reasoning.WriteString("\n\n")
				onDelta(provider.Delta{Reasoning: "\n\n"})
			}
		case "response.output_item.done":
			if len(e.Item) > 0 {
				items = append(items, e.Item)
			}
		case "response.created", "response.in_progress":
			if e.Response != nil && e.Response.Model != "" {
				partial.Model = e.Response.Model
			}
		case "response.completed", "response.incomplete", "response.failed":
			if e.Response == nil {
				return partial, &provider.Error{Class: provider.ClassServer, Provider: c.name,
					Message: e.Type + " event without a response"}
			}
			if e.Type == "response.failed" {
				e.Response.Status = "failed"
			}
			resp, err := c.finish(*e.Response, items)
			if err != nil {
				return partial, err
			}
			if resp.Reasoning == "" {
				resp.Reasoning = reasoning.String()
			}
			return resp, nil
		case "error":
			errObj := e.Error
			if len(errObj) == 0 || string(errObj) == "null" {
				errObj, _ = json.Marshal(struct {
					Code    json.RawMessage `json:"code,omitempty"`
					Message string          `json:"message"`
				}{e.Code, e.Message})
			}
			partial.Content, partial.Reasoning = text.String(), reasoning.String()
			return partial, c.eventError(errObj)
		}
	}
}

var _ provider.Compactor = (*Client)(nil)

// CanCompact implements provider.Compactor: the Responses API compacts, Chat Completions not.
func (c *Client) CanCompact() bool { return c.api == APIResponses }

// Compact implements provider.Compactor for the Responses API: POST /responses/compact with the
// request's model, instructions and input items (built as for a turn, replays included). The
// output items come back in compact form, to be stored and replayed byte for byte; a client on
// Chat Completions answers provider.ErrNoCompaction.
func (c *Client) Compact(ctx context.Context, req provider.Request) (provider.Compacted, error) {
	if c.api != APIResponses {
		return provider.Compacted{}, provider.ErrNoCompaction
	}
	p, err := responsesParams(provider.Request{Model: req.Model, System: req.System, Messages: req.Messages, Temperature: -1})
	if err != nil {
		return provider.Compacted{}, &provider.Error{Class: provider.ClassBadRequest, Provider: c.name, Message: err.Error()}
	}
	params := responses.ResponseCompactParams{
		Model: responses.ResponseCompactParamsModel(req.Model),
		Input: responses.ResponseCompactParamsInputUnion{OfResponseInputItemArray: p.Input.OfInputItemList},
	}
	if req.System != "" {
		params.Instructions = param.NewOpt(req.System)
	}
	var raw *http.Response
	_, err = c.sdk.Responses.Compact(ctx, params, option.WithResponseBodyInto(&raw))
	if raw != nil && raw.StatusCode >= 400 {
		body, _ := io.ReadAll(raw.Body)
		raw.Body.Close()
		return provider.Compacted{}, provider.ClassifyHTTP(c.name, raw.StatusCode, raw.Header, body)
	}
	if err != nil {
		return provider.Compacted{}, provider.ClassifyTransport(c.name, err)
	}
	defer raw.Body.Close()
	body, err := io.ReadAll(raw.Body)
	if err != nil {
		return provider.Compacted{}, provider.ClassifyTransport(c.name, ctxErr(ctx, err))
	}
	if status, errBody, ok := inlineError(body); ok {
		return provider.Compacted{}, provider.ClassifyHTTP(c.name, status, nil, errBody)
	}
	var r wireResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return provider.Compacted{}, &provider.Error{Class: provider.ClassServer, Provider: c.name,
			Message: "malformed compaction: " + err.Error(), Err: err}
	}
	out := provider.Compacted{Model: cmpOr(r.Model, req.Model)}
	if r.Usage != nil {
		out.Usage = provider.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
			CacheReadTokens: r.Usage.InputTokensDetails.CachedTokens, ReasoningTokens: r.Usage.OutputTokensDetails.ReasoningTokens}
	}
	items := make([]json.RawMessage, 0, len(r.Output))
	hasCompaction := false
	for _, it := range r.Output {
		var head struct {
			Type             string `json:"type"`
			EncryptedContent string `json:"encrypted_content"`
		}
		if err := json.Unmarshal(it, &head); err != nil || head.Type == "" {
			return provider.Compacted{}, &provider.Error{Class: provider.ClassServer, Provider: c.name, Message: "malformed compaction output item"}
		}
		if head.Type == "compaction" {
			if head.EncryptedContent == "" {
				return provider.Compacted{}, &provider.Error{Class: provider.ClassServer, Provider: c.name, Message: "compaction item without encrypted_content"}
			}
			hasCompaction = true
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, it); err != nil {
			return provider.Compacted{}, &provider.Error{Class: provider.ClassServer, Provider: c.name, Message: "malformed compaction output item: " + err.Error()}
		}
		items = append(items, buf.Bytes())
	}
	if !hasCompaction {
		return provider.Compacted{}, &provider.Error{Class: provider.ClassServer, Provider: c.name, Message: "compaction returned no compaction item"}
	}
	out.Items, err = json.Marshal(items)
	return out, err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
