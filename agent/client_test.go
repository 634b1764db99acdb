package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
)

var weather = provider.Tool{Name: "get_weather", Description: "Weather of a city.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

// TestClientToolRoundTrip: a call of a caller's tool ends the turn with the call pending; the
// next turn's result continues the same session; own tools of the same response run at once.
func TestClientToolRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		input     string
		restrict  bool
		wantRoles []string // after the first turn
		wantOwn   int
	}{
		{"client call only", `CALL get_weather {"city":"Oslo"}`, true, []string{"user", "assistant(1 calls)"}, 0},
		{"own and client call", "CALL echo {\"path\":\"a\"}\nCALL get_weather {\"city\":\"Oslo\"}", false, []string{"user", "assistant(2 calls)", "tool"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st, _ := newStore(t)
			a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
			opts := agent.RunOptions{ClientTools: []provider.Tool{weather}, RestrictTools: c.restrict}
			res, err := a.Run(context.Background(), "", c.input, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != "tool_calls" || len(res.PendingCalls) != 1 || res.PendingCalls[0].Function.Name != "get_weather" || res.ToolCalls != c.wantOwn {
				t.Fatalf("first turn: finish %q, pending %+v, own calls %d", res.FinishReason, res.PendingCalls, res.ToolCalls)
			}
			if got := roles(history(t, st, res.SessionID)); !slices.Equal(got, c.wantRoles) {
				t.Fatalf("history after the call: %v, want %v", got, c.wantRoles)
			}
			call := res.PendingCalls[0]

			// A result for a call that is not pending is refused, and nothing is stored.
			bad := opts
			bad.ToolResults = []agent.ToolResult{{CallID: "call_nope", Content: "x"}}
			if _, err := a.Run(context.Background(), res.SessionID, "", bad); !errors.Is(err, agent.ErrToolResult) {
				t.Fatalf("a result for an unknown call: %v, want ErrToolResult", err)
			}
			if got := roles(history(t, st, res.SessionID)); !slices.Equal(got, c.wantRoles) {
				t.Fatalf("a refused result changed the history: %v", got)
			}

			opts.ToolResults = []agent.ToolResult{{CallID: call.ID, Content: "sunny, 21 C"}}
			res2, err := a.Run(context.Background(), res.SessionID, "", opts)
			if err != nil {
				t.Fatal(err)
			}
			if res2.SessionID != res.SessionID || res2.FinishReason == "tool_calls" || !strings.Contains(res2.Reply, `get_weather returned "sunny, 21 C"`) {
				t.Fatalf("second turn: %+v", res2)
			}
			h := history(t, st, res.SessionID)
			want := append(slices.Clone(c.wantRoles), "tool", "assistant")
			if got := roles(h); !slices.Equal(got, want) {
				t.Fatalf("history after the result: %v, want %v", got, want)
			}
			if m := h[len(h)-2]; m.ToolCallID != call.ID || m.ToolName != "get_weather" || m.Content != "sunny, 21 C" {
				t.Fatalf("stored result %+v", m)
			}
		})
	}
}

// TestClientToolUnanswered: a new user message while a caller's call is pending records a
// result saying so, and the turn goes on.
func TestClientToolUnanswered(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), nil)
	opts := agent.RunOptions{ClientTools: []provider.Tool{weather}}
	res := must(a.Run(context.Background(), "", `CALL get_weather {"city":"Oslo"}`, opts))(t)
	res2 := must(a.Run(context.Background(), res.SessionID, "never mind", opts))(t)
	if !strings.HasPrefix(res2.Reply, "Answer ") {
		t.Fatalf("reply %q", res2.Reply)
	}
	h := history(t, st, res.SessionID)
	if got := roles(h); !slices.Equal(got, []string{"user", "assistant(1 calls)", "tool", "user", "assistant"}) {
		t.Fatalf("history %v", got)
	}
	if h[2].Content != agent.UnansweredResult || h[2].ToolCallID != res.PendingCalls[0].ID {
		t.Fatalf("recorded result %+v", h[2])
	}
}

// TestClientToolClash: a caller's tool named like an enabled own tool is refused.
func TestClientToolClash(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
	echo := provider.Tool{Name: "echo", Parameters: json.RawMessage(`{"type":"object"}`)}
	if _, err := a.Run(context.Background(), "", "hi", agent.RunOptions{ClientTools: []provider.Tool{echo}}); !errors.Is(err, agent.ErrToolResult) {
		t.Fatalf("clash: %v", err)
	}
	// With the own tools restricted away, the name is free.
	if _, err := a.Run(context.Background(), "", "hi", agent.RunOptions{ClientTools: []provider.Tool{echo}, RestrictTools: true}); err != nil {
		t.Fatal(err)
	}
}

// TestClientToolsStableBytes: every request of a client-tool round trip sends the same tools
// bytes (own tools first, then the client's), so the prompt cache prefix survives the turns.
func TestClientToolsStableBytes(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, fake.Config{})
	st, _ := newStore(t)
	a := newAgent(t, st, openaiClient(t, rec.URL), stdTools())
	opts := agent.RunOptions{ClientTools: []provider.Tool{weather}, RestrictTools: true, AllowTools: []string{"echo"}}
	res := must(a.Run(context.Background(), "", "CALL echo {\"path\":\"a\"}\nCALL get_weather {\"city\":\"Oslo\"}", opts))(t)
	opts.ToolResults = []agent.ToolResult{{CallID: res.PendingCalls[0].ID, Content: "sunny"}}
	must(a.Run(context.Background(), res.SessionID, "", opts))(t)
	opts.ToolResults = nil
	must(a.Run(context.Background(), res.SessionID, "thanks", opts))(t)
	bodies := rec.bodies()
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(bodies))
	}
	var first string
	for i, b := range bodies {
		var req struct {
			Tools json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = string(req.Tools)
			var names []struct {
				Function struct{ Name string } `json:"function"`
			}
			_ = json.Unmarshal(req.Tools, &names)
			if len(names) != 2 || names[0].Function.Name != "echo" || names[1].Function.Name != "get_weather" {
				t.Fatalf("tools offered: %s", req.Tools)
			}
		} else if string(req.Tools) != first {
			t.Fatalf("request %d tools differ:\n%s\n%s", i, first, req.Tools)
		}
	}
}

func must(res agent.Result, err error) func(*testing.T) agent.Result {
	return func(t *testing.T) agent.Result {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}
