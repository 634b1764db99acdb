package spool

import (
	"context"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// Observer hears what an Agent does, for metrics and traces (package otel adapts it to
// OpenTelemetry). Its methods are called on the turn's goroutine after each event: they must
// return quickly.
type Observer interface {
	// ModelCall follows every model call of a turn (failed ones included).
	ModelCall(ctx context.Context, e ModelCall)
	// ToolCall follows every tool the model called.
	ToolCall(ctx context.Context, e ToolCallEvent)
	// Compaction follows every committed compaction.
	Compaction(ctx context.Context, e CompactionEvent)
	// LeaseWait is called while another turn (here or in another process) holds the session.
	LeaseWait(ctx context.Context, e LeaseWait)
}

// TurnObserver is an Observer that also wraps each turn: StartTurn is called as Agent.Run
// begins, and the returned context (carrying, say, a trace span) is the one the turn's model
// and tool calls are made and reported with; end is called with the turn's outcome.
type TurnObserver interface {
	Observer
	StartTurn(ctx context.Context, sessionID string) (_ context.Context, end func(Result, error))
}

// ModelCall is one model call.
type ModelCall struct {
	SessionID string
	Provider  string // the client's Name
	Model     string // as asked; Response.Model may name the exact version
	Start     time.Time
	Duration  time.Duration
	// Usage is the provider's count: input (cached included), output, cache read and write.
	Usage        provider.Usage
	FinishReason string
	Err          error
}

// ToolCallEvent is one tool call and its outcome.
type ToolCallEvent struct {
	SessionID string
	Call      store.ToolCall
	Start     time.Time
	Duration  time.Duration
	IsError   bool
}

// CompactionEvent is one committed compaction.
type CompactionEvent struct {
	SessionID string
	agent.Compaction
}

// LeaseWait says how long a turn has waited for the session, and for whom.
type LeaseWait struct {
	SessionID string
	Waited    time.Duration
	Holder    string
}

// NopObserver hears nothing; embed it to implement only some of Observer's methods.
type NopObserver struct{}

func (NopObserver) ModelCall(context.Context, ModelCall)        {}
func (NopObserver) ToolCall(context.Context, ToolCallEvent)     {}
func (NopObserver) Compaction(context.Context, CompactionEvent) {}
func (NopObserver) LeaseWait(context.Context, LeaseWait)        {}

type sessionKey struct{}

func withSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, id)
}

func sessionOf(ctx context.Context) string { s, _ := ctx.Value(sessionKey{}).(string); return s }

// observedClient reports each call of c to obs.
type observedClient struct {
	c   provider.Client
	obs Observer
}

func (o observedClient) Name() string { return o.c.Name() }

// observed wraps c, keeping its provider-side compaction when it has one.
func observed(c provider.Client, obs Observer) provider.Client {
	if comp, ok := c.(provider.Compactor); ok {
		return observedCompactor{observedClient{c, obs}, comp}
	}
	return observedClient{c, obs}
}

type observedCompactor struct {
	observedClient
	comp provider.Compactor
}

func (o observedCompactor) CanCompact() bool { return o.comp.CanCompact() }

func (o observedCompactor) Compact(ctx context.Context, req provider.Request) (provider.Compacted, error) {
	return o.comp.Compact(ctx, req)
}

func (o observedClient) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	start := time.Now()
	resp, err := o.c.Chat(ctx, req, onDelta)
	o.obs.ModelCall(ctx, ModelCall{SessionID: sessionOf(ctx), Provider: o.c.Name(), Model: req.Model, Start: start,
		Duration: time.Since(start), Usage: resp.Usage, FinishReason: resp.FinishReason, Err: err})
	return resp, err
}

// observedTools reports each call of t to obs.
type observedTools struct {
	t   agent.Tools
	obs Observer
}

func (o observedTools) Definitions() []provider.Tool { return o.t.Definitions() }

func (o observedTools) Call(ctx context.Context, sessionID string, call store.ToolCall) (string, bool) {
	start := time.Now()
	text, isErr := o.t.Call(ctx, sessionID, call)
	o.obs.ToolCall(ctx, ToolCallEvent{SessionID: sessionID, Call: call, Start: start, Duration: time.Since(start), IsError: isErr})
	return text, isErr
}
