package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	PreviousResponseID string          `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Stream             bool            `json:"stream"`
	Metadata           json.RawMessage `json:"metadata"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Store              *bool           `json:"store"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Truncation         string          `json:"truncation"`
}

// inputMessages reads a Responses input: a string, or a list of message items.
func inputMessages(raw json.RawMessage) ([]gateway.Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badParam("input", "input is required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badParam("input", "input must be a string or a list of items")
		}
		return []gateway.Message{{Role: "user", Content: s}}, nil
	}
	var items []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badParam("input", "input must be a string or a list of items")
	}
	var out []gateway.Message
	for i, it := range items {
		switch it.Type {
		case "", "message":
		case "compaction":
			continue // spool's own summary stands in for it; the session already holds it
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, badParam(fmt.Sprintf("input[%d]", i), "a function_call item needs a call_id and a name")
			}
			call := store.ToolCall{ID: it.CallID, Type: "function", Function: store.ToolFunction{Name: it.Name, Arguments: it.Arguments}}
			// Calls right after an assistant message (or each other) are that message's calls.
			if n := len(out); n > 0 && out[n-1].Role == "assistant" {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			} else {
				out = append(out, gateway.Message{Role: "assistant", ToolCalls: []store.ToolCall{call}})
			}
			continue
		case "function_call_output":
			if it.CallID == "" {
				return nil, badParam(fmt.Sprintf("input[%d].call_id", i), "a function_call_output item needs the call_id it answers")
			}
			t, err := chatMessage{Content: it.Output}.text(i)
			if err != nil {
				return nil, badParam(fmt.Sprintf("input[%d].output", i), "output must be a string or a list of text parts")
			}
			out = append(out, gateway.Message{Role: "tool", Content: t, ToolCallID: it.CallID})
			continue
		case "reasoning":
			continue // spool keeps the model's reasoning itself
		default:
			return nil, badParam(fmt.Sprintf("input[%d].type", i), fmt.Sprintf("input items of type %q are not supported by spool serve (message, function_call, function_call_output)", it.Type))
		}
		t, err := chatMessage{Content: it.Content}.text(i)
		if err != nil {
			return nil, badParam(fmt.Sprintf("input[%d].content", i), err.Error())
		}
		out = append(out, gateway.Message{Role: cmp.Or(it.Role, "user"), Content: t})
	}
	return out, nil
}

func badParam(param, msg string) *apiError {
	return newError(http.StatusBadRequest, "invalid_request_error", "invalid_value", msg).param(param).noRetry()
}

// responseObject is a Responses API response: the reply's message item (when it has text or
// no calls) and one function_call item per client tool call.
func responseObject(rec gateway.ResponseRecord, text string, calls []store.ToolCall) map[string]any {
	output := []any{}
	var incomplete any
	if rec.Status == "incomplete" {
		incomplete = map[string]any{"reason": "max_output_tokens"}
	}
	if rec.Status == "completed" || rec.Status == "incomplete" {
		if text != "" || len(calls) == 0 {
			output = append(output, outputItem(rec, text, "completed"))
		}
		for _, c := range calls {
			output = append(output, callItem(c, "completed"))
		}
	}
	var errObj any
	if rec.Error != "" {
		errObj = map[string]any{"code": "server_error", "message": rec.Error}
	}
	meta := json.RawMessage(`{}`)
	if len(rec.Metadata) > 0 && string(rec.Metadata) != "null" {
		meta = rec.Metadata
	}
	var prev any
	if rec.Previous != "" {
		prev = rec.Previous
	}
	var instructions, maxOut any
	if rec.Instructions != "" {
		instructions = rec.Instructions
	}
	if rec.MaxOutputTokens > 0 {
		maxOut = rec.MaxOutputTokens
	}
	return map[string]any{
		"id": rec.ID, "object": "response", "created_at": rec.CreatedAt, "status": rec.Status, "model": rec.Model,
		"output": output, "error": errObj, "incomplete_details": incomplete, "instructions": instructions, "metadata": meta, "max_output_tokens": maxOut,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "previous_response_id": prev,
		"conversation": conversationOf(rec), "store": !rec.NotStored, "truncation": cmp.Or(rec.Truncation, "disabled"),
		// Sampling is the configured model's, not the request's: spool reports none.
		"temperature": nil, "top_p": nil,
		"usage": responseUsage(rec.Usage),
	}
}

// responseUsage is u as the Responses API reports usage.
func responseUsage(u store.Usage) map[string]any {
	return map[string]any{
		"input_tokens": u.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens},
		"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens": u.InputTokens + u.OutputTokens,
	}
}

// doneStatus is a finished turn's response status: incomplete when the output limit cut it.
func doneStatus(rep gateway.Reply) string {
	if rep.Result.FinishReason == "length" {
		return "incomplete"
	}
	return "completed"
}

func conversationOf(rec gateway.ResponseRecord) any {
	if rec.NotStored {
		return nil
	}
	return map[string]any{"id": rec.SessionID}
}

func itemID(rec gateway.ResponseRecord) string { return "msg_" + strings.TrimPrefix(rec.ID, "resp_") }

func outputItem(rec gateway.ResponseRecord, text, status string) map[string]any {
	content := []any{}
	if status == "completed" {
		content = append(content, textPart(text))
	}
	return map[string]any{"id": itemID(rec), "type": "message", "status": status, "role": "assistant", "content": content}
}

// callItem is a client tool call as a function_call item.
func callItem(c store.ToolCall, status string) map[string]any {
	args := c.Function.Arguments
	if status != "completed" {
		args = ""
	}
	return map[string]any{"id": "fc_" + c.ID, "type": "function_call", "status": status, "call_id": c.ID, "name": c.Function.Name, "arguments": args}
}

func textPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func (s *Server) responsesCreate(w http.ResponseWriter, r *http.Request, principal string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, newError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "the body is not valid JSON: "+err.Error()).noRetry())
		return
	}
	greq, notStored, aerr := s.responsesTurnRequest(r, principal, &req)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	t := &responsesTurn{s: s, r: r, principal: principal, notStored: notStored,
		rec: gateway.ResponseRecord{ID: newID("resp_"), Status: "in_progress", Model: cmp.Or(req.Model, "spool"), CreatedAt: time.Now().Unix(),
			Previous: req.PreviousResponseID, Metadata: req.Metadata, Instructions: req.Instructions, MaxOutputTokens: greq.MaxTokens,
			Truncation: req.Truncation, NotStored: notStored}}
	if key := r.Header.Get("Idempotency-Key"); key != "" && !notStored {
		t.idem, err = s.g.Idempotent(r.Context(), principal, key, gateway.HashBody(r.Method, r.URL.Path, body))
		if err != nil {
			writeError(w, errorOf(err))
			return
		}
		if t.idem.Replay != nil {
			s.replayResponse(w, t.idem.Replay, req.Stream)
			return
		}
	}
	if req.Stream {
		t.ev = &events{st: s.newStream(w, t.rec.ID, t.rec.CreatedAt, t.rec.Model)}
		defer t.ev.st.close()
	}
	sink := gateway.Sink{OnStart: t.start, OnDone: t.done}
	if t.ev != nil {
		sink.OnDelta = t.ev.delta
	}
	rep, err := s.g.Turn(r.Context(), greq, sink)
	t.mu.Lock()
	wasStarted := t.started
	t.mu.Unlock()
	if t.idem != nil && err != nil && !wasStarted && !rep.Detached {
		s.releaseIdem(r.Context(), t.idem, rep.SessionID)
	}
	if rep.Detached {
		if t.ev != nil {
			t.ev.st.stop()
		}
		return
	}
	if err == nil && t.durable != nil {
		// The answer exists but what the request asked of the store did not happen: say so.
		err = t.durable
	}
	rec := t.rec
	rec.SessionID, rec.MessageID, rec.UserMessageID, rec.Usage = rep.SessionID, rep.MessageID, rep.UserMessageID, rep.Result.Usage
	if t.ev != nil && wasStarted {
		rec.Status = doneStatus(rep)
		t.ev.finish(rec, rep.Result.Reply, rep.Result.PendingCalls, err)
		s.g.Metrics().StreamDuration.WithLabelValues("responses").Observe(time.Since(t.ev.st.began).Seconds())
		return
	}
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	rec.Status = doneStatus(rep)
	sessionHeaders(w, rep.SessionID, rep.BranchedFrom)
	writeJSON(w, http.StatusOK, responseObject(rec, rep.Result.Reply, rep.Result.PendingCalls))
}

// responsesTurnRequest checks a create request and makes it the gateway's turn request; it
// also says whether the response is unstored (store: false).
func (s *Server) responsesTurnRequest(r *http.Request, principal string, req *responsesRequest) (gateway.Request, bool, *apiError) {
	if !s.knownModel(req.Model) {
		return gateway.Request{}, false, modelNotFound(req.Model)
	}
	tools, err := clientTools(req.Tools, req.ToolChoice)
	if err != nil {
		return gateway.Request{}, false, errorOf(err)
	}
	msgs, err := inputMessages(req.Input)
	if err != nil {
		return gateway.Request{}, false, errorOf(err)
	}
	busy, err := gateway.ParseBusy(r.Header.Get("X-Spool-Busy"))
	if err != nil {
		return gateway.Request{}, false, errorOf(err)
	}
	greq := gateway.Request{Principal: principal, Messages: msgs, Busy: busy, Append: true, Locate: true, ClientTools: tools,
		Instructions: req.Instructions}
	if req.MaxOutputTokens != nil {
		if *req.MaxOutputTokens < 16 {
			return gateway.Request{}, false, badParam("max_output_tokens", "max_output_tokens must be at least 16")
		}
		greq.MaxTokens = *req.MaxOutputTokens
	}
	switch req.Truncation {
	case "", "auto", "disabled":
	default:
		return gateway.Request{}, false, badParam("truncation", "truncation must be auto or disabled")
	}
	notStored := req.Store != nil && !*req.Store
	conv := conversationID(req.Conversation)
	if notStored && (req.PreviousResponseID != "" || conv != "" || r.Header.Get("X-Spool-Session-Id") != "") {
		return gateway.Request{}, false, badParam("store", "store: false starts an unstored conversation; spool serve cannot continue a stored one (previous_response_id, conversation, X-Spool-Session-Id) without storing the turn")
	}
	switch {
	case req.PreviousResponseID != "" && conv != "":
		return gateway.Request{}, false, badParam("previous_response_id", "previous_response_id and conversation cannot be used together")
	case req.PreviousResponseID != "":
		prev, err := s.g.Response(r.Context(), principal, req.PreviousResponseID)
		if err != nil {
			return gateway.Request{}, false, errorOf(err).param("previous_response_id")
		}
		greq.SessionID, greq.After, greq.AfterResponse = prev.SessionID, prev.MessageID, prev.ID
		if prev.MessageID == 0 {
			greq.After = -1
		}
	case conv != "":
		greq.SessionID = conv
	default:
		greq.SessionID = r.Header.Get("X-Spool-Session-Id")
	}
	if greq.After < 0 {
		return gateway.Request{}, false, badParam("previous_response_id", "that response has not completed")
	}
	return greq, notStored, nil
}

// responsesTurn is one create request's turn as its sink sees it: the response record being
// built, and what the turn's start and end did to the store.
type responsesTurn struct {
	s         *Server
	r         *http.Request
	principal string
	notStored bool
	idem      *gateway.Idem
	ev        *events

	mu      sync.Mutex
	started bool
	rec     gateway.ResponseRecord
	// durable is the failed store write of done (set on the turn's goroutine, read after it).
	durable *apiError
}

// start records the in-progress response and opens the stream, if any.
func (t *responsesTurn) start(sid string) {
	s, r, rec := t.s, t.r, &t.rec
	t.mu.Lock()
	t.started = true
	rec.SessionID = sid
	t.mu.Unlock()
	if !t.notStored {
		if err := s.g.SaveResponse(r.Context(), t.principal, *rec); err != nil {
			s.o.Log.Error("spool serve: the in-progress response record was not written", "session", sid, "response", rec.ID, "err", err)
		}
	}
	if t.ev != nil {
		t.ev.st.openSSE(sid)
		t.ev.st.startKeepAlive(s.o.KeepAlive)
		t.ev.begin(*rec)
	}
}

// done records the finished response (or drops an unstored one's session) and completes the
// idempotency key.
func (t *responsesTurn) done(rep gateway.Reply, err error) {
	s, r, rec, principal, idem := t.s, t.r, &t.rec, t.principal, t.idem
	final := *rec
	final.SessionID = rep.SessionID
	final.MessageID, final.UserMessageID, final.Usage = rep.MessageID, rep.UserMessageID, rep.Result.Usage
	for _, c := range rep.Result.PendingCalls {
		final.Calls = append(final.Calls, c.ID)
	}
	final.Status = doneStatus(rep)
	if err != nil {
		final.Status, final.Error = "failed", err.Error()
		if errors.Is(err, gateway.ErrInterrupted) {
			final.Status = "cancelled"
		}
	}
	var busyErr *gateway.BusyError
	if errors.As(err, &busyErr) {
		s.releaseIdem(r.Context(), idem, rep.SessionID)
		return
	}
	if t.notStored {
		// Nothing of an unstored response outlives it: its session goes, with
		// whatever the turn wrote (a rotation's continuation too).
		t.mu.Lock()
		first := rec.SessionID
		t.mu.Unlock()
		ids := []string{rep.SessionID}
		if first != rep.SessionID {
			ids = append(ids, first)
		}
		for _, id := range ids {
			if id == "" {
				continue
			}
			if derr := s.g.DropConversation(context.WithoutCancel(r.Context()), principal, id); derr != nil && !errors.Is(derr, gateway.ErrNotFound) {
				s.o.Log.Error("spool serve: a store: false response's session was not deleted and stays stored", "session", id, "response", rec.ID, "err", derr)
				t.durable = notDeleted(id, derr)
			}
		}
		return
	}
	if serr := s.g.SaveResponse(r.Context(), principal, final); serr != nil {
		s.o.Log.Error("spool serve: the response record was not written", "session", rep.SessionID, "response", rec.ID, "err", serr)
		t.durable = notRecorded(rep.SessionID, rec.ID, serr)
	}
	if idem != nil {
		b, _ := json.Marshal(responseObject(final, rep.Result.Reply, rep.Result.PendingCalls))
		status := http.StatusOK
		if err != nil || t.durable != nil {
			e := t.durable
			if err != nil {
				e = errorOf(err)
			}
			status = e.Status
			b, _ = json.Marshal(map[string]any{"error": e})
		}
		st, _ := json.Marshal(stored{SessionID: rep.SessionID, Body: b})
		s.completeIdem(r.Context(), idem, rep.SessionID, status, st)
	}
}

func conversationID(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.ID
}

// events writes the Responses streaming grammar: every event named on an `event:` line, with
// its type and an increasing sequence_number in the data. The message item opens with the
// first text; client tool calls follow it as function_call items.
type events struct {
	st     *stream
	seq    int
	text   strings.Builder
	rec    gateway.ResponseRecord
	opened bool // the message item and its text part were announced
}

func (e *events) emit(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = e.seq
	e.seq++
	b, err := json.Marshal(fields)
	if err != nil {
		return
	}
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	buf := make([]byte, 0, len(b)+len(typ)+16)
	buf = append(buf, "event: "...)
	buf = append(buf, typ...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	e.st.write(buf)
}

func (e *events) begin(rec gateway.ResponseRecord) {
	e.rec = rec
	e.emit("response.created", map[string]any{"response": responseObject(rec, "", nil)})
	e.emit("response.in_progress", map[string]any{"response": responseObject(rec, "", nil)})
}

// openMessage announces the message item and its text part.
func (e *events) openMessage() {
	if e.opened {
		return
	}
	e.opened = true
	e.emit("response.output_item.added", map[string]any{"output_index": 0, "item": outputItem(e.rec, "", "in_progress")})
	e.emit("response.content_part.added", map[string]any{"item_id": itemID(e.rec), "output_index": 0, "content_index": 0, "part": textPart("")})
}

func (e *events) delta(d provider.Delta) {
	if d.Content == "" {
		return
	}
	e.openMessage()
	e.text.WriteString(d.Content)
	e.emit("response.output_text.delta", map[string]any{"item_id": itemID(e.rec), "output_index": 0, "content_index": 0, "delta": d.Content, "logprobs": []any{}})
}

func (e *events) finish(rec gateway.ResponseRecord, reply string, calls []store.ToolCall, err error) {
	e.st.closing()
	if err != nil {
		rec.Status, rec.Error = "failed", errorOf(err).Msg
		e.emit("response.failed", map[string]any{"response": responseObject(rec, "", nil)})
		return
	}
	if e.text.Len() == 0 && reply != "" {
		e.delta(provider.Delta{Content: reply})
	}
	if len(calls) == 0 {
		e.openMessage()
	}
	text := e.text.String()
	if rec.Status != "incomplete" {
		rec.Status = "completed"
	}
	next := 0
	if e.opened {
		id := itemID(rec)
		e.emit("response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []any{}})
		e.emit("response.content_part.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "part": textPart(text)})
		e.emit("response.output_item.done", map[string]any{"output_index": 0, "item": outputItem(rec, text, "completed")})
		next = 1
	}
	for i, c := range calls {
		idx := next + i
		e.emit("response.output_item.added", map[string]any{"output_index": idx, "item": callItem(c, "in_progress")})
		e.emit("response.function_call_arguments.delta", map[string]any{"item_id": "fc_" + c.ID, "output_index": idx, "delta": c.Function.Arguments})
		e.emit("response.function_call_arguments.done", map[string]any{"item_id": "fc_" + c.ID, "output_index": idx, "name": c.Function.Name, "arguments": c.Function.Arguments})
		e.emit("response.output_item.done", map[string]any{"output_index": idx, "item": callItem(c, "completed")})
	}
	if !e.opened {
		text = ""
	}
	e.emit("response."+rec.Status, map[string]any{"response": responseObject(rec, text, calls)})
}

// replayResponse answers from a stored idempotent Responses outcome.
func (s *Server) replayResponse(w http.ResponseWriter, e *store.IdempotencyEntry, streamed bool) {
	var rec stored
	var obj struct {
		ID     string `json:"id"`
		Model  string `json:"model"`
		Output []struct {
			Type    string `json:"type"`
			CallID  string `json:"call_id"`
			Name    string `json:"name"`
			Args    string `json:"arguments"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if json.Unmarshal(e.Response, &rec) != nil || (e.Status == http.StatusOK && json.Unmarshal(rec.Body, &obj) != nil) {
		writeError(w, errReplayUnreadable())
		return
	}
	if replayWhole(w, e, rec, streamed) {
		return
	}
	text := ""
	var calls []store.ToolCall
	for _, o := range obj.Output {
		switch {
		case o.Type == "function_call":
			calls = append(calls, store.ToolCall{ID: o.CallID, Type: "function", Function: store.ToolFunction{Name: o.Name, Arguments: o.Args}})
		case len(o.Content) > 0:
			text = o.Content[0].Text
		}
	}
	r := gateway.ResponseRecord{ID: obj.ID, SessionID: rec.SessionID, Status: "in_progress", Model: obj.Model}
	ev := &events{st: s.newStream(w, obj.ID, 0, obj.Model)}
	defer ev.st.close()
	ev.st.closing() // all of it is the answer's tail
	ev.st.openSSE(rec.SessionID)
	ev.begin(r)
	ev.finish(r, text, calls, nil)
}

