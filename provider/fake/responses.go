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
	items, werr := rsInput(&c, req.Input)
	if werr != nil {
		writeWireError(w, *werr)
		return
	}
	c.segs = responsesSegments(c.system, c.tools, items)
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
	output, gen := rsOutput(&res)
	// What the model generated is in the provider's cache as the continuation of this prompt: a
	// next request that replays it byte for byte (reasoning included) reads it from the cache.
	m.cacheGenerated(c, append(append([]segment(nil), c.segs...), responsesItemSegments(gen)...))
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
	events := rsEvents(&res, resp, output, status)
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

// rsInput reads a request's input items into c's messages, or returns the 400 an invalid item
// gets.
func rsInput(c *call, input []json.RawMessage) ([]rsItem, *wireError) {
	items := make([]rsItem, len(input))
	for i, raw := range input {
		if json.Unmarshal(raw, &items[i]) != nil {
			return nil, invalidPtr(openAIInvalid(fmt.Sprintf("Invalid value for 'input[%d]'.", i), fmt.Sprintf("input[%d]", i)))
		}
	}
	for i, it := range items {
		switch {
		case it.Type == "reasoning":
			if it.EncryptedContent == "" {
				return nil, invalidPtr(openAIInvalid(fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false.", it.ID), "input"))
			}
			if i+1 >= len(items) || items[i+1].Type == "reasoning" || items[i+1].ID == "" {
				return nil, invalidPtr(openAIInvalid(fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", it.ID), "input"))
			}
		case it.Type == "function_call":
			n := len(c.msgs)
			tc := store.ToolCall{ID: it.CallID, Type: "function", Function: store.ToolFunction{Name: it.Name, Arguments: it.Arguments}}
			if n > 0 && c.msgs[n-1].Role == "assistant" && (i > 0 && (items[i-1].Type == "function_call" || items[i-1].Type == "message")) {
				c.msgs[n-1].ToolCalls = append(c.msgs[n-1].ToolCalls, tc)
			} else {
				c.msgs = append(c.msgs, provider.Message{Role: "assistant", ToolCalls: []store.ToolCall{tc}})
			}
		case it.Type == "compaction":
			// A compaction window replayed (/responses/compact's output, or one made while
			// answering): its encrypted content carries the compacted conversation.
			if it.EncryptedContent == "" {
				return nil, invalidPtr(openAIInvalid(fmt.Sprintf("Missing required parameter: 'input[%d].encrypted_content'.", i), fmt.Sprintf("input[%d].encrypted_content", i)))
			}
			c.msgs = append(c.msgs, provider.Message{Role: "user", Content: "[compacted context " + it.ID + "]"})
		case it.Type == "function_call_output":
			out, _ := textOf(it.Output)
			c.msgs = append(c.msgs, provider.Message{Role: "tool", ToolCallID: it.CallID, Content: out})
		case it.Type == "message" || it.Type == "":
			text, ok := rsText(it.Content)
			if !ok || (it.Role != "user" && it.Role != "assistant") {
				return nil, invalidPtr(openAIInvalid(fmt.Sprintf("Invalid value for 'input[%d]'.", i), fmt.Sprintf("input[%d]", i)))
			}
			c.msgs = append(c.msgs, provider.Message{Role: it.Role, Content: text})
		}
	}
	return items, nil
}

// invalidPtr is e, addressable: the result of a check that refuses.
func invalidPtr(e wireError) *wireError { return &e }

// rsOutput is an answer's output items as the wire shows them, and the same items as a replay
// would send them back (gen).
func rsOutput(res *result) (output []any, gen []rsItem) {
	enc := encryptedReasoning(res.seed)
	reasoning := map[string]any{"id": "rs_" + res.seed, "type": "reasoning",
		"encrypted_content": enc, "summary": []any{}}
	output = []any{reasoning}
	gen = []rsItem{{Type: "reasoning", ID: "rs_" + res.seed, EncryptedContent: enc}}
	if res.text != "" || len(res.calls) == 0 {
		output = append(output, map[string]any{"id": "msg_" + res.seed, "type": "message", "status": "completed",
			"role": "assistant", "content": []any{map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": res.text}}})
		gen = append(gen, rsItem{Type: "message", Role: "assistant", Content: mustJSON(res.text)})
	}
	for i, tc := range res.calls {
		output = append(output, map[string]any{"id": fmt.Sprintf("fc_%s%02d", res.seed[:30], i), "type": "function_call",
			"status": "completed", "arguments": tc.Function.Arguments, "call_id": tc.ID, "name": tc.Function.Name})
		gen = append(gen, rsItem{Type: "function_call", CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return output, gen
}

// rsEvents is a streamed answer's events, in order, without their sequence numbers.
func rsEvents(res *result, resp map[string]any, output []any, status string) []map[string]any {
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
	return events
}

// encryptedReasoningBytes is the size of the fake's encrypted reasoning: real encrypted_content
// runs to kilobytes, so dropping it from a replay costs what it costs on the real API.
const encryptedReasoningBytes = 1600

// encryptedReasoning is a deterministic stand-in for an encrypted reasoning item of a prompt.
func encryptedReasoning(seed string) string {
	var b strings.Builder
	b.Grow(encryptedReasoningBytes)
	b.WriteString("gAAAAAB")
	for b.Len() < encryptedReasoningBytes {
		b.WriteString(seed)
	}
	return b.String()[:encryptedReasoningBytes]
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func reasoningSegment(id, encrypted string) segment {
	return segment{text: "<reasoning " + id + ">" + encrypted + "</reasoning>\n"}
}

// responsesSegments serializes a Responses request in input-item order: tools, instructions,
// then every item, replayed reasoning included (it is part of the prompt and of its cache).
func responsesSegments(system string, tools []provider.Tool, items []rsItem) []segment {
	segs := make([]segment, 0, len(tools)+len(items)+1)
	for _, t := range tools {
		segs = append(segs, toolSegment(t))
	}
	if system != "" {
		segs = append(segs, systemSegment(system))
	}
	return append(segs, responsesItemSegments(items)...)
}

func responsesItemSegments(items []rsItem) []segment {
	var segs []segment
	for _, it := range items {
		switch it.Type {
		case "reasoning":
			segs = append(segs, reasoningSegment(it.ID, it.EncryptedContent))
		case "function_call":
			segs = append(segs, callSegment(it.CallID, it.Name, it.Arguments))
		case "function_call_output":
			out, _ := textOf(it.Output)
			segs = append(segs, resultSegment(it.CallID, out))
		case "compaction":
			segs = append(segs, compactionSegment(it.ID, it.EncryptedContent))
		case "message", "":
			text, _ := rsText(it.Content)
			segs = append(segs, textSegment(it.Role, text))
		}
	}
	return segs
}

// ResponsesPromptTokens is the prompt size the fake reports for req sent through the Responses
// adapter (provider/openai, api responses): the neutral count plus every reasoning item
// replayed from an assistant message's ReasoningDetails (the adapter's JSON array of output
// items). The benchmark's ideal ceiling counts with it.
func ResponsesPromptTokens(req provider.Request) int {
	return countSegments(responsesSegments(req.System, req.Tools, requestItems(req)))
}

// ResponsesSharedPrefixTokens is SharedPrefixTokens for two requests sent through the Responses
// adapter (reasoning items counted where they are replayed).
func ResponsesSharedPrefixTokens(a, b provider.Request) int {
	x := joinSegments(responsesSegments(a.System, a.Tools, requestItems(a)))
	y := joinSegments(responsesSegments(b.System, b.Tools, requestItems(b)))
	n := 0
	for n < len(x) && n < len(y) && x[n] == y[n] {
		n++
	}
	return prefixTokens(n)
}

// requestItems are the input items the Responses adapter makes of req's messages.
func requestItems(req provider.Request) []rsItem {
	var items []rsItem
	for _, m := range req.Messages {
		switch m.Role {
		case "tool":
			items = append(items, rsItem{Type: "function_call_output", CallID: m.ToolCallID, Output: mustJSON(m.Content)})
			continue
		case "assistant":
			var raws []rsItem
			_ = json.Unmarshal(m.ReasoningDetails, &raws)
			for _, r := range raws {
				if (r.Type == "reasoning" || r.Type == "compaction") && r.EncryptedContent != "" {
					items = append(items, r)
				}
			}
		}
		var win struct {
			Type  string   `json:"type"`
			Items []rsItem `json:"items"`
		}
		if json.Unmarshal(m.ReasoningDetails, &win) == nil && win.Type == "compacted_window" {
			// A provider compaction's summary row: its window, then its text.
			items = append(items, win.Items...)
		}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			items = append(items, rsItem{Type: "message", Role: m.Role, Content: mustJSON(m.Content)})
		}
		for _, tc := range m.ToolCalls {
			items = append(items, rsItem{Type: "function_call", CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	return items
}

func compactionSegment(id, encrypted string) segment {
	return segment{text: "<compaction " + id + ">" + encrypted + "</compaction>\n"}
}

// encryptedCompactionBytes is the size of the fake's compaction item (07a's is 3.5 kB).
const encryptedCompactionBytes = 2400

// serveCompact is POST /v1/responses/compact as the recording 07a shows it: the input's newest
// user message is retained (content as input_text parts, status completed) and a compaction item
// with a deterministic encrypted_content stands for everything; object "response.compaction",
// usage with cached and reasoning tokens, keys sorted. An input message containing COMPACTFAIL
// answers a 500, so the local compressor's fallback can be tested.
func (m *Model) serveCompact(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	body, err := readBody(r)
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
	if strings.Contains(string(body), "COMPACTFAIL") {
		writeWireError(w, openAIError(FaultServer, req.Model, key, 0, 0))
		return
	}
	items := make([]rsItem, len(req.Input))
	for i, raw := range req.Input {
		if json.Unmarshal(raw, &items[i]) != nil {
			writeWireError(w, openAIInvalid(fmt.Sprintf("Invalid value for 'input[%d]'.", i), fmt.Sprintf("input[%d]", i)))
			return
		}
	}
	m.mu.Lock()
	m.stats.Compactions++
	m.mu.Unlock()
	seed := shortHash(string(body), 32)
	// 07a retains the one user message it was given; how many a real server keeps of a longer
	// input is not recorded. The fake keeps the newest, so a window stays bounded.
	var output []any
	for i := len(items) - 1; i >= 0; i-- {
		if it := items[i]; (it.Type == "message" || it.Type == "") && it.Role == "user" {
			text, _ := rsText(it.Content)
			output = append(output, map[string]any{"id": fmt.Sprintf("msg_%s%02d", seed[:30], i), "type": "message", "role": "user",
				"status": "completed", "content": []any{map[string]any{"type": "input_text", "text": text}}})
			break
		}
	}
	var enc strings.Builder
	enc.WriteString("gAAAAAB")
	for enc.Len() < encryptedCompactionBytes {
		enc.WriteString(seed)
	}
	output = append(output, map[string]any{"id": "cmp_" + seed, "type": "compaction", "encrypted_content": enc.String()[:encryptedCompactionBytes]})
	in := countSegments(responsesSegments(req.Instructions, nil, items))
	out := encryptedCompactionBytes / BytesPerToken
	resp := map[string]any{"id": "resp_" + seed, "object": "response.compaction", "created_at": m.cfg.Now().Unix(), "output": output,
		"usage": map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + out}}
	b, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
