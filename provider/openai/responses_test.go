package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/internal/replay"
	"github.com/spoolhq/spool/provider/openai"
	"github.com/spoolhq/spool/store"
)

var update = flag.Bool("update", false, "rewrite golden files")

func newResponsesClient(t *testing.T, srv *replay.Server) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", HTTPClient: srv.Client(), API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func rfix(name string) string { return "responses/" + name }

// reasoningItems decodes Response.ReasoningDetails as the adapter writes it.
func reasoningItems(t *testing.T, details json.RawMessage) []map[string]any {
	t.Helper()
	if len(details) == 0 {
		return nil
	}
	var items []map[string]any
	if err := json.Unmarshal(details, &items); err != nil {
		t.Fatalf("ReasoningDetails %s: %v", details, err)
	}
	return items
}

func TestResponsesNonStreamFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture       string
		model         string
		contentPrefix string
		reasonPrefix  string
		usage         provider.Usage
		items         []string // types kept in ReasoningDetails
		encrypted     bool
	}{
		{"01a-nonstream-reasoning-summary-message.json", "gpt-5-2025-08-07", "3", `**Counting prime numbers with "79"**`,
			provider.Usage{InputTokens: 32, OutputTokens: 1095, ReasoningTokens: 1088}, []string{"reasoning", "message"}, false},
		{"01b-nonstream-reasoning-encrypted-content.RESERIALIZED.json", "gpt-5-mini-2025-08-07", "12 + 7 = 19\n19 × 3 = 57", "**Reporting final result**",
			provider.Usage{InputTokens: 865, OutputTokens: 163, ReasoningTokens: 128}, []string{"reasoning", "message"}, true},
		{"01c-nonstream-cached-tokens.json", "gpt-4o-2024-08-06", `"I have altered the deal.`, "",
			provider.Usage{InputTokens: 3763, OutputTokens: 44, CacheReadTokens: 3584}, nil, false},
	}
	for _, tt := range tests {
		for _, chunk := range []int{0, 5} {
			t.Run(tt.fixture+"/chunk"+strconv.Itoa(chunk), func(t *testing.T) {
				t.Parallel()
				resp := replay.Load(t, rfix(tt.fixture))
				resp.ChunkSize = chunk
				// The recorded body is stored gzip-decoded (SOURCES.md).
				resp.Header.Del("Content-Encoding")
				srv := replay.Serve(t, resp)
				got, err := newResponsesClient(t, srv).Chat(context.Background(), userReq("hi"), nil)
				if err != nil {
					t.Fatal(err)
				}
				if got.Model != tt.model || !strings.HasPrefix(got.Content, tt.contentPrefix) || got.FinishReason != "stop" ||
					!strings.HasPrefix(got.Reasoning, tt.reasonPrefix) || got.Usage != tt.usage {
					t.Errorf("got %+v", got)
				}
				if tt.reasonPrefix == "" && got.Reasoning != "" {
					t.Errorf("reasoning %q, want none", got.Reasoning)
				}
				items := reasoningItems(t, got.ReasoningDetails)
				var types []string
				for _, it := range items {
					types = append(types, it["type"].(string))
				}
				if !reflect.DeepEqual(types, tt.items) {
					t.Errorf("kept items %v, want %v", types, tt.items)
				}
				if tt.encrypted && !strings.HasPrefix(items[0]["encrypted_content"].(string), "gAAAAAB") {
					t.Errorf("encrypted_content not kept: %v", items[0])
				}
				req := srv.Requests()[0]
				if req.Path != "/v1/responses" {
					t.Errorf("path %s", req.Path)
				}
				for _, want := range []string{`"store":false`, `"include":["reasoning.encrypted_content"]`, `"instructions":"sys"`} {
					if !bytes.Contains(req.Body, []byte(want)) {
						t.Errorf("request lacks %s: %s", want, req.Body)
					}
				}
				if bytes.Contains(req.Body, []byte(`"stream"`)) {
					t.Errorf("non-stream request asks for a stream: %s", req.Body)
				}
			})
		}
	}
}

