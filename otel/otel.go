// Package otel adapts spool's Observer to OpenTelemetry tracing with the GenAI semantic
// conventions: a span per agent turn ("invoke_agent spool"), a child span per model call
// ("chat <model>", with gen_ai.usage.input_tokens, output_tokens and the cache read and
// creation counts) and per tool call ("execute_tool <name>"), and an event on the turn's span
// per compaction and lease wait.
//
//	ag, err := db.NewAgent(spool.AgentOptions{..., Observer: otel.New(otel.Tracer())})
package otel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/spoolhq/spool"
)

// Attribute keys of the GenAI semantic conventions used here.
const (
	OperationName     = attribute.Key("gen_ai.operation.name")
	System            = attribute.Key("gen_ai.system")
	RequestModel      = attribute.Key("gen_ai.request.model")
	ConversationID    = attribute.Key("gen_ai.conversation.id")
	AgentName         = attribute.Key("gen_ai.agent.name")
	FinishReasons     = attribute.Key("gen_ai.response.finish_reasons")
	InputTokens       = attribute.Key("gen_ai.usage.input_tokens")
	OutputTokens      = attribute.Key("gen_ai.usage.output_tokens")
	CacheReadTokens   = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	CacheCreateTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	ToolName          = attribute.Key("gen_ai.tool.name")
	ToolCallID        = attribute.Key("gen_ai.tool.call.id")
	ErrorType         = attribute.Key("error.type")
)

// Tracer is the global TracerProvider's tracer for spool.
func Tracer() trace.Tracer { return otel.Tracer("github.com/spoolhq/spool") }

// Observer records spool's events as spans of t. It implements spool.TurnObserver.
type Observer struct {
	t trace.Tracer
}

var _ spool.TurnObserver = (*Observer)(nil)

// New is an Observer recording on t.
func New(t trace.Tracer) *Observer { return &Observer{t: t} }

// StartTurn starts the turn's span; the turn's model and tool calls become its children.
func (o *Observer) StartTurn(ctx context.Context, sessionID string) (context.Context, func(spool.Result, error)) {
	ctx, span := o.t.Start(ctx, "invoke_agent spool", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		OperationName.String("invoke_agent"), AgentName.String("spool"), ConversationID.String(sessionID)))
	return ctx, func(res spool.Result, err error) {
		span.SetAttributes(InputTokens.Int64(res.Usage.InputTokens), OutputTokens.Int64(res.Usage.OutputTokens),
			CacheReadTokens.Int64(res.Usage.CacheReadTokens), CacheCreateTokens.Int64(res.Usage.CacheWriteTokens))
		if res.SessionID != "" && res.SessionID != sessionID {
			span.SetAttributes(ConversationID.String(res.SessionID))
		}
		fail(span, err)
		span.End()
	}
}

// ModelCall records a "chat" span from the call's start to its end.
func (o *Observer) ModelCall(ctx context.Context, e spool.ModelCall) {
	_, span := o.t.Start(ctx, "chat "+e.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(e.Start),
		trace.WithAttributes(OperationName.String("chat"), System.String(e.Provider), RequestModel.String(e.Model),
			ConversationID.String(e.SessionID),
			InputTokens.Int64(e.Usage.InputTokens), OutputTokens.Int64(e.Usage.OutputTokens),
			CacheReadTokens.Int64(e.Usage.CacheReadTokens), CacheCreateTokens.Int64(e.Usage.CacheWriteTokens)))
	if e.FinishReason != "" {
		span.SetAttributes(FinishReasons.StringSlice([]string{e.FinishReason}))
	}
	fail(span, e.Err)
	span.End(trace.WithTimestamp(e.Start.Add(e.Duration)))
}

// ToolCall records an "execute_tool" span.
func (o *Observer) ToolCall(ctx context.Context, e spool.ToolCallEvent) {
	_, span := o.t.Start(ctx, "execute_tool "+e.Call.Function.Name, trace.WithTimestamp(e.Start), trace.WithAttributes(
		OperationName.String("execute_tool"), ToolName.String(e.Call.Function.Name), ToolCallID.String(e.Call.ID),
		ConversationID.String(e.SessionID)))
	if e.IsError {
		span.SetStatus(codes.Error, "tool call failed")
		span.SetAttributes(ErrorType.String("tool_error"))
	}
	span.End(trace.WithTimestamp(e.Start.Add(e.Duration)))
}

// Compaction adds a "spool.compaction" event to the turn's span.
func (o *Observer) Compaction(ctx context.Context, e spool.CompactionEvent) {
	trace.SpanFromContext(ctx).AddEvent("spool.compaction", trace.WithAttributes(
		attribute.Int("spool.compaction.messages", e.Messages), attribute.Int("spool.compaction.tokens_before", e.TokensBefore),
		attribute.Int("spool.compaction.tokens_after", e.TokensAfter)))
}

// LeaseWait adds a "spool.lease_wait" event to the turn's span.
func (o *Observer) LeaseWait(ctx context.Context, e spool.LeaseWait) {
	trace.SpanFromContext(ctx).AddEvent("spool.lease_wait", trace.WithTimestamp(time.Now()), trace.WithAttributes(
		attribute.String("spool.lease.holder", e.Holder), attribute.Float64("spool.lease.waited_s", e.Waited.Seconds())))
}

func fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	class := "error"
	var se *spool.Error
	if errors.As(err, &se) {
		class = string(se.Class)
		if se.ProviderClass != "" {
			class = string(se.ProviderClass)
		}
	}
	span.SetAttributes(ErrorType.String(class))
}
