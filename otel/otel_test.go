package otel_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/spoolhq/spool"
	spoolotel "github.com/spoolhq/spool/otel"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/tools"
)

// recorder is a Tracer that keeps its spans: name, parent, attributes, ended.
type recorder struct {
	embedded.Tracer
	mu    sync.Mutex
	spans []*span
}

type span struct {
	trace.Span // a no-op span for the methods not recorded
	name       string
	parent     *span
	attrs      map[attribute.Key]attribute.Value
	ended      bool
}

func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	for _, a := range kv {
		s.attrs[a.Key] = a.Value
	}
}

func (s *span) End(...trace.SpanEndOption) { s.ended = true }

func (r *recorder) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	_, inner := noop.NewTracerProvider().Tracer("").Start(ctx, name)
	s := &span{Span: inner, name: name, attrs: map[attribute.Key]attribute.Value{}}
	if p, ok := trace.SpanFromContext(ctx).(*span); ok {
		s.parent = p
	}
	cfg := trace.NewSpanStartConfig(opts...)
	s.SetAttributes(cfg.Attributes()...)
	r.mu.Lock()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

// A turn with one tool call is one invoke_agent span with two chat spans and one execute_tool
// span under it, carrying the GenAI attributes and the token counts.
func TestTurnSpansFollowGenAIConventions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := spool.Open(ctx, spool.Memory)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec := &recorder{}
	echo := spool.Tool{Name: "echo", Description: "Echo.", Parameters: json.RawMessage(`{"type":"object"}`),
		Run: func(context.Context, tools.Env, json.RawMessage) (string, error) { return "ok", nil }}
	ag, err := db.NewAgent(spool.AgentOptions{Client: fake.New(fake.Config{}), Model: "fake", Tools: []spool.Tool{echo},
		Observer: spoolotel.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := db.NewSession(ctx, "")
	if _, err := ag.Run(ctx, s, `CALL echo {}`); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	var turn *span
	for _, sp := range rec.spans {
		names[sp.name]++
		if !sp.ended {
			t.Errorf("span %s not ended", sp.name)
		}
		if sp.name == "invoke_agent spool" {
			turn = sp
		}
	}
	if names["invoke_agent spool"] != 1 || names["chat fake"] != 2 || names["execute_tool echo"] != 1 {
		t.Fatalf("spans %v", names)
	}
	if turn.attrs[spoolotel.ConversationID].AsString() != s.ID() || turn.attrs[spoolotel.InputTokens].AsInt64() == 0 {
		t.Fatalf("turn attributes %v", turn.attrs)
	}
	for _, sp := range rec.spans {
		if sp == turn {
			continue
		}
		if sp.parent != turn {
			t.Errorf("span %s is not a child of the turn", sp.name)
		}
		if sp.name == "chat fake" && (sp.attrs[spoolotel.OperationName].AsString() != "chat" ||
			sp.attrs[spoolotel.RequestModel].AsString() != "fake" || sp.attrs[spoolotel.InputTokens].AsInt64() == 0) {
			t.Errorf("chat span attributes %v", sp.attrs)
		}
		if sp.name == "execute_tool echo" && sp.attrs[spoolotel.ToolName].AsString() != "echo" {
			t.Errorf("tool span attributes %v", sp.attrs)
		}
	}
}