func TestResponsesStreamFixtures(t *testing.T) {
	t.Parallel()
	calc := store.ToolCall{ID: "call_AB6AaRZ1FYZB2RwS6A5vbdqn", Type: "function",
		Function: store.ToolFunction{Name: "calculator", Arguments: `{"a":12,"b":7,"op":"add"}`}}
	tests := []struct {
		fixture   string
		content   string
		calls     []store.ToolCall
		usage     provider.Usage
		items     []string
		reasoning bool // summary deltas streamed
	}{
		{"02-stream-text.sse", "", nil, provider.Usage{InputTokens: 16, OutputTokens: 11}, nil, false},
		{"03a-stream-function-call.sse", "", []store.ToolCall{{ID: "call_sNntVegw8ViC8Zc4EIjqEKbo", Type: "function",
			Function: store.ToolFunction{Name: "simple_tool", Arguments: `{"number":"5"}`}}},
			provider.Usage{InputTokens: 46, OutputTokens: 148, ReasoningTokens: 128}, []string{"reasoning", "function_call"}, false},
		{"04b-stream-reasoning-summary-encrypted-function-call.step1.RECONSTRUCTED.sse", "", []store.ToolCall{calc},
			provider.Usage{InputTokens: 134, OutputTokens: 28}, []string{"reasoning", "function_call"}, true},
	}
	for _, tt := range tests {
		for _, chunk := range []int{0, 5, 7} {
			t.Run(tt.fixture+"/chunk"+strconv.Itoa(chunk), func(t *testing.T) {
				t.Parallel()
				resp := replay.Load(t, rfix(tt.fixture))
				resp.ChunkSize = chunk
				srv := replay.Serve(t, resp)
				var deltas provider.Delta
				got, err := newResponsesClient(t, srv).Chat(context.Background(), userReq("hi"), func(d provider.Delta) {
					deltas.Content += d.Content
					deltas.Reasoning += d.Reasoning
				})
				if err != nil {
					t.Fatal(err)
				}
				if got.Content != deltas.Content || got.Reasoning != deltas.Reasoning {
					t.Errorf("final %q/%q differs from the deltas %q/%q", got.Content, got.Reasoning, deltas.Content, deltas.Reasoning)
				}
				if tt.calls == nil && !strings.HasPrefix(got.Content, "4200 + 42 equ") {
					t.Errorf("content %q", got.Content)
				}
				if tt.reasoning != (got.Reasoning != "") {
					t.Errorf("reasoning %q", got.Reasoning)
				}
				if !reflect.DeepEqual(got.ToolCalls, tt.calls) || got.Usage != tt.usage {
					t.Errorf("calls %+v usage %+v", got.ToolCalls, got.Usage)
				}
				wantFinish := "stop"
				if tt.calls != nil {
					wantFinish = "tool_calls"
				}
				if got.FinishReason != wantFinish {
					t.Errorf("finish %q", got.FinishReason)
				}
				var types []string
				for _, it := range reasoningItems(t, got.ReasoningDetails) {
					types = append(types, it["type"].(string))
				}
				if !reflect.DeepEqual(types, tt.items) {
					t.Errorf("kept items %v, want %v", types, tt.items)
				}
				if !bytes.Contains(srv.Requests()[0].Body, []byte(`"stream":true`)) {
					t.Errorf("request lacks stream:true")
				}
			})
		}
	}
}

