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

// toolOutcome is one tool call's result text. final marks a text that already says how an
// interrupt ended the call (a delegation's result), so it is not wrapped again.
type toolOutcome struct {
	text  string
	isErr bool
	final bool
}

// runTools runs the calls of one response in order and appends one result per call, in call
// order. Consecutive delegate calls run at once (each in its own child session, bounded by
// Delegation.MaxParallel); every other call runs alone, in order. A tool's failure (or panic)
// is its result; an interrupt gives every unanswered call a cancellation result, so the history
// never holds a call without its answer. Callbacks run on the turn's goroutine.
func (r *run) runTools(ctx context.Context, calls []store.ToolCall) error {
	for i := 0; i < len(calls); {
		j := i + 1
		if r.isDelegate(calls[i]) {
			for j < len(calls) && r.isDelegate(calls[j]) {
				j++
			}
		}
		group := calls[i:j]
		outs := make([]toolOutcome, len(group))
		if ctx.Err() != nil {
			for k := range outs {
				outs[k] = toolOutcome{text: CancelledResult, isErr: true, final: true}
			}
		} else {
			for _, c := range group {
				if r.opts.OnToolCall != nil {
					r.opts.OnToolCall(c)
				}
			}
			if r.isDelegate(group[0]) {
				outs = r.delegateAll(ctx, group)
			} else {
				text, isErr := r.callTool(ctx, group[0])
				outs[0] = toolOutcome{text: text, isErr: isErr}
			}
			r.res.ToolCalls += len(group)
		}
		for k, c := range group {
			o := outs[k]
			if ctx.Err() != nil && !o.final {
				// Whatever the tool said after the interrupt is not trustworthy as a result.
				o.text, o.isErr = CancelledResult+"\n\nPartial output:\n"+o.text, true
			}
			if r.opts.OnToolResult != nil {
				r.opts.OnToolResult(c, o.text, o.isErr)
			}
			r.add(store.Message{Role: store.RoleTool, Content: o.text, ToolCallID: c.ID, ToolName: c.Function.Name, Timestamp: r.a.now()})
		}
		i = j
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
