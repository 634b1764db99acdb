package openai

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N *int `json:"n"`
	// MaxTokens is the deprecated name of MaxCompletionTokens.
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// text reads a message's content: a string, or a list of text parts.
func (m chatMessage) text(i int) (string, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		err := json.Unmarshal(c, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", fmt.Errorf("messages[%d].content must be a string or a list of content parts", i)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" && p.Type != "input_text" {
			return "", fmt.Errorf("messages[%d].content: parts of type %q are not supported (text only)", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (r chatRequest) toGateway() ([]gateway.Message, error) {
	out := make([]gateway.Message, 0, len(r.Messages))
	for i, m := range r.Messages {
		t, err := m.text(i)
		if err != nil {
			return nil, newError(http.StatusBadRequest, "invalid_request_error", "invalid_value", err.Error()).param(fmt.Sprintf("messages[%d].content", i)).noRetry()
		}
		gm := gateway.Message{Role: m.Role, Content: t, ToolCallID: m.ToolCallID}
		if tc := bytes.TrimSpace(m.ToolCalls); len(tc) > 0 && string(tc) != "null" {
			if m.Role != "assistant" {
				return nil, badParam(fmt.Sprintf("messages[%d].tool_calls", i), "only assistant messages carry tool_calls")
			}
			if err := json.Unmarshal(tc, &gm.ToolCalls); err != nil {
				return nil, badParam(fmt.Sprintf("messages[%d].tool_calls", i), "tool_calls must be a list of {id, type, function: {name, arguments}}")
			}
			for j, c := range gm.ToolCalls {
				if c.ID == "" || c.Function.Name == "" {
					return nil, badParam(fmt.Sprintf("messages[%d].tool_calls[%d]", i, j), "a tool call needs an id and a function name")
				}
				gm.ToolCalls[j].Type = "function"
			}
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return nil, badParam(fmt.Sprintf("messages[%d].tool_call_id", i), "a tool message needs the tool_call_id it answers")
		}
		out = append(out, gm)
	}
	return out, nil
}

// functionTool is a client-declared tool of either API: Chat Completions nests the function
// ({type, function: {name, ...}}), the Responses API flattens it ({type, name, ...}).
type functionTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// clientTools reads a request's tools and tool_choice. The definitions keep the client's order
// and its schema bytes (compacted), so the same tools give the same request prefix every turn.
// tool_choice "none" offers them not at all this turn; only "auto" and "none" are supported.
func clientTools(raw, choice json.RawMessage) ([]provider.Tool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var ts []functionTool
	if err := json.Unmarshal(raw, &ts); err != nil {
		return nil, badParam("tools", "tools must be a list of function tools")
	}
	switch c := strings.TrimSpace(string(choice)); c {
	case "", "null", `"auto"`:
	case `"none"`:
		return nil, nil
	default:
		return nil, badParam("tool_choice", "tool_choice "+c+" is not supported by spool serve (auto or none)")
	}
	out := make([]provider.Tool, 0, len(ts))
	for i, t := range ts {
		if t.Type != "function" {
			return nil, badParam(fmt.Sprintf("tools[%d].type", i), fmt.Sprintf("tools of type %q are not supported by spool serve (function only)", t.Type))
		}
		pt := provider.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		if t.Function != nil {
			pt = provider.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
		}
		if !toolName.MatchString(pt.Name) {
			return nil, badParam(fmt.Sprintf("tools[%d].name", i), "a function name is 1-64 letters, digits, '_' or '-'")
		}
		if p := bytes.TrimSpace(pt.Parameters); len(p) == 0 || string(p) == "null" {
			pt.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		} else {
			var b bytes.Buffer
			if err := json.Compact(&b, p); err != nil || p[0] != '{' {
				return nil, badParam(fmt.Sprintf("tools[%d].parameters", i), "parameters must be a JSON schema object")
			}
			pt.Parameters = b.Bytes()
		}
		out = append(out, pt)
	}
	return out, nil
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// completion is a non-streamed chat answer (and what an idempotent request stores).
type completion struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []choice       `json:"choices"`
	Usage   *usage         `json:"usage,omitempty"`
	Spool   *spoolMetadata `json:"spool,omitempty"`
}

type spoolMetadata struct {
	SessionID    string `json:"session_id"`
	BranchedFrom string `json:"branched_from,omitempty"`
}

type choice struct {
	Index        int            `json:"index"`
	Message      *replyMessage  `json:"message,omitempty"`
	Delta        *choiceMessage `json:"delta,omitempty"`
	FinishReason *string        `json:"finish_reason"`
	Logprobs     *struct{}      `json:"logprobs"`
}

type choiceMessage struct {
	Role             string        `json:"role,omitempty"`
	Content          *string       `json:"content,omitempty"`
	ReasoningContent string        `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
}

// replyMessage is a non-streamed answer's message. Refusal, which the schema requires, is
// always null: a model's refusal reaches spool as ordinary text.
type replyMessage struct {
	choiceMessage
	Refusal *string `json:"refusal"`
}

// toolCallOut is a tool call as a chat message (Index only in stream deltas).
type toolCallOut struct {
	Index    *int               `json:"index,omitempty"`
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function store.ToolFunction `json:"function"`
}

func toolCallsOut(calls []store.ToolCall, indexed bool) []toolCallOut {
	out := make([]toolCallOut, 0, len(calls))
	for i, c := range calls {
		o := toolCallOut{ID: c.ID, Type: "function", Function: c.Function}
		if indexed {
			o.Index = ptr(i)
		}
		out = append(out, o)
	}
	return out
}

type usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func usageOf(u store.Usage) *usage {
	out := &usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
	out.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	out.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
	return out
}

func finishReason(r string) string {
	switch r {
	case "length", "max_tokens":
		return "length"
	case "tool_calls":
		return "tool_calls"
	}
	return "stop"
}

func ptr[T any](v T) *T { return &v }

// stored is what an idempotent chat request records.
type stored struct {
	SessionID string          `json:"session_id"`
	Body      json.RawMessage `json:"body"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, principal string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, newError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "the body is not valid JSON: "+err.Error()).noRetry())
		return
	}
	if !s.knownModel(req.Model) {
		writeError(w, modelNotFound(req.Model))
		return
	}
	if req.N != nil && *req.N != 1 {
		writeError(w, newError(http.StatusBadRequest, "invalid_request_error", "unsupported_value", "n must be 1").param("n").noRetry())
		return
	}
	tools, err := clientTools(req.Tools, req.ToolChoice)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, newError(http.StatusBadRequest, "invalid_request_error", "invalid_value", "messages is empty").param("messages").noRetry())
		return
	}
	msgs, err := req.toGateway()
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	busy, err := gateway.ParseBusy(r.Header.Get("X-Spool-Busy"))
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	greq := gateway.Request{
		Principal: principal, SessionID: r.Header.Get("X-Spool-Session-Id"), SessionKey: r.Header.Get("X-Spool-Session-Key"),
		Messages: msgs, Busy: busy, ClientTools: tools,
	}
	if m := cmp.Or(req.MaxCompletionTokens, req.MaxTokens); m != nil {
		if *m < 1 {
			writeError(w, badParam("max_completion_tokens", "max_completion_tokens must be positive"))
			return
		}
		greq.MaxTokens = *m
	}
	model := cmp.Or(req.Model, "spool")
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage

	var idem *gateway.Idem
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		hash := gateway.HashBody(r.Method, r.URL.Path, append([]byte(greq.SessionID+"\x00"+greq.SessionKey+"\x00"), body...))
		idem, err = s.g.Idempotent(r.Context(), principal, key, hash)
		if err != nil {
			writeError(w, errorOf(err))
			return
		}
		if idem.Replay != nil {
			s.replay(w, idem.Replay, req.Stream, includeUsage)
			return
		}
	}

	id := newID("chatcmpl-")
	created := time.Now().Unix()
	var st *stream
	if req.Stream {
		st = s.newStream(w, id, created, model)
		defer st.close()
	}
	var started atomic.Bool
	sink := gateway.Sink{
		OnStart: func(sid string) {
			started.Store(true)
			if st != nil {
				st.open(sid)
				st.startKeepAlive(s.o.KeepAlive)
			}
		},
		OnDone: func(rep gateway.Reply, err error) {
			if idem == nil {
				return
			}
			var busyErr *gateway.BusyError
			if errors.As(err, &busyErr) {
				s.releaseIdem(r.Context(), idem, rep.SessionID)
				return
			}
			var b []byte
			status := http.StatusOK
			if err != nil {
				e := errorOf(err)
				status = e.Status
				b, _ = json.Marshal(map[string]any{"error": e})
			} else {
				b, _ = json.Marshal(s.completionOf(rep, id, created, model))
			}
			rec, _ := json.Marshal(stored{SessionID: rep.SessionID, Body: b})
			s.completeIdem(r.Context(), idem, rep.SessionID, status, rec)
		},
	}
	if req.Stream {
		sink.OnDelta = func(d provider.Delta) { st.delta(d) }
	}
	rep, err := s.g.Turn(r.Context(), greq, sink)
	if idem != nil && err != nil && !started.Load() && !rep.Detached {
		s.releaseIdem(r.Context(), idem, rep.SessionID)
	}
	if rep.Detached {
		if st != nil {
			st.stop()
		}
		return // the client went away; the turn goes on and is stored
	}
	if st != nil && started.Load() {
		st.finish(rep, err, includeUsage)
		s.g.Metrics().StreamDuration.WithLabelValues("chat_completions").Observe(time.Since(st.began).Seconds())
		return
	}
	if err != nil {
		if rep.SessionID != "" {
			w.Header().Set("X-Spool-Session-Id", rep.SessionID)
		}
		writeError(w, errorOf(err))
		return
	}
	c := s.completionOf(rep, id, created, model)
	if req.Stream {
		// The turn ended before it started streaming (cannot happen today): send it whole.
		s.replayStream(w, c, includeUsage)
		return
	}
	sessionHeaders(w, rep.SessionID, rep.BranchedFrom)
	writeJSON(w, http.StatusOK, c)
}

