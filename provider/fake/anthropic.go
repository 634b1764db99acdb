package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

type anRequest struct {
	Model     *string         `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl *anCacheControl `json:"cache_control"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type anCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

type anBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	CacheControl *anCacheControl `json:"cache_control"`
}

// blocks reads content that is a string or an array of blocks.
func blocks(raw json.RawMessage) ([]anBlock, error) {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, err
	}
	return bs, nil
}

func (s *segment) mark(cc *anCacheControl) {
	if cc != nil {
		s.breakpoint = true
		s.ttl1h = cc.TTL == "1h"
	}
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation,omitempty"`
	OutputTokens int    `json:"output_tokens"`
	ServiceTier  string `json:"service_tier,omitempty"`
	InferenceGeo string `json:"inference_geo,omitempty"`
}

type anText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anMessage struct {
	Model        string  `json:"model"`
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        anUsage `json:"usage"`
}

func (m *Model) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("x-api-key")
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	body, err := readBody(r)
	reqID := "req_011C" + shortHash(key+"\x00"+string(body), 20)
	w.Header().Set("request-id", reqID)
	invalid := func(msg string) {
		writeWireError(w, anthropicInvalidStatus(http.StatusBadRequest, "invalid_request_error", msg, reqID))
	}
	if m.cfg.APIKey != "" && key != m.cfg.APIKey {
		writeWireError(w, anthropicError(FaultAuth, "", reqID, 0, 0))
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		invalid("anthropic-version: header is required")
		return
	}
	if err != nil {
		invalid("could not read request body: " + err.Error())
		return
	}
	var req anRequest
	if err := json.Unmarshal(body, &req); err != nil {
		invalid("There was an error parsing the body: " + err.Error())
		return
	}
	switch {
	case req.Model == nil || *req.Model == "":
		invalid("model: Field required")
		return
	case req.MaxTokens == nil:
		invalid("max_tokens: Field required")
		return
	}
	c := call{wire: "anthropic", model: *req.Model, idPrefix: "toolu_01",
		cacheKey: keyFingerprint(key) + "/" + *req.Model, maxTokens: *req.MaxTokens}
	if bad := anPrelude(&c, &req); bad != "" {
		invalid(bad)
		return
	}
	if bad := anMessages(&c, &req); bad != "" {
		invalid(bad)
		return
	}

	res, f := m.process(c)
	if f != nil {
		if f.message != "" {
			invalid(f.message)
		} else {
			writeWireError(w, anthropicError(f.kind, c.model, reqID, f.prompt, m.cfg.ContextWindow))
		}
		return
	}
	if err := res.hold(r.Context()); err != nil {
		return
	}
	id := "msg_01" + res.seed[:22]
	stop := map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}[res.finish]
	usage := anUsage{
		InputTokens:              res.usage.prompt - res.usage.read - res.usage.write(),
		CacheCreationInputTokens: res.usage.write(),
		CacheReadInputTokens:     res.usage.read,
		CacheCreation: &struct {
			Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
			Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
		}{res.usage.write5m, res.usage.write1h},
		OutputTokens: res.output, ServiceTier: "standard", InferenceGeo: "not_available",
	}
	var content []any
	if res.text != "" || len(res.calls) == 0 {
		content = append(content, anText{Type: "text", Text: res.text})
	}
	for _, tc := range res.calls {
		content = append(content, anToolUse{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage(tc.Function.Arguments)})
	}
	if req.Stream {
		m.streamAnthropic(w, r, res, anMessage{Model: c.model, ID: id, Type: "message", Role: "assistant", Usage: usage}, content, stop)
		return
	}
	body = compactJSON(anMessage{Model: c.model, ID: id, Type: "message", Role: "assistant", Content: content,
		StopReason: &stop, Usage: usage})
	w.Header().Set("Content-Type", "application/json")
	if res.cut {
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		cutResponse(w)
	}
	w.Write(body)
}

// anPrelude reads a request's tools and system prompt into c, or says why they are invalid.
func anPrelude(c *call, req *anRequest) (bad string) {
	for _, t := range req.Tools {
		pt := provider.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}
		c.tools = append(c.tools, pt)
		seg := toolSegment(pt)
		seg.mark(t.CacheControl)
		c.segs = append(c.segs, seg)
	}
	if len(req.System) > 0 && string(req.System) != "null" {
		sys, err := blocks(req.System)
		if err != nil {
			return "system: Input should be a valid string or a valid list"
		}
		var texts []string
		for _, b := range sys {
			texts = append(texts, b.Text)
			seg := systemSegment(b.Text)
			seg.mark(b.CacheControl)
			c.segs = append(c.segs, seg)
		}
		c.system = strings.Join(texts, "\n")
	}
	return ""
}

