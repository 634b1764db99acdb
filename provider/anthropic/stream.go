package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/internal/sse"
)

// streamBlock is a content block being streamed.
type streamBlock struct {
	kind      string // text, thinking, redacted_thinking, tool_use
	text      strings.Builder
	signature string
	data      string
	id, name  string
	input     strings.Builder
}

// readStream reads Messages SSE. The stream is complete at message_stop or, failing that, at a
// clean end after message_delta brought a stop_reason; anything else is a cut stream.
func (c *Client) readStream(ctx context.Context, body io.Reader, onDelta func(provider.Delta)) (provider.Response, error) {
	var (
		a        assembly
		blocks   []*streamBlock
		byIndex  = map[int64]*streamBlock{}
		u        sdk.Usage
		stopSeen bool
	)
	finish := func() provider.Response {
		for _, b := range blocks {
			switch b.kind {
			case "text":
				a.text.WriteString(b.text.String())
			case "thinking":
				a.reasoning.WriteString(b.text.String())
				a.details = append(a.details, thinkingBlock{Type: "thinking", Thinking: b.text.String(), Signature: b.signature})
			case "redacted_thinking":
				a.details = append(a.details, thinkingBlock{Type: "redacted_thinking", Data: b.data})
			case "tool_use":
				a.calls = append(a.calls, toolCall(b.id, b.name, b.input.String()))
			}
		}
		a.resp.Usage = usage(u)
		return a.response()
	}
	r := sse.NewReader(body)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return finish(), provider.ClassifyTransport(c.name, ctxErr(ctx, err))
			}
			return finish(), provider.StreamCut(c.name, err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		var e sdk.MessageStreamEventUnion
		if err := json.Unmarshal(data, &e); err != nil {
			return finish(), &provider.Error{Class: provider.ClassServer, Provider: c.name,
				Message: "malformed stream event: " + err.Error(), Err: err}
		}
		switch e.Type {
		case "message_start":
			a.resp.Model = e.Message.Model
			u = e.Message.Usage
		case "content_block_start":
			cb := e.ContentBlock
			b := &streamBlock{kind: cb.Type, id: cb.ID, name: cb.Name, signature: cb.Signature, data: cb.Data}
			b.text.WriteString(cb.Text + cb.Thinking)
			blocks = append(blocks, b)
			byIndex[e.Index] = b
		case "content_block_delta":
			b := byIndex[e.Index]
			if b == nil {
				return finish(), &provider.Error{Class: provider.ClassServer, Provider: c.name,
					Message: "stream delta for a block that never started"}
			}
			switch d := e.Delta; d.Type {
			case "text_delta":
				b.text.WriteString(d.Text)
				onDelta(provider.Delta{Content: d.Text})
			case "thinking_delta":
				b.text.WriteString(d.Thinking)
				onDelta(provider.Delta{Reasoning: d.Thinking})
			case "signature_delta":
				b.signature += d.Signature
			case "input_json_delta":
				b.input.WriteString(d.PartialJSON)
			}
		case "message_delta":
			if e.Delta.StopReason != "" {
				a.resp.FinishReason = string(e.Delta.StopReason)
				stopSeen = true
			}
			// output_tokens is cumulative; newer servers repeat the input counters here too.
			du := e.Usage
			u.OutputTokens = du.OutputTokens
			if du.JSON.InputTokens.Valid() {
				u.InputTokens = du.InputTokens
			}
			if du.JSON.CacheReadInputTokens.Valid() {
				u.CacheReadInputTokens = du.CacheReadInputTokens
			}
			if du.JSON.CacheCreationInputTokens.Valid() {
				u.CacheCreationInputTokens = du.CacheCreationInputTokens
			}
			if du.JSON.OutputTokensDetails.Valid() {
				u.OutputTokensDetails.ThinkingTokens = du.OutputTokensDetails.ThinkingTokens
			}
		case "message_stop":
			return finish(), nil
		case "error":
			return finish(), provider.ClassifyHTTP(c.name, 0, nil, data)
		}
	}
	if !stopSeen {
		return finish(), provider.StreamCut(c.name, nil)
	}
	return finish(), nil
}
