package openai_test

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
	"github.com/spoolhq/spool/provider/internal/replay"
	"github.com/spoolhq/spool/provider/openai"
	"github.com/spoolhq/spool/store"
)

func newClient(t *testing.T, srv *replay.Server, key string) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: key, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixtureRequest rebuilds the provider.Request behind a recorded .request.json.
func fixtureRequest(t *testing.T, name string) (provider.Request, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	req := provider.Request{Model: rec.Model, Temperature: -1}
	for _, m := range rec.Messages {
		if m.Role == "system" {
			req.System = m.Content
			continue
		}
		req.Messages = append(req.Messages, provider.Message{Role: m.Role, Content: m.Content})
	}
	for _, tl := range rec.Tools {
		req.Tools = append(req.Tools, provider.Tool{Name: tl.Function.Name, Description: tl.Function.Description, Parameters: tl.Function.Parameters})
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	return req, generic
}

func userReq(text string) provider.Request {
	return provider.Request{Model: "gpt-4.1", System: "sys", Temperature: -1,
		Messages: []provider.Message{{Role: "user", Content: text}}}
}

func TestNonStreamFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		want    provider.Response
	}{
		{"01-chat-nonstream-cached-tokens.json", provider.Response{
			Model: "gpt-4.1-2025-04-14", Content: "Hello!", FinishReason: "stop",
			Usage: provider.Usage{InputTokens: 1144, OutputTokens: 2, CacheReadTokens: 1024},
		}},
		{"02-chat-nonstream-tool-calls-cached.json", provider.Response{
			Model: "gpt-4.1-2025-04-14", FinishReason: "tool_calls",
			ToolCalls: []store.ToolCall{{ID: "call_x9KzZUT3UYazEUJiRmE0PvaU", Type: "function",
				Function: store.ToolFunction{Name: "get_weather", Arguments: `{"location":"Tokyo"}`}}},
			Usage: provider.Usage{InputTokens: 1187, OutputTokens: 14, CacheReadTokens: 1152},
		}},
		{"ollama-01-nonstream-reasoning.json", provider.Response{
			Model: "qwen3.8-gsq-rco:27b-iq3_s-text", Content: "51", FinishReason: "stop",
			Reasoning: "The user asks \"Wat is 17*3?\" (What is 17*3?) and asks to answer with only the number.\n\n17 * 3 = 51\n\nThey want only the number as the answer.",
			Usage:     provider.Usage{InputTokens: 26, OutputTokens: 56},
		}},
		{"ollama-02-nonstream-cached-tokens.json", provider.Response{
			Model: "qwen3.8-gsq-rco:27b-iq3_s-text", Content: "54", FinishReason: "stop",
			Reasoning: "The user is asking for 18*3. Let me calculate: 18*3 = 54.\nThey previously asked me to answer with only the number, so I'll do the same.",
			Usage:     provider.Usage{InputTokens: 49, OutputTokens: 50, CacheReadTokens: 22},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			srv := replay.Serve(t, replay.Load(t, tt.fixture))
			got, err := newClient(t, srv, "sk-test").Chat(context.Background(), userReq("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/v1/chat/completions" {
				t.Fatalf("requests = %+v", reqs)
			}
			if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer sk-test" {
				t.Errorf("Authorization = %q", auth)
			}
			if bytes.Contains(reqs[0].Body, []byte(`"stream"`)) {
				t.Errorf("non-streaming request mentions stream: %s", reqs[0].Body)
			}
		})
	}
}

func TestStreamFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture    string
		want       provider.Response
		wantDeltas provider.Delta // concatenation of every delta
		wantClass  provider.Class // "" for success
	}{
		{"03-chat-stream-text-include-usage-cached.sse", provider.Response{
			Model: "gpt-4.1-2025-04-14", Content: "Hello!", FinishReason: "stop",
			Usage: provider.Usage{InputTokens: 1144, OutputTokens: 2, CacheReadTokens: 1024},
		}, provider.Delta{Content: "Hello!"}, ""},
		{"04a-chat-stream-tool-call-deltas.sse", provider.Response{
			Model: "gpt-4o-2024-08-06", FinishReason: "tool_calls",
			ToolCalls: []store.ToolCall{{ID: "call_2Uzw0AEZQeOex2CP2TKjcLKc", Type: "function",
				Function: store.ToolFunction{Name: "get_weather", Arguments: `{"location":"San Francisco, CA"}`}}},
		}, provider.Delta{}, ""},
		{"ollama-03-stream-reasoning-include-usage.sse", provider.Response{
			Model: "gpt-oss:20b", Content: "Hello there! 👋 How can I help you today?", FinishReason: "stop",
			Reasoning: `The user says "hi". Probably wants to greet. We can respond with a friendly greeting.`,
			Usage:     provider.Usage{InputTokens: 68, OutputTokens: 41},
		}, provider.Delta{Content: "Hello there! 👋 How can I help you today?",
			Reasoning: `The user says "hi". Probably wants to greet. We can respond with a friendly greeting.`}, ""},
		// The recording holds one chunk and nothing after it: no finish_reason, no [DONE]. The
		// SDK's decoder would drop the event entirely; here it is parsed, and the missing end is
		// reported as a cut stream with the partial response.
		{"ollama-04-stream-tool-call-single-chunk.sse", provider.Response{
			Model: "qwen2.5-coder:7b-instruct-q8_0", FinishReason: "tool_calls",
			ToolCalls: []store.ToolCall{{ID: "call_lbcjwr0u", Type: "function",
				Function: store.ToolFunction{Name: "run_command", Arguments: `{"command":"ls -a"}`}}},
		}, provider.Delta{}, provider.ClassNetwork},
	}
	for _, tt := range tests {
		for _, chunk := range []int{0, 7} {
			t.Run(tt.fixture+"/chunk"+string(rune('0'+chunk)), func(t *testing.T) {
				t.Parallel()
				resp := replay.Load(t, tt.fixture)
				resp.ChunkSize = chunk
				srv := replay.Serve(t, resp)
				var deltas provider.Delta
				got, err := newClient(t, srv, "").Chat(context.Background(), userReq("hi"), func(d provider.Delta) {
					deltas.Content += d.Content
					deltas.Reasoning += d.Reasoning
				})
				if tt.wantClass == "" && err != nil {
					t.Fatal(err)
				}
				if tt.wantClass != "" && provider.ClassOf(err) != tt.wantClass {
					t.Fatalf("err = %v, want class %s", err, tt.wantClass)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got  %+v\nwant %+v", got, tt.want)
				}
				if deltas != tt.wantDeltas {
					t.Errorf("deltas = %+v, want %+v", deltas, tt.wantDeltas)
				}
				body := srv.Requests()[0].Body
				if !bytes.Contains(body, []byte(`"stream_options":{"include_usage":true}`)) || !bytes.Contains(body, []byte(`"stream":true`)) {
					t.Errorf("stream request body lacks stream/include_usage: %s", body)
				}
			})
		}
	}
}

func TestErrorFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture    string
		header     http.Header // added to the recorded headers
		wantClass  provider.Class
		wantStatus int
		wantMsg    string
		wantRetry  time.Duration
	}{
		{"05a-error-401-invalid-api-key.json", nil, provider.ClassAuth, 401, "Incorrect API key provided", 0},
		{"05b-error-429-insufficient-quota.json", nil, provider.ClassQuota, 429, "You exceeded your current quota", 0},
		{"05c-error-429-rate-limit-exceeded.RECONSTRUCTED.json", nil, provider.ClassRateLimit, 429, "Rate limit reached", 84 * time.Millisecond},
		{"05c-error-429-rate-limit-exceeded.RECONSTRUCTED.json", http.Header{"Retry-After": {"7"}}, provider.ClassRateLimit, 429, "Rate limit reached", 7 * time.Second},
		{"05c-error-429-rate-limit-exceeded.RECONSTRUCTED.json", http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}, provider.ClassRateLimit, 429, "Rate limit reached", 1500 * time.Millisecond},
		{"05d-error-400-unsupported-parameter.json", nil, provider.ClassBadRequest, 400, "Unsupported parameter", 0},
		{"05e-error-500-server-error.RECONSTRUCTED.json", nil, provider.ClassServer, 500, "The server had an error", 0},
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
				_, err := newClient(t, srv, "sk-test").Chat(context.Background(), userReq("hi"), onDelta)
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("stream=%v: err = %v, want *provider.Error", stream, err)
				}
				if pe.Class != tt.wantClass || pe.StatusCode != tt.wantStatus || pe.Provider != "openai" ||
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

