package tokens

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

func TestEstimateText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{strings.Repeat("x", 400), 100},
		{"日本語のテキスト", 2}, // 8 characters, 24 bytes: characters count, not bytes
	}
	for _, c := range cases {
		if got := EstimateText(c.in); got != c.want {
			t.Errorf("EstimateText(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestEstimateMessage(t *testing.T) {
	t.Parallel()
	calls := []store.ToolCall{{ID: "call_1", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"ls"}`}}}
	envelope, _ := json.Marshal(calls)
	details := json.RawMessage(`[{"type":"reasoning.text","text":"abcdefgh"}]`)
	cases := []struct {
		name string
		m    store.Message
		want int
	}{
		{"empty", store.Message{Role: "user"}, 10},
		{"content", store.Message{Role: "user", Content: strings.Repeat("a", 40)}, 10 + 10},
		{"sidecar counts instead of content", store.Message{Role: "user", Content: "aaaa", APIContent: strings.Repeat("b", 80)}, 10 + 20},
		{"tool rows ignore a sidecar", store.Message{Role: "tool", Content: "aaaa", APIContent: strings.Repeat("b", 80), ToolCallID: "c"}, 10 + 1},
		{"tool-call envelope", store.Message{Role: "assistant", ToolCalls: calls}, 10 + (len(envelope)+3)/4},
		{"reasoning fields", store.Message{Role: "assistant", Content: "abcd", Reasoning: strings.Repeat("r", 12), ReasoningDetails: details}, 10 + 1 + 3 + (len(details)+3)/4},
	}
	for _, c := range cases {
		if got := EstimateMessage(c.m); got != c.want {
			t.Errorf("%s: EstimateMessage = %d, want %d", c.name, got, c.want)
		}
	}
	all := make([]store.Message, len(cases))
	sum := 0
	for i, c := range cases {
		all[i] = c.m
		sum += c.want
	}
	if got := Estimate(all); got != sum {
		t.Errorf("Estimate = %d, want the sum %d", got, sum)
	}
}

func TestEstimateRequest(t *testing.T) {
	t.Parallel()
	req := provider.Request{
		System:   strings.Repeat("s", 400),
		Tools:    []provider.Tool{{Name: "abcd", Description: strings.Repeat("d", 8), Parameters: json.RawMessage(`{"type":"object"}`)}},
		Messages: []provider.Message{{Role: "user", Content: strings.Repeat("u", 40)}, {Role: "tool", Content: "abcd", ToolCallID: "x"}},
	}
	want := 100 + (1 + 2 + 5) + (10 + 10) + (10 + 1)
	if got := EstimateRequest(req); got != want {
		t.Errorf("EstimateRequest = %d, want %d", got, want)
	}
	// Wire and stored forms of the same message estimate alike.
	stored := []store.Message{{Role: "user", Content: "hello there", APIContent: "hello there\n\nctx"}}
	wire := []provider.Message{{Role: "user", Content: "hello there\n\nctx"}}
	if Estimate(stored) != EstimateWire(wire) {
		t.Errorf("stored %d != wire %d", Estimate(stored), EstimateWire(wire))
	}
}

func BenchmarkEstimate(b *testing.B) {
	history := make([]store.Message, 2000)
	for i := range history {
		history[i] = store.Message{Role: "assistant", Content: strings.Repeat("word ", 100),
			ToolCalls: []store.ToolCall{{ID: "c", Type: "function", Function: store.ToolFunction{Name: "t", Arguments: `{"a":1}`}}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		Estimate(history)
	}
}
