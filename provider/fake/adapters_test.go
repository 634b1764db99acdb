package fake_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/anthropic"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/provider/openai"
)

// The real adapters against the fake's HTTP wire: what spool's tests and benchmarks rely on.

type adapterCase struct {
	name   string
	writes bool // the provider reports cache writes (Anthropic) or not (OpenAI)
	make   func(t *testing.T, baseURL string) provider.Client
}

var adapterCases = []adapterCase{
	{"openai", false, func(t *testing.T, base string) provider.Client {
		c, err := openai.New(openai.Config{BaseURL: base + "/v1", APIKey: "sk-fake-adapter-test"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
	{"openai-responses", false, func(t *testing.T, base string) provider.Client {
		c, err := openai.New(openai.Config{BaseURL: base + "/v1", APIKey: "sk-fake-adapter-test", API: openai.APIResponses})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
	{"anthropic", true, func(t *testing.T, base string) provider.Client {
		c, err := anthropic.New(anthropic.Config{BaseURL: base, APIKey: "sk-ant-fake-adapter-test"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
}

func filler(tokens int) string {
	return strings.Repeat("Stable system prompt text that stays byte-identical. ", tokens*fake.BytesPerToken/52+1)
}

func TestAdaptersAgainstFake(t *testing.T) {
	t.Parallel()
	for _, ac := range adapterCases {
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(fake.New(fake.Config{}).Handler())
			t.Cleanup(srv.Close)
			client := ac.make(t, srv.URL)
			ctx := context.Background()
			tools := []provider.Tool{{Name: "read_file", Description: "Read a file",
				Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}}
			for _, stream := range []bool{false, true} {
				req := provider.Request{Model: "fake-model", System: filler(1500), Tools: tools, MaxTokens: 1000,
					Messages: []provider.Message{{Role: "user", Content: "Read both.\nCALL read_file {\"path\":\"go.mod\"}\nCALL read_file {\"path\":\"a b.go\"}"}}}
				if stream {
					req.Messages[0].Content += "\n(streamed)"
				}
				var deltas strings.Builder
				var onDelta func(provider.Delta)
				if stream {
					onDelta = func(d provider.Delta) { deltas.WriteString(d.Content) }
				}
				first, err := client.Chat(ctx, req, onDelta)
				if err != nil {
					t.Fatalf("stream=%v: %v", stream, err)
				}
				if first.FinishReason != "tool_calls" || len(first.ToolCalls) != 2 || first.ToolCalls[1].Function.Arguments != `{"path":"a b.go"}` {
					t.Fatalf("stream=%v: calls %+v", stream, first)
				}
				if first.Usage.InputTokens < 1500 || first.Usage.OutputTokens == 0 || (first.Usage.CacheWriteTokens > 0) != ac.writes {
					t.Errorf("stream=%v: usage %+v", stream, first.Usage)
				}
				req.Messages = append(req.Messages, provider.Message{Role: "assistant", ToolCalls: first.ToolCalls},
					provider.Message{Role: "tool", ToolCallID: first.ToolCalls[0].ID, ToolName: "read_file", Content: "module example"},
					provider.Message{Role: "tool", ToolCallID: first.ToolCalls[1].ID, ToolName: "read_file", Content: "package ab"})
				deltas.Reset()
				second, err := client.Chat(ctx, req, onDelta)
				if err != nil {
					t.Fatalf("stream=%v: after results: %v", stream, err)
				}
				if !strings.Contains(second.Content, `"module example"`) || !strings.Contains(second.Content, `"package ab"`) || second.FinishReason != "stop" {
					t.Errorf("stream=%v: answer %+v", stream, second)
				}
				if stream && deltas.String() != second.Content {
					t.Errorf("deltas %q, content %q", deltas.String(), second.Content)
				}
				// The second request extends the first: its prefix is read from the cache.
				if second.Usage.CacheReadTokens < 1024 || second.Usage.CacheReadTokens > second.Usage.InputTokens {
					t.Errorf("stream=%v: cache read %d of %d", stream, second.Usage.CacheReadTokens, second.Usage.InputTokens)
				}
			}
		})
	}
}

func TestAdaptersClassifyFakeFaults(t *testing.T) {
	t.Parallel()
	kinds := []fake.FaultKind{fake.FaultAuth, fake.FaultQuota, fake.FaultRateLimit, fake.FaultOverloaded,
		fake.FaultContextLength, fake.FaultBadRequest, fake.FaultServer, fake.FaultModelNotFound, fake.FaultCut}
	for _, ac := range adapterCases {
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(fake.New(fake.Config{}).Handler())
			t.Cleanup(srv.Close)
			client := ac.make(t, srv.URL)
			for _, kind := range kinds {
				for _, stream := range []bool{false, true} {
					req := provider.Request{Model: "fake-model", MaxTokens: 100,
						Messages: []provider.Message{{Role: "user", Content: "several words to stream before the cut\nFAULT " + string(kind)}}}
					var onDelta func(provider.Delta)
					if stream {
						onDelta = func(provider.Delta) {}
					}
					_, err := client.Chat(context.Background(), req, onDelta)
					want := fake.Fault{Kind: kind}.Class()
					if got := provider.ClassOf(err); got != want {
						t.Errorf("%s stream=%v: class %s, want %s (%v)", kind, stream, got, want, err)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := client.Chat(ctx, provider.Request{Model: "m", MaxTokens: 10,
				Messages: []provider.Message{{Role: "user", Content: "FAULT slow 10s"}}}, nil)
			if got := provider.ClassOf(err); got != provider.ClassTimeout {
				t.Errorf("slow: class %s (%v)", got, err)
			}
		})
	}
}
