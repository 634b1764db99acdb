package fake_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/provider/openai"
)

// The fake's Responses wire hands out a reasoning item with encrypted content, accepts it back
// before its function call, and refuses it (the real 400) when the encrypted content is missing.
func TestResponsesWireReasoningReplay(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(fake.New(fake.Config{}).Handler())
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-fake", API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		var onDelta func(provider.Delta)
		if stream {
			onDelta = func(provider.Delta) {}
		}
		req := provider.Request{Model: "fake-model", System: "sys", Temperature: -1,
			Tools: []provider.Tool{{Name: "read_file", Description: "Read a file",
				Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
			Messages: []provider.Message{{Role: "user", Content: "CALL read_file {\"path\":\"go.mod\"}"}}}
		first, err := c.Chat(context.Background(), req, onDelta)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.ToolCalls) != 1 || !bytes.Contains(first.ReasoningDetails, []byte(`"encrypted_content":"gAAAAAB`)) {
			t.Fatalf("stream=%v: turn 1 %+v", stream, first)
		}
		req.Messages = append(req.Messages,
			provider.Message{Role: "assistant", ToolCalls: first.ToolCalls, ReasoningDetails: first.ReasoningDetails},
			provider.Message{Role: "tool", ToolCallID: first.ToolCalls[0].ID, Content: "module example"})
		second, err := c.Chat(context.Background(), req, onDelta)
		if err != nil || second.Content == "" {
			t.Fatalf("stream=%v: turn 2: %+v, %v", stream, second, err)
		}
		req.Messages[1].ReasoningDetails = bytes.Replace(first.ReasoningDetails, []byte(`"encrypted_content":"gAAAAAB`), []byte(`"x":"`), 1)
		if _, err := c.Chat(context.Background(), req, onDelta); provider.ClassOf(err) != provider.ClassBadRequest {
			t.Errorf("stream=%v: reasoning without encrypted content: err = %v, want bad_request", stream, err)
		}
	}
}

// The Responses wire caches what the model generated as the continuation of its prompt: the
// next request that replays the answer (its reasoning item included) byte for byte reads the
// answer from the cache; one that drops the reasoning reads only the earlier prompt. The fake's
// count of a request is fake.ResponsesPromptTokens (what the cache benchmark's ceiling uses),
// replayed assistant text included.
func TestResponsesWireCachesGeneratedReasoning(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(fake.New(fake.Config{}).Handler())
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-fake", API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := provider.Request{Model: "fake-model", System: strings.Repeat("project rules. ", 400), Temperature: -1,
		Messages: []provider.Message{{Role: "user", Content: "SAY first answer"}}}
	first, err := c.Chat(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	p1 := first.Usage.InputTokens
	if want := int64(fake.ResponsesPromptTokens(req)); p1 != want {
		t.Fatalf("first prompt %d tokens, ResponsesPromptTokens says %d", p1, want)
	}
	answer := provider.Message{Role: "assistant", Content: first.Content, ReasoningDetails: first.ReasoningDetails}
	replay := req
	replay.Messages = append(append([]provider.Message(nil), req.Messages...), answer, provider.Message{Role: "user", Content: "SAY second"})
	dropped := replay
	dropped.Messages = append([]provider.Message(nil), replay.Messages...)
	dropped.Messages[1].ReasoningDetails = nil

	// Dropped first (so the replay cannot be helped by it).
	off, err := c.Chat(ctx, dropped, nil)
	if err != nil {
		t.Fatal(err)
	}
	on, err := c.Chat(ctx, replay, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(fake.ResponsesPromptTokens(replay)); on.Usage.InputTokens != want {
		t.Errorf("replayed prompt %d tokens, ResponsesPromptTokens says %d", on.Usage.InputTokens, want)
	}
	if off.Usage.CacheReadTokens > p1 {
		t.Errorf("without the reasoning %d tokens were read from the cache, more than the first prompt (%d)", off.Usage.CacheReadTokens, p1)
	}
	// The reasoning item alone is about 400 tokens: the replay reads through it.
	if on.Usage.CacheReadTokens < p1+300 {
		t.Errorf("with the reasoning replayed %d tokens were read from the cache, want the first prompt (%d) and the answer", on.Usage.CacheReadTokens, p1)
	}
}
