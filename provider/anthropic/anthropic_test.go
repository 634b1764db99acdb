package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/anthropic"
	"github.com/spoolhq/spool/provider/internal/replay"
	"github.com/spoolhq/spool/store"
)

func newClient(t *testing.T, srv *replay.Server, key string) *anthropic.Client {
	t.Helper()
	c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: key, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userReq(text string) provider.Request {
	return provider.Request{Model: "claude-sonnet-4-5-20250929", System: "sys", Temperature: -1,
		Messages: []provider.Message{{Role: "user", Content: text}}}
}

func TestNonStreamFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		want    provider.Response
	}{
		{"06-messages-nonstream-cache-read.json", provider.Response{
			Model: "claude-sonnet-4-5-20250929", Content: "Hello!", FinishReason: "stop",
			Usage: provider.Usage{InputTokens: 3 + 1217, OutputTokens: 5, CacheReadTokens: 1217},
		}},
		// Re-serialized (not byte-exact) but the only recording with both cache counters set.
		{"06b-messages-nonstream-cache-write-and-read.RESERIALIZED.json", provider.Response{
			Model:        "claude-sonnet-4-5-20250929",
			Content:      "Python is a beginner-friendly, versatile programming language widely used for web development, data science, machine learning, automation, and scientific computing.",
			FinishReason: "stop",
			Usage:        provider.Usage{InputTokens: 3 + 1111 + 418, OutputTokens: 33, CacheReadTokens: 1111, CacheWriteTokens: 418},
		}},
		{"07-messages-nonstream-tool-use-cache-read.json", provider.Response{
			Model: "claude-sonnet-4-5-20250929", FinishReason: "tool_calls",
			ToolCalls: []store.ToolCall{{ID: "toolu_01CX1yZuJ5MQaJbXNSrnCiqf", Type: "function",
				Function: store.ToolFunction{Name: "get_weather", Arguments: `{"location":"Tokyo"}`}}},
			Usage: provider.Usage{InputTokens: 24 + 1857, OutputTokens: 33, CacheReadTokens: 1857},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			srv := replay.Serve(t, replay.Load(t, tt.fixture))
			got, err := newClient(t, srv, "sk-ant-test").Chat(context.Background(), userReq("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Path != "/v1/messages" {
				t.Fatalf("requests = %+v", reqs)
			}
			h := reqs[0].Header
			if h.Get("X-Api-Key") != "sk-ant-test" || h.Get("Anthropic-Version") == "" || h.Get("Authorization") != "" {
				t.Errorf("auth headers: x-api-key=%q anthropic-version=%q authorization=%q",
					h.Get("X-Api-Key"), h.Get("Anthropic-Version"), h.Get("Authorization"))
			}
			if bytes.Contains(reqs[0].Body, []byte(`"stream"`)) {
				t.Errorf("non-streaming request mentions stream: %s", reqs[0].Body)
			}
		})
	}
}

// thinkingStream is synthetic: no recording with thinking blocks was found (SOURCES.md). Its
// event shapes follow the documented extended-thinking stream.
const thinkingStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_t","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Two plus "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"two is four."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"4"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":30}}

event: message_stop
data: {"type":"message_stop"}

