package fake_test

import (
	"bytes"
	"context"
	"net/http/httptest"
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