// anMessages reads a request's messages into c, or says why one is invalid.
func anMessages(c *call, req *anRequest) (bad string) {
	for i, msg := range req.Messages {
		if msg.Role != "user" && msg.Role != "assistant" {
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		bs, err := blocks(msg.Content)
		if err != nil {
			return fmt.Sprintf("messages.%d.content: Input should be a valid list", i)
		}
		var texts []string
		var calls []store.ToolCall
		var results []provider.Message
		for _, b := range bs {
			var seg segment
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
				seg = textSegment(msg.Role, b.Text)
			case "tool_use":
				args := "{}"
				if len(b.Input) > 0 {
					var buf bytes.Buffer
					if json.Compact(&buf, b.Input) == nil {
						args = buf.String()
					}
				}
				calls = append(calls, store.ToolCall{ID: b.ID, Type: "function", Function: store.ToolFunction{Name: b.Name, Arguments: args}})
				seg = callSegment(b.ID, b.Name, args)
			case "tool_result":
				text, ok := textOf(b.Content)
				if !ok {
					return fmt.Sprintf("messages.%d.content: tool_result content should be a string or a list of blocks", i)
				}
				results = append(results, provider.Message{Role: "tool", Content: text, ToolCallID: b.ToolUseID})
				seg = resultSegment(b.ToolUseID, text)
			case "thinking", "redacted_thinking":
				continue
			default:
				texts = append(texts, "["+b.Type+"]")
				seg = textSegment(msg.Role, "["+b.Type+"]")
			}
			seg.mark(b.CacheControl)
			c.segs = append(c.segs, seg)
		}
		text := strings.Join(texts, "\n")
		if len(results) > 0 {
			// Text sent beside tool results rides on the last result for the script's purposes.
			if text != "" {
				results[len(results)-1].Content += "\n" + text
			}
			for _, res := range results {
				c.msgs = append(c.msgs, res)
				c.msgIndex = append(c.msgIndex, i)
			}
			continue
		}
		c.msgs = append(c.msgs, provider.Message{Role: msg.Role, Content: text, ToolCalls: calls})
		c.msgIndex = append(c.msgIndex, i)
	}
	return ""
}

// streamAnthropic writes the event sequence of fixtures 08a-08c: message_start, then per
// content block start / deltas / stop (a ping after the first start), message_delta with the
// stop reason and the usage repeated, message_stop.
func (m *Model) streamAnthropic(w http.ResponseWriter, r *http.Request, res result, msg anMessage, content []any, stop string) {
	type event struct {
		name string
		data any
	}
	var events []event
	add := func(name string, data any) { events = append(events, event{name, data}) }
	startUsage := msg.Usage
	startUsage.OutputTokens = 1
	msg.Usage = startUsage
	msg.Content = []any{}
	add("message_start", struct {
		Type    string    `json:"type"`
		Message anMessage `json:"message"`
	}{"message_start", msg})
	type delta struct {
		Type        string  `json:"type"`
		Text        string  `json:"text,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	type blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta delta  `json:"delta"`
	}
	type blockEvent struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock any    `json:"content_block,omitempty"`
	}
	for i, b := range content {
		switch b := b.(type) {
		case anText:
			add("content_block_start", blockEvent{"content_block_start", i, anText{Type: "text", Text: ""}})
			if i == 0 {
				add("ping", json.RawMessage(`{"type": "ping"}`))
			}
			for _, p := range splitText(b.Text) {
				add("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "text_delta", Text: p}})
			}
		case anToolUse:
			add("content_block_start", blockEvent{"content_block_start", i, anToolUse{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage("{}")}})
			if i == 0 {
				add("ping", json.RawMessage(`{"type": "ping"}`))
			}
			pieces := append([]string{""}, argPieces(string(b.Input))...)
			if string(b.Input) == "{}" {
				pieces = []string{""}
			}
			for _, p := range pieces {
				add("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "input_json_delta", PartialJSON: &p}})
			}
		}
		add("content_block_stop", blockEvent{Type: "content_block_stop", Index: i})
	}
	final := res.output
	add("message_delta", struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage anUsage `json:"usage"`
	}{Type: "message_delta", Delta: struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}{StopReason: stop}, Usage: anUsage{InputTokens: msg.Usage.InputTokens,
		CacheCreationInputTokens: msg.Usage.CacheCreationInputTokens,
		CacheReadInputTokens:     msg.Usage.CacheReadInputTokens, OutputTokens: final}})
	add("message_stop", json.RawMessage(`{"type":"message_stop"}`))

	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w, r: r, delay: m.cfg.ChunkDelay}
	for i, e := range events {
		if res.cut && i == len(events)/2 {
			cutResponse(w)
		}
		var data []byte
		if raw, ok := e.data.(json.RawMessage); ok {
			data = raw
		} else {
			data = compactJSON(e.data)
		}
		sw.frame([]byte("event: " + e.name + "\ndata: " + string(data) + "\n\n"))
	}
}