`

const thinkingDetails = `[{"type":"thinking","thinking":"Two plus two is four.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}]`

func TestStreamFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture    string
		body       string // synthetic body instead of a fixture
		want       provider.Response
		wantDeltas provider.Delta
	}{
		// Trailing-space padded JSON, a ping with a space, usage repeated in message_delta.
		{fixture: "08a-messages-stream-text-cache-read.sse", want: provider.Response{
			Model: "claude-sonnet-4-5-20250929", Content: "Hello", FinishReason: "stop",
			Usage: provider.Usage{InputTokens: 3 + 1217, OutputTokens: 4, CacheReadTokens: 1217},
		}, wantDeltas: provider.Delta{Content: "Hello"}},
		// input_json_delta split mid-key, "caller" in the block, and no trailing newline.
		{fixture: "08b-messages-stream-tool-use-input-json-delta.sse", want: provider.Response{
			Model: "claude-sonnet-4-20250514", Content: "I'll check the current weather in Paris for you.", FinishReason: "tool_calls",
			ToolCalls: []store.ToolCall{{ID: "toolu_01NRLabsLyVHZPKxbKvkfSMn", Type: "function",
				Function: store.ToolFunction{Name: "get_weather", Arguments: `{"location":"Paris"}`}}},
			Usage: provider.Usage{InputTokens: 377, OutputTokens: 65},
		}, wantDeltas: provider.Delta{Content: "I'll check the current weather in Paris for you."}},
		// Two parallel no-argument tool calls, heavy padding, old-style message_delta usage.
		{fixture: "08c-messages-stream-parallel-tool-use-padded.sse", want: provider.Response{
			Model: "claude-3-5-haiku-latest", Content: "I'll help you generate two names for a pet pelican using the pelican name generator tool.",
			FinishReason: "tool_calls",
			ToolCalls: []store.ToolCall{
				{ID: "toolu_017ngBid8gmdReTeroVSZf7r", Type: "function", Function: store.ToolFunction{Name: "pelican_name_generator", Arguments: "{}"}},
				{ID: "toolu_01FJrHJrmnfEqR6NxkQ3yhpu", Type: "function", Function: store.ToolFunction{Name: "pelican_name_generator", Arguments: "{}"}},
			},
			Usage: provider.Usage{InputTokens: 310, OutputTokens: 82},
		}, wantDeltas: provider.Delta{Content: "I'll help you generate two names for a pet pelican using the pelican name generator tool."}},
		{fixture: "synthetic-thinking", body: thinkingStream, want: provider.Response{
			Model: "claude-sonnet-4-5-20250929", Content: "4", Reasoning: "Two plus two is four.", FinishReason: "stop",
			ReasoningDetails: json.RawMessage(thinkingDetails),
			Usage:            provider.Usage{InputTokens: 110, OutputTokens: 30, CacheWriteTokens: 100},
		}, wantDeltas: provider.Delta{Content: "4", Reasoning: "Two plus two is four."}},
	}
	for _, tt := range tests {
		for _, chunk := range []int{0, 5} {
			t.Run(tt.fixture+"/chunk"+string(rune('0'+chunk)), func(t *testing.T) {
				t.Parallel()
				var resp replay.Response
				if tt.body != "" {
					resp = replay.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(tt.body)}
				} else {
					resp = replay.Load(t, tt.fixture)
				}
				resp.ChunkSize = chunk
				srv := replay.Serve(t, resp)
				var deltas provider.Delta
				got, err := newClient(t, srv, "k").Chat(context.Background(), userReq("hi"), func(d provider.Delta) {
					deltas.Content += d.Content
					deltas.Reasoning += d.Reasoning
				})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got  %+v\nwant %+v", got, tt.want)
				}
				if deltas != tt.wantDeltas {
					t.Errorf("deltas = %+v, want %+v", deltas, tt.wantDeltas)
				}
				if body := srv.Requests()[0].Body; !bytes.Contains(body, []byte(`"stream":true`)) {
					t.Errorf("stream request lacks stream:true: %s", body)
				}
			})
		}
	}
}

func TestErrorFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture    string
		header     http.Header
		wantClass  provider.Class
		wantStatus int
		wantMsg    string
		wantRetry  time.Duration
	}{
		{"09a-error-401-authentication-error.json", nil, provider.ClassAuth, 401, "invalid x-api-key", 0},
		{"09b-error-429-rate-limit-error.json", nil, provider.ClassRateLimit, 429, "This request would exceed", 0},
		{"09b-error-429-rate-limit-error.json", http.Header{"Retry-After": {"12"}}, provider.ClassRateLimit, 429, "This request would exceed", 12 * time.Second},
		{"09c-error-529-overloaded-error.json", nil, provider.ClassOverloaded, 529, "Overloaded", 0},
		{"09d-error-400-prompt-too-long.json", nil, provider.ClassContextLength, 400, "prompt is too long: 208538 tokens > 200000 maximum", 0},
		{"09e-error-400-invalid-request-tool-result.json", nil, provider.ClassBadRequest, 400, "messages.", 0},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			resp := replay.Load(t, tt.fixture)
			for k, v := range tt.header {
				resp.Header[k] = v
			}
			srv := replay.Serve(t, resp)
			for _, stream := range []bool{false, true} {
				var onDelta func(provider.Delta)
				if stream {
					onDelta = func(provider.Delta) { t.Error("delta on an error response") }
				}
				_, err := newClient(t, srv, "k").Chat(context.Background(), userReq("hi"), onDelta)
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("stream=%v: err = %v, want *provider.Error", stream, err)
				}
				if pe.Class != tt.wantClass || pe.StatusCode != tt.wantStatus || pe.Provider != "anthropic" ||
					!strings.HasPrefix(pe.Message, tt.wantMsg) || pe.RetryAfter != tt.wantRetry {
					t.Errorf("stream=%v: got %+v", stream, pe)
				}
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("server saw %d requests, want 2: the SDK must not retry on its own", n)
			}
		})
	}
}

