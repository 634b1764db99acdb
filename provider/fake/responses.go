package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// The Responses API wire (POST /v1/responses), as the recordings in
// provider/openai/testdata/responses show it: stateless requests whose input items are messages,
// function_call, function_call_output and replayed reasoning items. Every answer starts with a
// reasoning item carrying a deterministic encrypted_content; a replayed reasoning item without
// encrypted_content, or not followed by the item it belongs to, is refused with the real 400.

type rsRequest struct {
	Model           string            `json:"model"`
	Instructions    string            `json:"instructions"`
	Input           []json.RawMessage `json:"input"`
	Tools           []provider.Tool   `json:"tools"`
	Stream          bool              `json:"stream"`
	MaxOutputTokens int               `json:"max_output_tokens"`
	PromptCacheKey  string            `json:"prompt_cache_key"`
}

type rsItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        string          `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	EncryptedContent string          `json:"encrypted_content"`
}

// rsText reads a message's content: a string or a list of input_text/output_text parts.
func rsText(raw json.RawMessage) (string, bool) {
	if t, ok := textOf(raw); ok {
		return t, true
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), true
}

func (m *Model) serveResponses(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	body, err := readBody(r)
	w.Header().Set("x-request-id", "req_"+shortHash(key+"\x00"+string(body), 32))
	if m.cfg.APIKey != "" && key != m.cfg.APIKey {
		writeWireError(w, openAIError(FaultAuth, "", key, 0, 0))
		return
	}
	var req rsRequest
	if err != nil || json.Unmarshal(body, &req) != nil {
		writeWireError(w, openAIInvalid("We could not parse the JSON body of your request.", ""))
		return
	}
	if req.Model == "" {
		writeWireError(w, openAIInvalid("Missing required parameter: 'model'.", "model"))
		return
	}
	c := call{wire: "openai", model: req.Model, idPrefix: "call_", system: req.Instructions,
		cacheKey:  keyFingerprint(key) + "/" + req.Model + "/" + req.PromptCacheKey,
		maxTokens: req.MaxOutputTokens, tools: req.Tools}
	items := make([]rsItem, len(req.Input))
	for i, raw := range req.Input {
		if json.Unmarshal(raw, &items[i]) != nil {
			writeWireError(w, openAIInvalid(fmt.Sprintf("Invalid value for 'input[%d]'.", i), fmt.Sprintf("input[%d]", i)))
			return
		}
	}
	for i, it := range items {
		switch {
		case it.Type == "reasoning":
			if it.EncryptedContent == "" {
				writeWireError(w, openAIInvalid(fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false.", it.ID), "input"))
				return
			}
			if i+1 >= len(items) || items[i+1].Type == "reasoning" || items[i+1].ID == "" {
				writeWireError(w, openAIInvalid(fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", it.ID), "input"))
				return
			}
		case it.Type == "function_call":
			n := len(c.msgs)
			tc := store.ToolCall{ID: it.CallID, Type: "function", Function: store.ToolFunction{Name: it.Name, Arguments: it.Arguments}}
			if n > 0 && c.msgs[n-1].Role == "assistant" && (i > 0 && (items[i-1].Type == "function_call" || items[i-1].Type == "message")) {
				c.msgs[n-1].ToolCalls = append(c.msgs[n-1].ToolCalls, tc)
			} else {
				c.msgs = append(c.msgs, provider.Message{Role: "assistant", ToolCalls: []store.ToolCall{tc}})
			}
		case it.Type == "function_call_output":
			out, _ := textOf(it.Output)
			c.msgs = append(c.msgs, provider.Message{Role: "tool", ToolCallID: it.CallID, Content: out})
		case it.Type == "message" || it.Type == "":
			text, ok := rsText(it.Content)
			if !ok || (it.Role != "user" && it.Role != "assistant") {
				writeWireError(w, openAIInvalid(fmt.Sprintf("Invalid value for 'input[%d]'.", i), fmt.Sprintf("input[%d]", i)))
				return
			}
			c.msgs = append(c.msgs, provider.Message{Role: it.Role, Content: text})
		}
	}
	c.segs = neutralSegments(c.system, c.msgs, c.tools)
	res, f := m.process(c)
	if f != nil {
		if f.message != "" {
			writeWireError(w, openAIInvalid(f.message, "input"))
		} else {
			writeWireError(w, openAIError(f.kind, req.Model, key, f.prompt, m.cfg.ContextWindow))
		}
		return
	}
	if err := res.hold(r.Context()); err != nil {
		return
	}
	reasoning := map[string]any{"id": "rs_" + res.seed, "type": "reasoning",
		"encrypted_content": "gAAAAAB" + res.seed, "summary": []any{}}
	output := []any{reasoning}
	if res.text != "" || len(res.calls) == 0 {
		output = append(output, map[string]any{"id": "msg_" + res.seed, "type": "message", "status": "completed",
			"role": "assistant", "content": []any{map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": res.text}}})
	}
	for i, tc := range res.calls {
		output = append(output, map[string]any{"id": fmt.Sprintf("fc_%s%02d", res.seed[:30], i), "type": "function_call",
			"status": "completed", "arguments": tc.Function.Arguments, "call_id": tc.ID, "name": tc.Function.Name})
	}
	status := "completed"
	var incomplete any
	if res.finish == "length" {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	usage := map[string]any{"input_tokens": res.usage.prompt, "input_tokens_details": map[string]any{"cached_tokens": res.usage.read},
		"output_tokens": res.output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": res.usage.prompt + res.output}
	resp := map[string]any{"id": "resp_" + res.seed, "object": "response", "created_at": m.cfg.Now().Unix(),
		"status": status, "incomplete_details": incomplete, "error": nil, "model": req.Model, "output": output,
		"store": false, "usage": usage}
	if !req.Stream {
		b := indentJSON(resp, "  ")
		w.Header().Set("Content-Type", "application/json")
		if res.cut {
			w.WriteHeader(http.StatusOK)
			w.Write(b[:len(b)/2])
			cutResponse(w)
		}
		w.Write(b)
		return
	}
	var events []map[string]any
	ev := func(typ string, kv ...any) {
		e := map[string]any{"type": typ}
		for i := 0; i+1 < len(kv); i += 2 {
			e[kv[i].(string)] = kv[i+1]
		}
		events = append(events, e)
	}
	pending := map[string]any{}
	for k, v := range resp {
		pending[k] = v
	}
	pending["status"], pending["output"], pending["usage"] = "in_progress", []any{}, nil
	ev("response.created", "response", pending)
	ev("response.in_progress", "response", pending)
	for i, item := range output {
		it := item.(map[string]any)
		ev("response.output_item.added", "output_index", i, "item", it)
		switch it["type"] {
		case "message":
			for _, p := range splitText(res.text) {
				ev("response.output_text.delta", "item_id", it["id"], "output_index", i, "content_index", 0, "delta", p, "logprobs", []any{})
			}
			ev("response.output_text.done", "item_id", it["id"], "output_index", i, "content_index", 0, "text", res.text, "logprobs", []any{})
		case "function_call":
			for _, p := range argPieces(it["arguments"].(string)) {
				ev("response.function_call_arguments.delta", "item_id", it["id"], "output_index", i, "delta", p)
			}
			ev("response.function_call_arguments.done", "item_id", it["id"], "output_index", i, "arguments", it["arguments"])
		}
		ev("response.output_item.done", "output_index", i, "item", it)
	}
	final := "response.completed"
	if status == "incomplete" {
		final = "response.incomplete"
	}
	ev(final, "response", resp)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w, r: r, delay: m.cfg.ChunkDelay}
	for i, e := range events {
		if res.cut && i == len(events)/2 {
			cutResponse(w)
		}
		e["sequence_number"] = i
		typ := e["type"].(string)
		sw.frame([]byte("event: " + typ + "\ndata: " + string(compactJSON(e)) + "\n\n"))
	}
}