// found is a principal's response with its reply's text and the client tool calls it made.
type found struct {
	rec   gateway.ResponseRecord
	text  string
	calls []store.ToolCall
}

func (f found) object() map[string]any { return responseObject(f.rec, f.text, f.calls) }

// find returns the principal's response, the text of its reply and its client tool calls.
func (s *Server) find(r *http.Request, principal string) (found, error) {
	rec, err := s.g.Response(r.Context(), principal, r.PathValue("id"))
	f := found{rec: rec}
	if err != nil || rec.MessageID == 0 {
		return f, err
	}
	ms, err := s.g.Messages(r.Context(), principal, rec.SessionID)
	if err != nil {
		return f, err
	}
	for _, m := range ms {
		if m.ID == rec.MessageID {
			f.text = m.Content
			for _, c := range m.ToolCalls {
				if slices.Contains(rec.Calls, c.ID) {
					f.calls = append(f.calls, c)
				}
			}
		}
	}
	return f, nil
}

func (s *Server) responsesGet(w http.ResponseWriter, r *http.Request, principal string) {
	f, err := s.find(r, principal)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, f.object())
}

func (s *Server) responsesDelete(w http.ResponseWriter, r *http.Request, principal string) {
	rec, err := s.g.Response(r.Context(), principal, r.PathValue("id"))
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	rec.Deleted = true
	if err := s.g.SaveResponse(r.Context(), principal, rec); err != nil {
		writeError(w, errorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "object": "response", "deleted": true})
}