// Bodies no recording exists for (see testdata/SOURCES.md "Not found"): the documented OpenAI
// context-length wording, and the shapes of other compatible servers and of proxies.
func TestSyntheticErrorBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   provider.Class
	}{
		{"openai context_length_exceeded", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130001 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, provider.ClassContextLength},
		{"vllm object error", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`, provider.ClassContextLength},
		{"llama.cpp numeric code", 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`, provider.ClassContextLength},
		{"ollama string error", 404, `{"error":"model 'nope' not found"}`, provider.ClassModelNotFound},
		{"openrouter 402", 402, `{"error":{"code":402,"message":"Insufficient credits"}}`, provider.ClassQuota},
		{"proxy html 502", 502, `<html><body>Bad Gateway</body></html>`, provider.ClassServer},
		{"gateway timeout", 504, ``, provider.ClassTimeout},
		{"503 overloaded", 503, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`, provider.ClassOverloaded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := replay.Serve(t, replay.Response{Status: tt.status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(tt.body)})
			_, err := newClient(t, srv, "").Chat(context.Background(), userReq("hi"), nil)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Class != tt.want || pe.StatusCode != tt.status {
				t.Fatalf("err = %#v, want class %s status %d", err, tt.want, tt.status)
			}
		})
	}
}

func TestStreamErrorEvent(t *testing.T) {
	t.Parallel()
	body := "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"error\":{\"code\":502,\"message\":\"upstream provider returned error\"}}\n\n"
	srv := replay.Serve(t, replay.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(body)})
	got, err := newClient(t, srv, "").Chat(context.Background(), userReq("hi"), func(provider.Delta) {})
	if c := provider.ClassOf(err); c != provider.ClassServer {
		t.Fatalf("err = %v (class %s), want server", err, c)
	}
	if got.Content != "Hel" {
		t.Errorf("partial content = %q", got.Content)
	}
}

func TestTransportFailures(t *testing.T) {
	t.Parallel()
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := replay.Serve(t, replay.Response{Status: 200})
		c := newClient(t, srv, "")
		srv.Close()
		_, err := c.Chat(context.Background(), userReq("hi"), nil)
		if provider.ClassOf(err) != provider.ClassNetwork {
			t.Fatalf("err = %v, want network", err)
		}
	})
	t.Run("stream cut mid-body", func(t *testing.T) {
		t.Parallel()
		resp := replay.Load(t, "03-chat-stream-text-include-usage-cached.sse")
		resp.CutAfter = bytes.Index(resp.Body, []byte(`"finish_reason":"stop"`)) // after "Hello" and "!"
		srv := replay.Serve(t, resp)
		var seen string
		got, err := newClient(t, srv, "").Chat(context.Background(), userReq("hi"), func(d provider.Delta) { seen += d.Content })
		if provider.ClassOf(err) != provider.ClassNetwork {
			t.Fatalf("err = %v, want network", err)
		}
		if got.Content != "Hello!" || seen != "Hello!" {
			t.Errorf("partial = %q, deltas = %q", got.Content, seen)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		block := make(chan struct{})
		srv := replay.Serve(t, replay.Response{Status: 200})
		t.Cleanup(func() { close(block) }) // runs before the server's Close
		srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-block:
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := newClient(t, srv, "").Chat(ctx, userReq("hi"), nil)
		if provider.ClassOf(err) != provider.ClassTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want timeout wrapping DeadlineExceeded", err)
		}
	})
}

// The request the adapter sends for a recorded call must be the recorded request, as JSON.
func TestRequestBodyMatchesRecording(t *testing.T) {
	t.Parallel()
	tests := []struct {
		recording string
		stream    bool
		// drop lists recorded fields this adapter deliberately does not send.
		drop func(map[string]any)
	}{
		{"01-chat-nonstream-cached-tokens.request.json", false, nil},
		{"03-chat-stream-text-include-usage-cached.request.json", true, nil},
		{"02-chat-nonstream-tool-calls-cached.request.json", false, func(m map[string]any) {
			delete(m, "tool_choice") // "auto" is the default
			fn := m["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)
			delete(fn, "strict") // Tool has no strict flag
		}},
	}
	for _, tt := range tests {
		t.Run(tt.recording, func(t *testing.T) {
			t.Parallel()
			req, want := fixtureRequest(t, tt.recording)
			if tt.drop != nil {
				tt.drop(want)
			}
			srv := replay.Serve(t, replay.Load(t, "01-chat-nonstream-cached-tokens.json"))
			var onDelta func(provider.Delta)
			if tt.stream {
				srv = replay.Serve(t, replay.Load(t, "03-chat-stream-text-include-usage-cached.sse"))
				onDelta = func(provider.Delta) {}
			}
			if _, err := newClient(t, srv, "").Chat(context.Background(), req, onDelta); err != nil {
				t.Fatal(err)
			}
			sent := srv.Requests()[0].Body
			var got map[string]any
			if err := json.Unmarshal(sent, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("sent     %s\nrecorded %v", sent, want)
			}
		})
	}
	// Not compared byte for byte: the Go SDK writes "content" before "role", the recorded
	// Python client the reverse. Byte stability across calls is TestIdenticalRequestsAreByteIdentical.
}

func conversation() provider.Request {
	return provider.Request{
		Model:  "gpt-4o",
		System: "You are spool. Frozen prompt.",
		Messages: []provider.Message{
			{Role: "user", Content: "weather in Paris and Rome?"},
			{Role: "assistant", Content: "", ToolCalls: []store.ToolCall{
				{ID: "call_1", Type: "function", Function: store.ToolFunction{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
				{ID: "call_2", Type: "function", Function: store.ToolFunction{Name: "get_weather", Arguments: `{"city":"Rome"}`}},
			}, ReasoningDetails: json.RawMessage(`[{"type":"thinking","thinking":"anthropic-only","signature":"sig"}]`)},
			{Role: "tool", ToolCallID: "call_1", ToolName: "get_weather", Content: "18C"},
			{Role: "tool", ToolCallID: "call_2", ToolName: "get_weather", Content: "24C"},
			{Role: "assistant", Content: "Paris 18C, Rome 24C.", ReasoningDetails: json.RawMessage(`[{"type":"reasoning.encrypted","data":"xyz","index":0}]`)},
			{Role: "user", Content: "thanks"},
		},
		Tools: []provider.Tool{{Name: "get_weather", Description: "Weather for a city",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"a_unit":{"enum":["c","f"]}},"required":["city"]}`)}},
		MaxTokens:   512,
		Temperature: 0.2,
	}
}