// A stream that ends without response.completed is cut, whether the server closes cleanly after
// the last delta or the connection drops mid-event.
func TestResponsesStreamCut(t *testing.T) {
	t.Parallel()
	full := replay.Load(t, rfix("02-stream-text.sse"))
	i := bytes.Index(full.Body, []byte("event: response.completed"))
	if i < 0 {
		t.Fatal("fixture has no response.completed")
	}
	clean := full
	clean.Body = full.Body[:i]
	dropped := full
	dropped.CutAfter = i + 40
	for name, resp := range map[string]replay.Response{"clean-eof": clean, "dropped": dropped} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := replay.Serve(t, resp)
			var streamed string
			got, err := newResponsesClient(t, srv).Chat(context.Background(), userReq("hi"), func(d provider.Delta) { streamed += d.Content })
			if provider.ClassOf(err) != provider.ClassNetwork {
				t.Fatalf("err = %v, want a network-class cut", err)
			}
			if got.Content == "" || got.Content != streamed {
				t.Errorf("partial content %q, streamed %q", got.Content, streamed)
			}
		})
	}
}

func TestResponsesErrorFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture    string
		status     int // overrides the recorded status (0: keep)
		wantClass  provider.Class
		wantStatus int
		wantMsg    string
	}{
		{"06a-error-401-invalid-api-key.json", 0, provider.ClassAuth, 401, "Incorrect API key provided"},
		{"06b-error-400-model-not-found.json", 0, provider.ClassModelNotFound, 400, "The requested model"},
		{"06c-error-400-reasoning-without-following-item.RECONSTRUCTED.json", 400, provider.ClassBadRequest, 400, "Item 'rs_"},
		{"06d-error-429-insufficient-quota.RESERIALIZED.json", 429, provider.ClassQuota, 429, "You exceeded your current quota"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			resp := replay.Load(t, rfix(tt.fixture))
			if tt.status != 0 {
				resp.Status = tt.status
			}
			srv := replay.Serve(t, resp)
			for _, stream := range []bool{false, true} {
				var onDelta func(provider.Delta)
				if stream {
					onDelta = func(provider.Delta) { t.Error("delta on an error response") }
				}
				_, err := newResponsesClient(t, srv).Chat(context.Background(), userReq("hi"), onDelta)
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("stream=%v: err = %v, want *provider.Error", stream, err)
				}
				if pe.Class != tt.wantClass || pe.StatusCode != tt.wantStatus || !strings.HasPrefix(pe.Message, tt.wantMsg) {
					t.Errorf("stream=%v: got %+v", stream, pe)
				}
				if strings.Contains(err.Error(), "sk-test") {
					t.Errorf("error shows the key: %v", err)
				}
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("server saw %d requests, want 2 (no SDK retries)", n)
			}
		})
	}
}

// In-stream failures: the recorded context-overflow error event, a response.failed, and the
// older error-event shape with code and message at the top level.
func TestResponsesStreamErrorEvents(t *testing.T) {
	t.Parallel()
	overflow, err := os.ReadFile(filepath.Join("testdata", "responses", "06f-stream-error-event-context-length-exceeded.TRANSCRIBED.json"))
	if err != nil {
		t.Fatal(err)
	}
	head := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"model\":\"gpt-5.2\",\"status\":\"in_progress\",\"output\":[]}}\n\n"
	tests := []struct {
		name      string
		body      string
		wantClass provider.Class
		wantMsg   string
	}{
		{"context-length", head + "event: error\ndata: " + string(overflow) + "\n\n", provider.ClassContextLength, "Your input exceeds the context window"},
		{"failed-rate-limit", head + `event: response.failed
data: {"type":"response.failed","sequence_number":1,"response":{"status":"failed","output":[],"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for gpt-5 on tokens per min (TPM). Please try again in 1.5s."}}}

`, provider.ClassRateLimit, "Rate limit reached"},
		{"failed-server", head + `event: response.failed
data: {"type":"response.failed","sequence_number":1,"response":{"status":"failed","output":[],"error":{"code":"server_error","message":"The server had an error processing your request."}}}

`, provider.ClassServer, "The server had an error"},
		{"flat-error-event", head + "event: error\ndata: {\"type\":\"error\",\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\",\"param\":\"input\",\"sequence_number\":1}\n\n", provider.ClassContextLength, "Your input exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := replay.Serve(t, replay.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(tt.body), ChunkSize: 6})
			_, err := newResponsesClient(t, srv).Chat(context.Background(), userReq("hi"), func(provider.Delta) {})
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Class != tt.wantClass || !strings.HasPrefix(pe.Message, tt.wantMsg) {
				t.Fatalf("err = %+v, want class %s", err, tt.wantClass)
			}
		})
	}
}