func TestSyntheticErrors(t *testing.T) {
	t.Parallel()
	t.Run("credit balance 400 is quota", func(t *testing.T) {
		t.Parallel()
		srv := replay.Serve(t, replay.Response{Status: 400, Header: http.Header{"Content-Type": {"application/json"}},
			Body: []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`)})
		_, err := newClient(t, srv, "k").Chat(context.Background(), userReq("hi"), nil)
		if provider.ClassOf(err) != provider.ClassQuota {
			t.Errorf("err = %v, want quota", err)
		}
	})
	t.Run("error event inside a 200 stream", func(t *testing.T) {
		t.Parallel()
		body := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
		srv := replay.Serve(t, replay.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(body)})
		_, err := newClient(t, srv, "k").Chat(context.Background(), userReq("hi"), func(provider.Delta) {})
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Class != provider.ClassOverloaded || pe.StatusCode != 0 {
			t.Errorf("err = %#v, want overloaded without status", err)
		}
	})
	t.Run("stream cut before message_delta", func(t *testing.T) {
		t.Parallel()
		resp := replay.Load(t, "08c-messages-stream-parallel-tool-use-padded.sse")
		resp.CutAfter = bytes.Index(resp.Body, []byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2"))
		srv := replay.Serve(t, resp)
		got, err := newClient(t, srv, "k").Chat(context.Background(), userReq("hi"), func(provider.Delta) {})
		if provider.ClassOf(err) != provider.ClassNetwork {
			t.Fatalf("err = %v, want network", err)
		}
		if len(got.ToolCalls) != 1 || !strings.HasPrefix(got.Content, "I'll help you") {
			t.Errorf("partial = %+v", got)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := replay.Serve(t, replay.Response{Status: 200})
		c := newClient(t, srv, "k")
		srv.Close()
		_, err := c.Chat(context.Background(), userReq("hi"), nil)
		if provider.ClassOf(err) != provider.ClassNetwork {
			t.Errorf("err = %v, want network", err)
		}
	})
}

// stripCache removes every cache_control and the system field: what remains must match the
// recording; the breakpoints themselves are checked on their own.
func stripCache(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if k == "cache_control" || k == "system" {
				continue
			}
			out[k] = stripCache(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = stripCache(x[i])
		}
		return out
	}
	return v
}

func TestRequestBodyMatchesRecording(t *testing.T) {
	t.Parallel()
	tests := []struct {
		recording string
		stream    bool
		drop      []string // recorded top-level fields this adapter does not send
	}{
		{"06-messages-nonstream-cache-read.request.json", false, []string{"stream"}},
		{"07-messages-nonstream-tool-use-cache-read.request.json", false, []string{"stream", "tool_choice"}},
		{"08a-messages-stream-text-cache-read.request.json", true, nil},
		{"08c-messages-stream-parallel-tool-use-padded.request.json", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.recording, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("testdata", tt.recording))
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				MaxTokens   int      `json:"max_tokens"`
				Model       string   `json:"model"`
				System      string   `json:"system"`
				Temperature *float64 `json:"temperature"`
				Messages    []struct {
					Role    string `json:"role"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"messages"`
				Tools []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					InputSchema json.RawMessage `json:"input_schema"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			req := provider.Request{Model: rec.Model, System: rec.System, MaxTokens: rec.MaxTokens, Temperature: -1}
			if rec.Temperature != nil {
				req.Temperature = *rec.Temperature
			}
			for _, m := range rec.Messages {
				req.Messages = append(req.Messages, provider.Message{Role: m.Role, Content: m.Content[0].Text})
			}
			for _, tl := range rec.Tools {
				req.Tools = append(req.Tools, provider.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.InputSchema})
			}
			var want map[string]any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.drop {
				delete(want, k)
			}
			tools, _ := want["tools"].([]any)
			for _, tl := range tools {
				if tm := tl.(map[string]any); tm["description"] == "" {
					delete(tm, "description") // an empty description is not sent
				}
			}
			fixture := "06-messages-nonstream-cache-read.json"
			var onDelta func(provider.Delta)
			if tt.stream {
				fixture, onDelta = "08a-messages-stream-text-cache-read.sse", func(provider.Delta) {}
			}
			srv := replay.Serve(t, replay.Load(t, fixture))
			if _, err := newClient(t, srv, "k").Chat(context.Background(), req, onDelta); err != nil {
				t.Fatal(err)
			}
			sent := srv.Requests()[0].Body
			var got map[string]any
			if err := json.Unmarshal(sent, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(stripCache(got), stripCache(want)) {
				t.Errorf("sent     %s\nrecorded %s", sent, raw)
			}
			// The recorded user block carried the breakpoint (or none, in 08c); ours always does.
			msg := got["messages"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
			if !reflect.DeepEqual(msg["cache_control"], map[string]any{"type": "ephemeral"}) {
				t.Errorf("last user block has no breakpoint: %v", msg)
			}
			if rec.System != "" {
				wantSys := []any{map[string]any{"type": "text", "text": rec.System, "cache_control": map[string]any{"type": "ephemeral"}}}
				if !reflect.DeepEqual(got["system"], wantSys) {
					t.Errorf("system = %v", got["system"])
				}
			} else if _, has := got["system"]; has {
				t.Errorf("system sent without a system prompt: %v", got["system"])
			}
		})
	}
}

func conversation() provider.Request {
	return provider.Request{
		Model:  "claude-sonnet-4-5-20250929",
		System: "You are spool. Frozen prompt.",
		Messages: []provider.Message{
			{Role: "user", Content: "weather in Paris and Rome?"},
			{Role: "assistant", Content: "Checking both.", ReasoningDetails: json.RawMessage(thinkingDetails), ToolCalls: []store.ToolCall{
				{ID: "toolu_1", Type: "function", Function: store.ToolFunction{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
				{ID: "toolu_2", Type: "function", Function: store.ToolFunction{Name: "get_weather", Arguments: ``}},
			}},
			{Role: "tool", ToolCallID: "toolu_1", ToolName: "get_weather", Content: "18C"},
			{Role: "tool", ToolCallID: "toolu_2", ToolName: "get_weather", Content: ""},
			{Role: "assistant", Content: "Paris 18C; Rome unknown.", ReasoningDetails: json.RawMessage(`[{"type":"reasoning.encrypted","data":"openrouter-only"}]`)},
			{Role: "user", Content: "thanks"},
		},
		Tools: []provider.Tool{{Name: "get_weather", Description: "Weather for a city",
			Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}`)}},
		Temperature: 0,
	}
}

func TestMessageMapping(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t, replay.Load(t, "06-messages-nonstream-cache-read.json"))
	if _, err := newClient(t, srv, "k").Chat(context.Background(), conversation(), nil); err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[0].Body
	var got struct {
		MaxTokens   int      `json:"max_tokens"`
		Temperature *float64 `json:"temperature"`
		System      []map[string]any
		Messages    []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.MaxTokens != anthropic.DefaultMaxTokens || got.Temperature == nil || *got.Temperature != 0 {
		t.Errorf("max_tokens = %d, temperature = %v", got.MaxTokens, got.Temperature)
	}
	type blk struct{ role, types string }
	var shape []blk
	for _, m := range got.Messages {
		var types []string
		for _, b := range m.Content {
			types = append(types, b["type"].(string))
		}
		shape = append(shape, blk{m.Role, strings.Join(types, ",")})
	}
	want := []blk{
		{"user", "text"},
		{"assistant", "thinking,redacted_thinking,text,tool_use,tool_use"},
		{"user", "tool_result,tool_result"}, // consecutive tool results merged
		{"assistant", "text"},               // OpenRouter reasoning items not replayed here
		{"user", "text"},
	}
	if !reflect.DeepEqual(shape, want) {
		t.Fatalf("shape = %v\nwant    %v", shape, want)
	}
	asst := got.Messages[1].Content
	if asst[0]["signature"] != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" || asst[0]["thinking"] != "Two plus two is four." || asst[1]["data"] != "EmwKAhgBEgy3va3pzix" {
		t.Errorf("thinking blocks not replayed verbatim: %v %v", asst[0], asst[1])
	}
	if asst[3]["id"] != "toolu_1" || !reflect.DeepEqual(asst[3]["input"], map[string]any{"city": "Paris"}) ||
		!reflect.DeepEqual(asst[4]["input"], map[string]any{}) {
		t.Errorf("tool_use blocks = %v %v", asst[3], asst[4])
	}
	results := got.Messages[2].Content
	if results[0]["tool_use_id"] != "toolu_1" || results[1]["tool_use_id"] != "toolu_2" {
		t.Errorf("tool results = %v", results)
	}
	if _, has := results[1]["content"]; has {
		t.Errorf("empty tool result sent content: %v", results[1])
	}
	// Breakpoints: system, and the last block of each of the last three messages. Four at most.
	var marked []string
	for i, m := range got.Messages {
		for j, b := range m.Content {
			if b["cache_control"] != nil {
				marked = append(marked, string(rune('0'+i))+"."+string(rune('0'+j)))
			}
		}
	}
	if !reflect.DeepEqual(marked, []string{"2.1", "3.0", "4.0"}) || got.System[0]["cache_control"] == nil {
		t.Errorf("breakpoints at %v (system %v), want 2.1 3.0 4.0 and system", marked, got.System[0]["cache_control"])
	}
	if n := bytes.Count(body, []byte(`"cache_control"`)); n != 4 {
		t.Errorf("%d breakpoints, Anthropic allows 4", n)
	}
	if string(got.Tools[0]["input_schema"]) != `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}` {
		t.Errorf("input_schema = %s: key order must be kept", got.Tools[0]["input_schema"])
	}
}

func TestIdenticalRequestsAreByteIdentical(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t, replay.Load(t, "06-messages-nonstream-cache-read.json"))
	for i := 0; i < 3; i++ {
		if _, err := newClient(t, srv, "k").Chat(context.Background(), conversation(), nil); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	for i := 1; i < len(reqs); i++ {
		if !bytes.Equal(reqs[0].Body, reqs[i].Body) {
			t.Fatalf("request %d differs:\n%s\n%s", i, reqs[0].Body, reqs[i].Body)
		}
	}
	// Round trip: the thinking a stream returned is replayed byte for byte in the next request.
	streamSrv := replay.Serve(t, replay.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(thinkingStream)})
	c := newClient(t, streamSrv, "k")
	req := userReq("2+2?")
	resp, err := c.Chat(context.Background(), req, func(provider.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, provider.Message{Role: "assistant", Content: resp.Content, ReasoningDetails: resp.ReasoningDetails},
		provider.Message{Role: "user", Content: "and 3+3?"})
	if _, err := c.Chat(context.Background(), req, func(provider.Delta) {}); err != nil {
		t.Fatal(err)
	}
	second := streamSrv.Requests()[1].Body
	if !bytes.Contains(second, []byte(`{"signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds","thinking":"Two plus two is four.","type":"thinking"}`)) {
		t.Errorf("thinking block not replayed: %s", second)
	}
}

func TestBadInputIsLocal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msgs []provider.Message
		want string
	}{
		{"system in messages", []provider.Message{{Role: "system", Content: "x"}}, `message 0: role "system"`},
		{"empty user", []provider.Message{{Role: "user"}}, "message 0: user message is empty"},
		{"bad tool arguments", []provider.Message{{Role: "user", Content: "x"}, {Role: "assistant", ToolCalls: []store.ToolCall{{ID: "t1", Function: store.ToolFunction{Name: "f", Arguments: "not json"}}}}}, "message 1: tool call t1: arguments are not a JSON object"},
	}
	srv := replay.Serve(t, replay.Load(t, "06-messages-nonstream-cache-read.json"))
	for _, tt := range tests {
		req := userReq("")
		req.Messages = tt.msgs
		_, err := newClient(t, srv, "k").Chat(context.Background(), req, nil)
		if provider.ClassOf(err) != provider.ClassBadRequest || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("bad requests reached the server (%d)", n)
	}
}

func TestNoAmbientCredentials(t *testing.T) {
	// Not parallel: t.Setenv. A key in the environment must not reach a configured endpoint.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := replay.Serve(t, replay.Load(t, "06-messages-nonstream-cache-read.json"))
	if _, err := newClient(t, srv, "").Chat(context.Background(), userReq("hi"), nil); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Errorf("ambient credentials sent: x-api-key=%q authorization=%q", h.Get("X-Api-Key"), h.Get("Authorization"))
	}
}

func TestWithRetryOverloaded(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t, replay.Load(t, "09c-error-529-overloaded-error.json"), replay.Load(t, "09c-error-529-overloaded-error.json"),
		replay.Load(t, "08a-messages-stream-text-cache-read.sse"))
	var seen string
	got, err := provider.WithRetry(newClient(t, srv, "k"), provider.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}).
		Chat(context.Background(), userReq("hi"), func(d provider.Delta) { seen += d.Content })
	if err != nil || got.Content != "Hello" || seen != "Hello" || len(srv.Requests()) != 3 {
		t.Errorf("got %q (deltas %q), err %v, after %d requests", got.Content, seen, err, len(srv.Requests()))
	}
}