func TestMessageMapping(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t, replay.Load(t, "01-chat-nonstream-cached-tokens.json"))
	if _, err := newClient(t, srv, "").Chat(context.Background(), conversation(), nil); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages    []map[string]any `json:"messages"`
		MaxTokens   int              `json:"max_tokens"`
		Temperature float64          `json:"temperature"`
		Tools       []struct {
			Type     string `json:"type"`
			Function struct {
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, m := range got.Messages {
		roles = append(roles, m["role"].(string))
	}
	if want := []string{"system", "user", "assistant", "tool", "tool", "assistant", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	if got.Messages[0]["content"] != "You are spool. Frozen prompt." {
		t.Errorf("system = %v", got.Messages[0])
	}
	if _, has := got.Messages[2]["content"]; has {
		t.Errorf("assistant tool-call message carries content: %v", got.Messages[2])
	}
	if _, has := got.Messages[2]["reasoning_details"]; has {
		t.Errorf("Anthropic thinking blocks leaked into an OpenAI request: %v", got.Messages[2])
	}
	calls := got.Messages[2]["tool_calls"].([]any)
	if len(calls) != 2 || calls[1].(map[string]any)["id"] != "call_2" ||
		calls[1].(map[string]any)["function"].(map[string]any)["arguments"] != `{"city":"Rome"}` {
		t.Errorf("tool_calls = %v", calls)
	}
	if got.Messages[3]["tool_call_id"] != "call_1" || got.Messages[3]["content"] != "18C" || got.Messages[4]["tool_call_id"] != "call_2" {
		t.Errorf("tool results = %v %v", got.Messages[3], got.Messages[4])
	}
	if _, has := got.Messages[5]["reasoning_details"]; !has {
		t.Errorf("OpenRouter reasoning_details not replayed: %v", got.Messages[5])
	}
	if got.MaxTokens != 512 || got.Temperature != 0.2 {
		t.Errorf("max_tokens = %d, temperature = %v", got.MaxTokens, got.Temperature)
	}
	var schema, wantSchema any
	_ = json.Unmarshal(got.Tools[0].Function.Parameters, &schema)
	_ = json.Unmarshal(conversation().Tools[0].Parameters, &wantSchema)
	if got.Tools[0].Type != "function" || !reflect.DeepEqual(schema, wantSchema) {
		t.Errorf("tool = %+v", got.Tools[0])
	}
}

func TestMaxTokensField(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t, replay.Load(t, "01-chat-nonstream-cached-tokens.json"))
	for field, want := range map[string]string{openai.MaxCompletionTokens: `"max_completion_tokens":512`, openai.MaxTokens: `"max_tokens":512`} {
		c, err := openai.New(openai.Config{BaseURL: srv.URL, MaxTokensField: field, HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Chat(context.Background(), conversation(), nil); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if body := reqs[len(reqs)-1].Body; !bytes.Contains(body, []byte(want)) {
			t.Errorf("field %s: body lacks %s", field, want)
		}
	}
	if _, err := openai.New(openai.Config{MaxTokensField: "max"}); err == nil {
		t.Error("bad MaxTokensField accepted")
	}
	if _, err := openai.New(openai.Config{BaseURL: "localhost:11434"}); err == nil {
		t.Error("base URL without scheme accepted")
	}
}

// Prefix stability: the same Request must become the same bytes, call after call and client
// after client, streamed or not (apart from the stream fields themselves).
func TestIdenticalRequestsAreByteIdentical(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t, replay.Load(t, "01-chat-nonstream-cached-tokens.json"))
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
	// A longer conversation keeps the earlier one's bytes as its prefix up to the last message.
	longer := conversation()
	longer.Messages = append(longer.Messages, provider.Message{Role: "assistant", Content: "welcome"})
	if _, err := newClient(t, srv, "k").Chat(context.Background(), longer, nil); err != nil {
		t.Fatal(err)
	}
	reqs = srv.Requests()
	a, b := reqs[0].Body, reqs[len(reqs)-1].Body
	cut := bytes.Index(a, []byte(`{"content":"thanks"`))
	if cut < 0 || !bytes.Equal(a[:cut], b[:cut]) {
		t.Errorf("message prefix not stable:\n%s\n%s", a, b)
	}
}

func TestNoAmbientAPIKey(t *testing.T) {
	// Not parallel: t.Setenv. A keyless local endpoint must not receive OPENAI_API_KEY.
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/wrong")
	srv := replay.Serve(t, replay.Load(t, "01-chat-nonstream-cached-tokens.json"))
	if _, err := newClient(t, srv, "").Chat(context.Background(), userReq("hi"), nil); err != nil {
		t.Fatal(err)
	}
	if auth := srv.Requests()[0].Header.Get("Authorization"); auth != "" {
		t.Errorf("Authorization = %q, want none", auth)
	}
}

func TestBadRequestIsLocal(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t, replay.Load(t, "01-chat-nonstream-cached-tokens.json"))
	bad := userReq("x")
	bad.Messages = append(bad.Messages, provider.Message{Role: "system", Content: "late"})
	_, err := newClient(t, srv, "").Chat(context.Background(), bad, nil)
	if provider.ClassOf(err) != provider.ClassBadRequest || !strings.Contains(err.Error(), `message 1: role "system"`) {
		t.Errorf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("bad request reached the server (%d requests)", n)
	}
}

func TestWithRetry(t *testing.T) {
	t.Parallel()
	fast := provider.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
	t.Run("429 then success", func(t *testing.T) {
		t.Parallel()
		limited := replay.Load(t, "05c-error-429-rate-limit-exceeded.RECONSTRUCTED.json")
		limited.Header.Set("Retry-After-Ms", "1")
		srv := replay.Serve(t, limited, replay.Load(t, "01-chat-nonstream-cached-tokens.json"))
		var waits []time.Duration
		p := fast
		p.OnRetry = func(_ int, wait time.Duration, _ error) { waits = append(waits, wait) }
		got, err := provider.WithRetry(newClient(t, srv, ""), p).Chat(context.Background(), userReq("hi"), nil)
		if err != nil || got.Content != "Hello!" {
			t.Fatalf("got %q, %v", got.Content, err)
		}
		if len(srv.Requests()) != 2 || len(waits) != 1 || waits[0] != time.Millisecond {
			t.Errorf("requests = %d, waits = %v", len(srv.Requests()), waits)
		}
	})
	t.Run("auth is not retried", func(t *testing.T) {
		t.Parallel()
		srv := replay.Serve(t, replay.Load(t, "05a-error-401-invalid-api-key.json"))
		_, err := provider.WithRetry(newClient(t, srv, ""), fast).Chat(context.Background(), userReq("hi"), nil)
		if provider.ClassOf(err) != provider.ClassAuth || len(srv.Requests()) != 1 {
			t.Errorf("err = %v after %d requests", err, len(srv.Requests()))
		}
	})
	t.Run("cut after deltas is not retried", func(t *testing.T) {
		t.Parallel()
		resp := replay.Load(t, "03-chat-stream-text-include-usage-cached.sse")
		resp.CutAfter = bytes.Index(resp.Body, []byte(`"finish_reason":"stop"`))
		srv := replay.Serve(t, resp)
		_, err := provider.WithRetry(newClient(t, srv, ""), fast).Chat(context.Background(), userReq("hi"), func(provider.Delta) {})
		if provider.ClassOf(err) != provider.ClassNetwork || len(srv.Requests()) != 1 {
			t.Errorf("err = %v after %d requests, want one network failure", err, len(srv.Requests()))
		}
	})
	t.Run("cut before any delta is retried", func(t *testing.T) {
		t.Parallel()
		cut := replay.Load(t, "03-chat-stream-text-include-usage-cached.sse")
		cut.CutAfter = 20 // inside the first event: nothing delivered
		srv := replay.Serve(t, cut, replay.Load(t, "03-chat-stream-text-include-usage-cached.sse"))
		var seen string
		got, err := provider.WithRetry(newClient(t, srv, ""), fast).Chat(context.Background(), userReq("hi"), func(d provider.Delta) { seen += d.Content })
		if err != nil || got.Content != "Hello!" || seen != "Hello!" || len(srv.Requests()) != 2 {
			t.Errorf("got %q (deltas %q), err %v, %d requests", got.Content, seen, err, len(srv.Requests()))
		}
	})
}

func TestStreamWithoutDoneAfterFinish(t *testing.T) {
	t.Parallel()
	resp := replay.Load(t, "04a-chat-stream-tool-call-deltas.sse")
	resp.Body = bytes.TrimSuffix(bytes.TrimSpace(resp.Body), []byte("data: [DONE]"))
	srv := replay.Serve(t, resp)
	got, err := newClient(t, srv, "").Chat(context.Background(), userReq("hi"), func(provider.Delta) {})
	if err != nil || got.FinishReason != "tool_calls" || len(got.ToolCalls) != 1 {
		t.Errorf("got %+v, %v: a clean end after finish_reason is complete", got, err)
	}
}

func TestStreamedRequestsAreByteIdentical(t *testing.T) {
	t.Parallel()
	srv := replay.Serve(t, replay.Load(t, "03-chat-stream-text-include-usage-cached.sse"))
	for i := 0; i < 3; i++ {
		if _, err := newClient(t, srv, "k").Chat(context.Background(), conversation(), func(provider.Delta) {}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	for i := 1; i < len(reqs); i++ {
		if !bytes.Equal(reqs[0].Body, reqs[i].Body) {
			t.Fatalf("streamed request %d differs:\n%s\n%s", i, reqs[0].Body, reqs[i].Body)
		}
	}
}