func (s *Server) responsesCancel(w http.ResponseWriter, r *http.Request, principal string) {
	f, err := s.find(r, principal)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	if f.rec.Status == "in_progress" && s.g.Interrupt(f.rec.SessionID) {
		f.rec.Status = "cancelled"
	}
	writeJSON(w, http.StatusOK, f.object())
}

func (s *Server) responsesInputItems(w http.ResponseWriter, r *http.Request, principal string) {
	f, err := s.find(r, principal)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	rec := f.rec
	ms, err := s.g.Messages(r.Context(), principal, rec.SessionID)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	data := []any{}
	for _, m := range ms {
		if m.ID == rec.UserMessageID {
			data = append(data, messageItem(m))
		}
	}
	list := map[string]any{"object": "list", "data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		id := data[0].(map[string]any)["id"]
		list["first_id"], list["last_id"] = id, id
	}
	writeJSON(w, http.StatusOK, list)
}

// messageItem is a stored message as a Responses/conversations item.
func messageItem(m store.Message) map[string]any {
	part := map[string]any{"type": "input_text", "text": m.Content}
	if m.Role == store.RoleAssistant {
		part = textPart(m.Content)
	}
	return map[string]any{"id": fmt.Sprintf("msg_%s_%d", m.SessionID, m.ID), "type": "message", "status": "completed", "role": m.Role, "content": []any{part}}
}
