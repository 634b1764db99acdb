package agent

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

// MaxToolResult bounds one tool result in bytes; longer output keeps its head and tail.
const MaxToolResult = 256 << 10

// CancelledResult is the recorded result of a tool call the turn was interrupted before.
const CancelledResult = "Tool call cancelled: the user interrupted the turn before this call finished. Nothing more is known about its effect."

// runTools runs the calls of one response in order and appends one result per call, in call
// order. A tool's failure (or panic) is its result; an interrupt gives every unanswered call a
// cancellation result, so the history never holds a call without its answer.
func (r *run) runTools(ctx context.Context, calls []store.ToolCall) error {
	for _, c := range calls {
		var text string
		isErr := false
		if ctx.Err() != nil {
			text, isErr = CancelledResult, true
		} else {
			if r.opts.OnToolCall != nil {
				r.opts.OnToolCall(c)
			}
			text, isErr = r.callTool(ctx, c)
			if ctx.Err() != nil {
				// Whatever the tool said after the interrupt is not trustworthy as a result.
				text, isErr = CancelledResult+"\n\nPartial output:\n"+text, true
			}
			r.res.ToolCalls++
		}
		if r.opts.OnToolResult != nil {
			r.opts.OnToolResult(c, text, isErr)
		}
		r.add(store.Message{Role: store.RoleTool, Content: text, ToolCallID: c.ID, ToolName: c.Function.Name, Timestamp: r.a.now()})
	}
	if ctx.Err() != nil {
		r.res.Interrupted = true
		return r.callFailed(ctx, ctx.Err()) // End flushes the results with its own budget
	}
	return r.t.Flush(ctx)
}

// callTool runs one call and turns every failure, a panic included, into text for the model.
func (r *run) callTool(ctx context.Context, c store.ToolCall) (text string, isErr bool) {
	if r.a.tools == nil {
		return fmt.Sprintf("Error: no tools are available in this session; %q cannot be called.", c.Function.Name), true
	}
	defer func() {
		if p := recover(); p != nil {
			text = fmt.Sprintf("Error: tool %s failed unexpectedly (panic: %v). Try another approach.", c.Function.Name, p)
			isErr = true
			r.notice(fmt.Sprintf("tool %s panicked: %v", c.Function.Name, p))
		}
	}()
	text, isErr = r.a.tools.Call(ctx, r.sess.ID, c)
	return capText(text, MaxToolResult), isErr
}

// capText keeps the first 70% and the last 20% of an oversized text around a marker.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*7/10, n*2/10
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:head] + fmt.Sprintf("\n\n[... %d bytes omitted ...]\n\n", t-head) + s[t:]
}