// The request mirrors the recorded one (03a): same input, model and function tool, plus the
// stateless-reasoning members spool always sends.
func TestResponsesRequestMatchesRecording(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("testdata", "responses", "03a-stream-function-call.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := replay.Serve(t, replay.Load(t, rfix("03a-stream-function-call.sse")))
	req := provider.Request{Model: "gpt-5-mini", Temperature: -1,
		Messages: []provider.Message{{Role: "user", Content: "Call simple_tool passing 5"}},
		Tools: []provider.Tool{{Name: "simple_tool", Description: "A simple tool",
			Parameters: json.RawMessage(`{"properties":{"number":{"type":"string"}},"required":["number"],"type":"object"}`)}}}
	if _, err := newResponsesClient(t, srv).Chat(context.Background(), req, func(provider.Delta) {}); err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(srv.Requests()[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(src, &want); err != nil {
		t.Fatal(err)
	}
	want["store"] = false
	want["include"] = []any{"reasoning.encrypted_content"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request\n got %v\nwant %v", got, want)
	}
}

// Two turns with reasoning replay: turn 1's reasoning item (with encrypted content) goes back in
// turn 2 byte for byte, before the function call it belongs to, and the turn-2 body equals the
// golden file. A client built afresh from the stored history (a resumed session) sends the same
// bytes.
func TestResponsesReasoningReplayGolden(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t,
		replay.Load(t, rfix("04b-stream-reasoning-summary-encrypted-function-call.step1.RECONSTRUCTED.sse")),
		replay.Load(t, rfix("02-stream-text.sse")),
		replay.Load(t, rfix("02-stream-text.sse")))
	tools := []provider.Tool{{Name: "calculator", Description: "Basic arithmetic",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"op":{"type":"string"}},"required":["a","b","op"]}`)}}
	req := provider.Request{Model: "gpt-5.1-codex-max", System: "You are a calculator.", Temperature: -1, Tools: tools,
		Messages: []provider.Message{{Role: "user", Content: "What is (12 + 7) * 3 * 10?"}}}
	c := newResponsesClient(t, srv)
	r1, err := c.Chat(context.Background(), req, func(provider.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	items := reasoningItems(t, r1.ReasoningDetails)
	if len(items) != 2 || items[0]["encrypted_content"] == nil || len(r1.ToolCalls) != 1 {
		t.Fatalf("turn 1: %+v", r1)
	}
	// What the agent stores with the assistant message, then the tool result.
	req.Messages = append(req.Messages,
		provider.Message{Role: "assistant", Content: r1.Content, ToolCalls: r1.ToolCalls, Reasoning: r1.Reasoning, ReasoningDetails: r1.ReasoningDetails},
		provider.Message{Role: "tool", ToolCallID: r1.ToolCalls[0].ID, ToolName: "calculator", Content: "19"})
	if _, err := c.Chat(context.Background(), req, func(provider.Delta) {}); err != nil {
		t.Fatal(err)
	}
	// Resume: the stored details come back from the database as the same bytes; a new client.
	stored := append(json.RawMessage(nil), r1.ReasoningDetails...)
	req.Messages[1].ReasoningDetails = stored
	if _, err := newResponsesClient(t, srv).Chat(context.Background(), req, func(provider.Delta) {}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	turn2 := reqs[1].Body
	if !bytes.Equal(turn2, reqs[2].Body) {
		t.Errorf("resumed request differs:\n%s\n%s", turn2, reqs[2].Body)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(r1.ReasoningDetails, &raws); err != nil {
		t.Fatal(err)
	}
	ri := bytes.Index(turn2, raws[0])
	fi2 := bytes.Index(turn2, []byte(`"id":"fc_01830d662ab3856501693c32151234819091cfca267e98cc5f"`))
	oi := bytes.Index(turn2, []byte(`{"output":"19","call_id":"call_AB6AaRZ1FYZB2RwS6A5vbdqn","type":"function_call_output"}`))
	if ri < 0 || fi2 < 0 || oi < 0 || !(ri < fi2 && fi2 < oi) {
		t.Errorf("turn 2 lacks reasoning(%d) < function_call(%d) < output(%d) in order:\n%s", ri, fi2, oi, turn2)
	}
	golden := filepath.Join("testdata", "responses", "golden-turn2-reasoning-replay.request.json")
	if *update {
		if err := os.WriteFile(golden, turn2, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(turn2, want) {
		t.Errorf("turn 2 body differs from %s:\n got %s\nwant %s", golden, turn2, want)
	}
}

func TestResponsesBadConfigAndRequest(t *testing.T) {
	t.Parallel()
	if _, err := openai.New(openai.Config{API: "assistants"}); err == nil || !strings.Contains(err.Error(), `"assistants"`) {
		t.Errorf("bad API accepted: %v", err)
	}
	srv := replay.Serve(t, replay.Load(t, rfix("02-stream-text.sse")))
	c := newResponsesClient(t, srv)
	for _, req := range []provider.Request{
		{Messages: []provider.Message{{Role: "user", Content: "x"}}},
		{Model: "m", Messages: []provider.Message{{Role: "system", Content: "x"}}},
		{Model: "m", Messages: []provider.Message{{Role: "tool", Content: "x"}}},
	} {
		if _, err := c.Chat(context.Background(), req, nil); provider.ClassOf(err) != provider.ClassBadRequest {
			t.Errorf("%+v: err = %v", req, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("bad requests reached the server %d times", n)
	}
}

// Stored reasoning items are sent as stored, even with characters an HTML-safe JSON encoder
// would escape; items from other providers (OpenRouter's reasoning.* details) are not sent.
func TestResponsesReplayIsByteExact(t *testing.T) {
	t.Parallel()
	item := `{"id":"rs_1","type":"reasoning","encrypted_content":"gAAA+/=","summary":[{"type":"summary_text","text":"a<b && c>d \u00e9 é"}]}`
	tests := []struct {
		name    string
		details string
		want    bool
	}{
		{"responses", `[` + item + `,{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"old","annotations":[]}]}]`, true},
		{"openrouter", `[{"type":"reasoning.encrypted","data":"abc=="}]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := replay.Serve(t, replay.Load(t, rfix("02-stream-text.sse")))
			req := userReq("q")
			req.Messages = append(req.Messages,
				provider.Message{Role: "assistant", Content: "answer", ReasoningDetails: json.RawMessage(tt.details)},
				provider.Message{Role: "user", Content: "next"})
			if _, err := newResponsesClient(t, srv).Chat(context.Background(), req, func(provider.Delta) {}); err != nil {
				t.Fatal(err)
			}
			body := srv.Requests()[0].Body
			if got := bytes.Contains(body, []byte(item)); got != tt.want {
				t.Errorf("item sent byte for byte = %v, want %v: %s", got, tt.want, body)
			}
			if bytes.Contains(body, []byte("reasoning.encrypted\"")) || bytes.Contains(body, []byte(`"old"`)) {
				t.Errorf("foreign details or stale text sent: %s", body)
			}
			wantMsg := `{"content":"answer","role":"assistant"}`
			if tt.want {
				wantMsg = `"id":"msg_1"`
			}
			if !bytes.Contains(body, []byte(wantMsg)) || !bytes.Contains(body, []byte(`"answer"`)) {
				t.Errorf("assistant text not sent as %s: %s", wantMsg, body)
			}
		})
	}
}
