package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/internal/sse"
	"github.com/spoolhq/spool/store"
)

// streamState assembles a streamed completion.
type streamState struct {
	resp               provider.Response
	content, reasoning strings.Builder
	calls              []store.ToolCall
	byIndex            map[int64]int // wire tool-call index -> slot in calls
	details            detailsAssembler
}

func (s *streamState) response() provider.Response {
	r := s.resp
	if d, err := s.details.bytes(); err == nil && len(d) > 0 {
		r.ReasoningDetails = d
	}
	r.Content = s.content.String()
	r.Reasoning = s.reasoning.String()
	r.ToolCalls = s.calls
	r.FinishReason = finishReason(r.FinishReason, len(r.ToolCalls) > 0)
	return r
}

// readStream reads Chat Completions SSE. The stream is complete at "data: [DONE]" or, for
// servers that omit it, at a clean end after a finish_reason; anything else is a cut stream.
func (c *Client) readStream(ctx context.Context, body io.Reader, onDelta func(provider.Delta)) (provider.Response, error) {
	st := &streamState{byIndex: map[int64]int{}}
	r := sse.NewReader(body)
	finished := false
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return st.response(), provider.ClassifyTransport(c.name, ctxErr(ctx, err))
			}
			return st.response(), provider.StreamCut(c.name, err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			return st.response(), nil
		}
		if status, errBody, ok := inlineError(data); ok {
			return st.response(), provider.ClassifyHTTP(c.name, status, nil, errBody)
		}
		var chunk sdk.ChatCompletionChunk
		if err := json.Unmarshal(data, &chunk); err != nil {
			return st.response(), &provider.Error{Class: provider.ClassServer, Provider: c.name,
				Message: "malformed stream chunk: " + err.Error(), Err: err}
		}
		if chunk.Model != "" {
			st.resp.Model = chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			st.resp.Usage = usage(chunk.Usage)
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // n > 1 is never requested
			}
			var d provider.Delta
			if ch.Delta.Content != "" {
				d.Content = ch.Delta.Content
				st.content.WriteString(d.Content)
			}
			if rs := reasoningText(ch.Delta.JSON.ExtraFields); rs != "" {
				d.Reasoning = rs
				st.reasoning.WriteString(rs)
			}
			if raw := extraRaw(ch.Delta.JSON.ExtraFields, "reasoning_details"); raw != "" {
				if err := st.details.add(raw); err != nil {
					return st.response(), &provider.Error{Class: provider.ClassServer, Provider: c.name,
						Message: "malformed stream chunk: " + err.Error(), Err: err}
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				st.addToolCall(tc)
			}
			if ch.FinishReason != "" {
				st.resp.FinishReason = ch.FinishReason
				finished = true
			}
			if d != (provider.Delta{}) {
				onDelta(d)
			}
		}
	}
	if !finished {
		return st.response(), provider.StreamCut(c.name, nil)
	}
	return st.response(), nil
}

// addToolCall merges one tool-call delta. Deltas are matched by index; a delta without an index
// continues the last call unless it brings a new id, and an index reused with a different id
// (seen on some compatible servers for parallel calls) opens a new call.
func (s *streamState) addToolCall(tc sdk.ChatCompletionChunkChoiceDeltaToolCall) {
	slot := -1
	hasIndex := tc.JSON.Index.Valid()
	if hasIndex {
		if i, ok := s.byIndex[tc.Index]; ok && (tc.ID == "" || s.calls[i].ID == "" || tc.ID == s.calls[i].ID) {
			slot = i
		}
	} else if tc.ID == "" && len(s.calls) > 0 {
		slot = len(s.calls) - 1
	}
	if slot < 0 {
		s.calls = append(s.calls, store.ToolCall{Type: "function"})
		slot = len(s.calls) - 1
		if hasIndex {
			s.byIndex[tc.Index] = slot
		}
	}
	call := &s.calls[slot]
	if call.ID == "" {
		call.ID = tc.ID
	}
	if call.Function.Name == "" {
		call.Function.Name = tc.Function.Name
	}
	call.Function.Arguments += tc.Function.Arguments
}
