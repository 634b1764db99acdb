package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/provider"
)

// OpenRouter streams reasoning_details in pieces inside Chat Completions deltas (its documented
// shape: items typed reasoning.text / reasoning.summary / reasoning.encrypted with an index; no
// recorded OpenRouter stream is in the fixtures, so this one is synthetic). The pieces are
// assembled into one array, stored with the answer, and the next request replays those bytes
// exactly — streamed whole or cut into 7-byte writes.
func TestStreamedReasoningDetailsAssembledAndReplayed(t *testing.T) {
	t.Parallel()
	chunks := []string{
		`{"id":"gen-1","object":"chat.completion.chunk","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Let me ","reasoning_details":[{"type":"reasoning.text","text":"Let me ","format":"anthropic-claude-v1","index":0,"signature":null}]}}]}`,
		`{"id":"gen-1","object":"chat.completion.chunk","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"content":"","reasoning":"check <a&b>.","reasoning_details":[{"type":"reasoning.text","text":"check <a&b>.","format":"anthropic-claude-v1","index":0}]}}]}`,
		`{"id":"gen-1","object":"chat.completion.chunk","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"content":"","reasoning_details":[{"type":"reasoning.text","text":"","signature":"EqQBCkgIBRAB","format":"anthropic-claude-v1","index":0}]}}]}`,
		`{"id":"gen-1","object":"chat.completion.chunk","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"content":"","reasoning_details":[{"type":"reasoning.encrypted","data":"gAAAA","id":"rs_1","format":"openai-responses-v1","index":1}]}}]}`,
		`{"id":"gen-1","object":"chat.completion.chunk","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"content":"","reasoning_details":[{"type":"reasoning.encrypted","data":"BBBB","index":1}]}}]}`,
		`{"id":"gen-1","object":"chat.completion.chunk","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"content":"It is 42."}}]}`,
		`{"id":"gen-1","object":"chat.completion.chunk","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}`,
	}
	var sse strings.Builder
	for _, c := range chunks {
		sse.WriteString("data: " + c + "\n\n")
	}
	sse.WriteString("data: [DONE]\n\n")
	want := `[{"type":"reasoning.text","text":"Let me check \u003ca\u0026b\u003e.","format":"anthropic-claude-v1","index":0,"signature":"EqQBCkgIBRAB"},` +
		`{"type":"reasoning.encrypted","data":"gAAAABBBB","id":"rs_1","format":"openai-responses-v1","index":1}]`
	for _, chunk := range []int{0, 7} {
		var mu sync.Mutex
		var bodies [][]byte
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			data := []byte(sse.String())
			for len(data) > 0 {
				n := len(data)
				if chunk > 0 && n > chunk {
					n = chunk
				}
				w.Write(data[:n])
				w.(http.Flusher).Flush()
				data = data[n:]
			}
		}))
		c, err := New(Config{BaseURL: srv.URL + "/api/v1", APIKey: "sk-or-test"})
		if err != nil {
			t.Fatal(err)
		}
		req := provider.Request{Model: "anthropic/claude-sonnet-4.5", Temperature: -1, Messages: []provider.Message{{Role: "user", Content: "What is 6 x 7?"}}}
		resp, err := c.Chat(context.Background(), req, func(provider.Delta) {})
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.ReasoningDetails) != want || resp.Reasoning != "Let me check <a&b>." || resp.Content != "It is 42." {
			t.Fatalf("chunk %d: reasoning_details\n got %s\nwant %s\n(reasoning %q, content %q)", chunk, resp.ReasoningDetails, want, resp.Reasoning, resp.Content)
		}
		req.Messages = append(req.Messages, provider.Message{Role: "assistant", Content: resp.Content, ReasoningDetails: resp.ReasoningDetails},
			provider.Message{Role: "user", Content: "And 7 x 8?"})
		if _, err := c.Chat(context.Background(), req, func(provider.Delta) {}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		second := bodies[1]
		mu.Unlock()
		if !bytes.Contains(second, []byte(`"reasoning_details":`+want)) {
			t.Errorf("chunk %d: the next request does not replay the stored bytes:\n%s", chunk, second)
		}
		srv.Close()
	}
}

func TestDetailsAssemblerRejectsMalformed(t *testing.T) {
	t.Parallel()
	var a detailsAssembler
	for _, bad := range []string{`{"type":"reasoning.text"}`, `[1]`, `["x"]`} {
		if err := a.add(bad); err == nil {
			t.Errorf("add(%s) accepted", bad)
		}
	}
}