// newID is a random object id with prefix.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func sessionHeaders(w http.ResponseWriter, sid, from string) {
	w.Header().Set("X-Spool-Session-Id", sid)
	if from != "" {
		w.Header().Set("X-Spool-Branched-From", from)
	}
}

func (s *Server) completionOf(rep gateway.Reply, id string, created int64, model string) completion {
	res := rep.Result
	msg := &replyMessage{choiceMessage: choiceMessage{Role: "assistant", Content: ptr(res.Reply)}}
	if len(res.PendingCalls) > 0 {
		msg.ToolCalls = toolCallsOut(res.PendingCalls, false)
	}
	return completion{
		ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []choice{{Message: msg, FinishReason: ptr(finishReason(res.FinishReason))}},
		Usage:   usageOf(res.Usage),
		Spool:   &spoolMetadata{SessionID: rep.SessionID, BranchedFrom: rep.BranchedFrom},
	}
}

// errReplayUnreadable answers a stored idempotent outcome that no longer decodes.
func errReplayUnreadable() *apiError {
	return newError(http.StatusInternalServerError, "server_error", "replay_failed", "the stored outcome of this Idempotency-Key is unreadable").noRetry()
}

// replayWhole sets the headers every replay carries and, for an error or a non-streamed answer,
// writes the stored body as it was sent; it reports whether the answer is complete (false: the
// caller streams rec's body again).
func replayWhole(w http.ResponseWriter, e *store.IdempotencyEntry, rec stored, streamed bool) bool {
	w.Header().Set("Idempotent-Replayed", "true")
	if rec.SessionID != "" {
		w.Header().Set("X-Spool-Session-Id", rec.SessionID)
	}
	if e.Status == http.StatusOK && streamed {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	if e.Status != http.StatusOK {
		w.Header().Set("x-should-retry", "false")
	}
	w.WriteHeader(e.Status)
	w.Write(append(rec.Body, '\n'))
	return true
}

// replay answers from a stored idempotent outcome.
func (s *Server) replay(w http.ResponseWriter, e *store.IdempotencyEntry, streamed, includeUsage bool) {
	var rec stored
	if err := json.Unmarshal(e.Response, &rec); err != nil {
		writeError(w, errReplayUnreadable())
		return
	}
	if replayWhole(w, e, rec, streamed) {
		return
	}
	var c completion
	if err := json.Unmarshal(rec.Body, &c); err != nil {
		writeError(w, errReplayUnreadable())
		return
	}
	s.replayStream(w, c, includeUsage)
}

// replayStream sends a finished completion as a stream.
func (s *Server) replayStream(w http.ResponseWriter, c completion, includeUsage bool) {
	st := s.newStream(w, c.ID, c.Created, c.Model)
	defer st.close()
	st.closing() // all of it is the answer's tail
	sid := ""
	if c.Spool != nil {
		sid = c.Spool.SessionID
	}
	st.open(sid)
	text := ""
	if len(c.Choices) > 0 && c.Choices[0].Message != nil && c.Choices[0].Message.Content != nil {
		text = *c.Choices[0].Message.Content
	}
	if text != "" {
		st.chunk(choice{Delta: &choiceMessage{Content: ptr(text)}}, nil)
	}
	if len(c.Choices) > 0 && c.Choices[0].Message != nil && len(c.Choices[0].Message.ToolCalls) > 0 {
		calls := c.Choices[0].Message.ToolCalls
		for i := range calls {
			calls[i].Index = ptr(i)
		}
		st.chunk(choice{Delta: &choiceMessage{ToolCalls: calls}}, nil)
	}
	reason := "stop"
	if len(c.Choices) > 0 && c.Choices[0].FinishReason != nil {
		reason = *c.Choices[0].FinishReason
	}
	st.end(reason, c.Usage, includeUsage)
}

func (st *stream) chunk(c choice, u *usage) {
	choices := []choice{c}
	if c.Delta == nil {
		choices = []choice{}
	}
	st.frame(completion{ID: st.id, Object: "chat.completion.chunk", Created: st.created, Model: st.model, Choices: choices, Usage: u})
}

func (st *stream) delta(d provider.Delta) {
	if d.Content == "" && d.Reasoning == "" {
		return
	}
	m := &choiceMessage{ReasoningContent: d.Reasoning}
	if d.Content != "" {
		m.Content = ptr(d.Content)
	}
	st.chunk(choice{Delta: m}, nil)
}

func (st *stream) end(reason string, u *usage, includeUsage bool) {
	st.chunk(choice{Delta: &choiceMessage{}, FinishReason: ptr(reason)}, nil)
	if includeUsage && u != nil {
		st.chunk(choice{}, u)
	}
	st.mu.Lock()
	st.write([]byte("data: [DONE]\n\n"))
	st.mu.Unlock()
}

// finish ends a live stream with the turn's outcome.
func (st *stream) finish(rep gateway.Reply, err error, includeUsage bool) {
	st.closing()
	if err != nil {
		st.frame(map[string]any{"error": errorOf(err)})
		st.mu.Lock()
		st.write([]byte("data: [DONE]\n\n"))
		st.mu.Unlock()
		return
	}
	if len(rep.Result.PendingCalls) > 0 {
		st.chunk(choice{Delta: &choiceMessage{ToolCalls: toolCallsOut(rep.Result.PendingCalls, true)}}, nil)
	}
	st.end(finishReason(rep.Result.FinishReason), usageOf(rep.Result.Usage), includeUsage)
}
