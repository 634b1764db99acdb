package fake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/provider"
)

var _ provider.Client = (*Model)(nil)

var tools = []provider.Tool{{Name: "read_file", Description: "Read a file", Parameters: []byte(`{"type":"object"}`)}}

func userReq(text string) provider.Request {
	return provider.Request{Model: "fake", System: "You are spool.", Messages: []provider.Message{{Role: "user", Content: text}}, Tools: tools}
}

func TestChatIsDeterministicAndStreamsTheSameText(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	if m.Name() != "fake" {
		t.Errorf("Name %q", m.Name())
	}
	ctx := context.Background()
	a, err := m.Chat(ctx, userReq("What is spool?"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	b, err := New(Config{}).Chat(ctx, userReq("What is spool?"), func(d provider.Delta) { deltas = append(deltas, d.Content) })
	if err != nil {
		t.Fatal(err)
	}
	if a.Content != b.Content || a.Content == "" || strings.Join(deltas, "") != a.Content || len(deltas) < 2 {
		t.Errorf("plain %q, streamed %q in %d deltas", a.Content, strings.Join(deltas, ""), len(deltas))
	}
	if a.FinishReason != "stop" || a.Usage.InputTokens != int64(PromptTokens(userReq("What is spool?"))) || a.Usage.OutputTokens != int64(CountTokens(a.Content)) {
		t.Errorf("response %+v", a)
	}
}

func TestChatToolLoop(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	ctx := context.Background()
	req := userReq("Look at both.\nCALL read_file {\"path\":\"go.mod\"}\nCALL read_file {\"path\":\"main.go\"}")
	resp, err := m.Chat(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 2 || resp.ToolCalls[1].Function.Arguments != `{"path":"main.go"}` {
		t.Fatalf("calls %+v", resp)
	}
	req.Messages = append(req.Messages, provider.Message{Role: "assistant", ToolCalls: resp.ToolCalls},
		provider.Message{Role: "tool", ToolCallID: resp.ToolCalls[0].ID, Content: "module x"},
		provider.Message{Role: "tool", ToolCallID: resp.ToolCalls[1].ID, Content: "package main"})
	final, err := m.Chat(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.FinishReason != "stop" || !strings.Contains(final.Content, `read_file returned "module x"`) || !strings.Contains(final.Content, "package main") {
		t.Errorf("final %+v", final)
	}
	// A later turn's calls get fresh ids.
	req.Messages = append(req.Messages, provider.Message{Role: "assistant", Content: final.Content},
		provider.Message{Role: "user", Content: "CALL read_file {\"path\":\"go.mod\"}"})
	again, err := m.Chat(ctx, req, nil)
	if err != nil || len(again.ToolCalls) != 1 || again.ToolCalls[0].ID == resp.ToolCalls[0].ID {
		t.Errorf("second turn calls %+v (%v)", again.ToolCalls, err)
	}
	// A result for a call that was never made is refused, as providers do.
	bad := userReq("hi")
	bad.Messages = append(bad.Messages, provider.Message{Role: "tool", ToolCallID: "call_nope", Content: "x"})
	if _, err := m.Chat(ctx, bad, nil); provider.ClassOf(err) != provider.ClassBadRequest {
		t.Errorf("orphan result: %v", err)
	}
}

func TestChatFaultsCarryTheirClass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, kind := range []FaultKind{FaultAuth, FaultQuota, FaultRateLimit, FaultOverloaded, FaultContextLength, FaultBadRequest, FaultServer, FaultModelNotFound, FaultCut} {
		for _, how := range []string{"directive", "scheduled"} {
			m := New(Config{})
			req := userReq("a question with several words in it")
			if how == "directive" {
				req = userReq("a question with several words in it\nFAULT " + string(kind))
			} else {
				m.FailNext(1, Fault{Kind: kind})
			}
			var got []string
			_, err := m.Chat(ctx, req, func(d provider.Delta) { got = append(got, d.Content) })
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Class != (Fault{Kind: kind}).Class() || pe.Provider != "fake" {
				t.Errorf("%s by %s: %v", kind, how, err)
				continue
			}
			if kind == FaultCut && len(got) == 0 {
				t.Errorf("cut: no partial deltas before the error")
			}
			if kind != FaultCut && (pe.StatusCode == 0 || len(got) != 0) {
				t.Errorf("%s: status %d, deltas %q", kind, pe.StatusCode, got)
			}
			if how == "scheduled" {
				if _, err := m.Chat(ctx, req, nil); err != nil {
					t.Errorf("%s: the call after a scheduled fault failed: %v", kind, err)
				}
			}
		}
	}
	// Slow: a deadline shorter than the delay is a timeout.
	m := New(Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := m.Chat(ctx, userReq("hi\nFAULT slow 10s"), nil); provider.ClassOf(err) != provider.ClassTimeout {
		t.Errorf("slow: %v", err)
	}
	// The context window is enforced by itself.
	small := New(Config{ContextWindow: 100})
	if _, err := small.Chat(context.Background(), userReq(padding(200)), nil); provider.ClassOf(err) != provider.ClassContextLength {
		t.Errorf("over the window: %v", err)
	}
}

func TestChatMaxTokensCutsWithLength(t *testing.T) {
	t.Parallel()
	req := userReq("SAY " + strings.Repeat("word ", 50))
	req.MaxTokens = 5
	resp, err := New(Config{}).Chat(context.Background(), req, nil)
	if err != nil || resp.FinishReason != "length" || len(resp.Content) != 5*BytesPerToken || resp.Usage.OutputTokens != 5 {
		t.Errorf("%+v %v", resp, err)
	}
}

func TestChatCacheStyles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	long := provider.Request{Model: "fake", System: padding(1500), Messages: []provider.Message{{Role: "user", Content: "hi"}}}
	for _, tc := range []struct {
		style      CacheStyle
		read, wrot bool
	}{{CacheOpenAI, true, false}, {CacheAnthropic, true, true}, {CacheNone, false, false}} {
		clock := NewManualClock(epoch)
		m := New(Config{InProcessCache: tc.style, Now: clock.Now})
		first, err := m.Chat(ctx, long, nil)
		if err != nil {
			t.Fatal(err)
		}
		grown := long
		grown.Messages = append(append([]provider.Message{}, long.Messages...), provider.Message{Role: "assistant", Content: first.Content}, provider.Message{Role: "user", Content: "more"})
		second, err := m.Chat(ctx, grown, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := second.Usage.CacheReadTokens > 0; got != tc.read {
			t.Errorf("%s: second read %d", tc.style, second.Usage.CacheReadTokens)
		}
		if got := first.Usage.CacheWriteTokens > 0; got != tc.wrot {
			t.Errorf("%s: first wrote %d", tc.style, first.Usage.CacheWriteTokens)
		}
		s := m.Stats()
		if s.Requests != 2 || s.PromptTokens != first.Usage.InputTokens+second.Usage.InputTokens || s.CachedTokens != second.Usage.CacheReadTokens {
			t.Errorf("%s: stats %+v", tc.style, s)
		}
		clock.Advance(10 * time.Minute)
		if third, _ := m.Chat(ctx, grown, nil); third.Usage.CacheReadTokens != 0 {
			t.Errorf("%s: read %d after the TTL", tc.style, third.Usage.CacheReadTokens)
		}
	}
}

func TestParseFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Fault
		err  bool
	}{
		{"rate_limit", Fault{Kind: FaultRateLimit}, false},
		{"slow 2s", Fault{Kind: FaultSlow, Delay: 2 * time.Second}, false},
		{"slow:150ms", Fault{Kind: FaultSlow, Delay: 150 * time.Millisecond}, false},
		{"network", Fault{Kind: FaultCut}, false},
		{"timeout", Fault{Kind: FaultSlow, Delay: 2 * time.Second}, false},
		{"slow forever", Fault{}, true},
		{"explode", Fault{}, true},
		{"cut 3", Fault{}, true},
		{"", Fault{}, true},
	}
	for _, tc := range tests {
		got, err := ParseFault(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseFault(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// WAIT holds calls until the barrier's count arrived: two calls in flight at once pass it, one
// alone waits until its context ends.
func TestWaitBarrier(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	ctx := context.Background()
	ask := func(ctx context.Context, text string) (provider.Response, error) {
		return m.Chat(ctx, provider.Request{Model: "fake", Messages: []provider.Message{{Role: "user", Content: text}}}, nil)
	}
	done := make(chan string, 2)
	for _, s := range []string{"one", "two"} {
		go func() {
			r, err := ask(ctx, "WAIT pair 2\nSAY "+s)
			if err != nil {
				done <- err.Error()
				return
			}
			done <- r.Content
		}()
	}
	got := map[string]bool{<-done: true, <-done: true}
	if !got["one"] || !got["two"] {
		t.Fatalf("answers = %v", got)
	}
	if err := m.AwaitBarrier(ctx, "pair", 2); err != nil {
		t.Fatal(err)
	}
	lone, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := ask(lone, "WAIT alone 2\nSAY never"); errc <- err }()
	if err := m.AwaitBarrier(ctx, "alone", 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("a call alone at its barrier ended with %v, want context.Canceled", err)
	}
	if r, err := ask(ctx, "WAIT bad\nSAY x"); err != nil || !strings.Contains(r.Content, "could not follow") {
		t.Fatalf("malformed WAIT: %q, %v", r.Content, err)
	}
}

// REPEAT makes one turn run its CALL lines for n rounds, then answer.
func TestRepeatRounds(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	msgs := []provider.Message{{Role: "user", Content: "REPEAT 3\nCALL read_file {\"path\":\"a\"}"}}
	var ids []string
	for round := 0; ; round++ {
		r, err := m.Chat(context.Background(), provider.Request{Model: "fake", Messages: msgs, Tools: tools}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ToolCalls) == 0 {
			if round != 3 || !strings.HasPrefix(r.Content, "Tool results:") {
				t.Fatalf("answered %q after %d rounds, want after 3", r.Content, round)
			}
			break
		}
		if round >= 3 {
			t.Fatal("more than 3 rounds")
		}
		ids = append(ids, r.ToolCalls[0].ID)
		msgs = append(msgs, provider.Message{Role: "assistant", ToolCalls: r.ToolCalls},
			provider.Message{Role: "tool", ToolCallID: r.ToolCalls[0].ID, Content: "contents"})
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("call ids repeat across rounds: %v", ids)
	}
}
