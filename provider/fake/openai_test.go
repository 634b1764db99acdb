package fake

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

type oaTestResponse struct {
	ID      string `json:"id"`
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func oaDecode(t *testing.T, r reply) oaTestResponse {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var out oaTestResponse
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return out
}

var weatherTool = []map[string]any{{"type": "function", "function": map[string]any{
	"name": "get_weather", "description": "Get the current weather for a location",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
}}}

func oaBody(msgs []map[string]any, extra map[string]any) map[string]any {
	b := map[string]any{"model": "gpt-4.1", "messages": msgs}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestOpenAIAnswerMatchesRecordingAndIsDeterministic(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{Now: NewManualClock(epoch).Now})
	url := srv.URL + "/v1/chat/completions"
	body := oaBody([]map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello in one word."}}, nil)
	r1 := post(t, nil, url, openAIHeaders, body)
	sameShape(t, "non-stream text", r1.body, readFixture(t, "01-chat-nonstream-cached-tokens.json"))
	if !strings.HasPrefix(string(r1.body), "{\n  \"id\": \"chatcmpl-") || !strings.HasSuffix(string(r1.body), "}\n") {
		t.Errorf("body is not OpenAI's 2-space pretty print with a final newline: %q", r1.body)
	}
	if ct := r1.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	a := oaDecode(t, r1)
	if got := *a.Choices[0].Message.Content; !strings.Contains(got, `"Say hello in one word."`) || a.Choices[0].FinishReason != "stop" {
		t.Errorf("answer %q finish %q", got, a.Choices[0].FinishReason)
	}
	if u := a.Usage; u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}
	r2 := oaDecode(t, post(t, nil, url, openAIHeaders, body))
	if *r2.Choices[0].Message.Content != *a.Choices[0].Message.Content || r2.ID != a.ID {
		t.Errorf("same input, different output: %q/%s vs %q/%s", *r2.Choices[0].Message.Content, r2.ID, *a.Choices[0].Message.Content, a.ID)
	}
	other := oaDecode(t, post(t, nil, url, openAIHeaders, oaBody([]map[string]any{{"role": "user", "content": "Something else"}}, nil)))
	if *other.Choices[0].Message.Content == *a.Choices[0].Message.Content {
		t.Error("different input, same answer")
	}
}

func TestOpenAIToolCallsThenResults(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{})
	url := srv.URL + "/v1/chat/completions"
	msgs := []map[string]any{{"role": "user", "content": "What is the weather?\nCALL get_weather {\"location\": \"Tokyo\"}\nCALL get_weather {\"location\":\"Paris\"}"}}
	r := post(t, nil, url, openAIHeaders, oaBody(msgs, map[string]any{"tools": weatherTool}))
	sameShape(t, "non-stream tool calls", r.body, readFixture(t, "02-chat-nonstream-tool-calls-cached.json"))
	a := oaDecode(t, r)
	ch := a.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("want 2 parallel calls with null content, got %s", r.body)
	}
	calls := ch.Message.ToolCalls
	if calls[0].Function.Arguments != `{"location":"Tokyo"}` || calls[1].Function.Arguments != `{"location":"Paris"}` ||
		calls[0].ID == calls[1].ID || !strings.HasPrefix(calls[0].ID, "call_") || calls[0].Type != "function" {
		t.Errorf("calls %+v", calls)
	}
	// Results come back: the model answers in text naming them, and does not call again.
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{
			{"id": calls[0].ID, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": calls[0].Function.Arguments}},
			{"id": calls[1].ID, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": calls[1].Function.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": calls[0].ID, "content": "Sunny, 21C"},
		map[string]any{"role": "tool", "tool_call_id": calls[1].ID, "content": "Rain, 12C"})
	b := oaDecode(t, post(t, nil, url, openAIHeaders, oaBody(msgs, map[string]any{"tools": weatherTool})))
	text := *b.Choices[0].Message.Content
	if b.Choices[0].FinishReason != "stop" || !strings.Contains(text, "Sunny, 21C") || !strings.Contains(text, "Rain, 12C") || !strings.Contains(text, "get_weather") {
		t.Errorf("answer after results: %q (%s)", text, b.Choices[0].FinishReason)
	}

	// A tool that was not offered is refused in text.
	c := oaDecode(t, post(t, nil, url, openAIHeaders, oaBody([]map[string]any{{"role": "user", "content": "CALL rm_rf {}"}}, map[string]any{"tools": weatherTool})))
	if len(c.Choices[0].Message.ToolCalls) != 0 || !strings.Contains(*c.Choices[0].Message.Content, "rm_rf") {
		t.Errorf("unoffered tool: %+v", c.Choices[0])
	}
}

func TestOpenAIStreamMatchesRecording(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{})
	url := srv.URL + "/v1/chat/completions"
	msgs := []map[string]any{{"role": "user", "content": "Tell me something about streams."}}
	plain := oaDecode(t, post(t, nil, url, openAIHeaders, oaBody(msgs, nil)))
	r := post(t, nil, url, openAIHeaders, oaBody(msgs, map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}))
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("status %d type %q", r.status, r.header.Get("Content-Type"))
	}
	got, want := parseSSE(t, r.body), parseSSE(t, readFixture(t, "03-chat-stream-text-include-usage-cached.sse"))
	if got[len(got)-1].data != "[DONE]" || !strings.HasSuffix(string(r.body), "data: [DONE]\n\n") {
		t.Fatalf("stream does not end with [DONE]: %q", r.body)
	}
	n, wn := len(got)-1, len(want)-1 // without [DONE]
	for _, p := range [][2]int{{0, 0}, {1, 1}, {n - 2, wn - 2}, {n - 1, wn - 1}} {
		sameShape(t, "chunk", []byte(got[p[0]].data), []byte(want[p[1]].data))
	}
	var text strings.Builder
	var usage oaTestResponse
	for _, ev := range got[:n] {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		json.Unmarshal([]byte(ev.data), &ch)
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		} else {
			json.Unmarshal([]byte(ev.data), &usage)
		}
	}
	if text.String() != *plain.Choices[0].Message.Content {
		t.Errorf("streamed %q, non-stream %q", text.String(), *plain.Choices[0].Message.Content)
	}
	if usage.Usage.PromptTokens != plain.Usage.PromptTokens || usage.Usage.CompletionTokens != plain.Usage.CompletionTokens {
		t.Errorf("stream usage %+v, non-stream %+v", usage.Usage, plain.Usage)
	}

	// Without include_usage there is no usage key at all (fixture 04a).
	r = post(t, nil, url, openAIHeaders, oaBody(msgs, map[string]any{"stream": true}))
	if strings.Contains(string(r.body), `"usage"`) {
		t.Errorf("usage sent without include_usage: %s", r.body)
	}
}

func TestOpenAIStreamToolCallDeltas(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{})
	msgs := []map[string]any{{"role": "user", "content": "CALL get_weather {\"location\":\"San Francisco, CA\"}"}}
	r := post(t, nil, srv.URL+"/v1/chat/completions", openAIHeaders, oaBody(msgs, map[string]any{"stream": true, "tools": weatherTool}))
	got, want := parseSSE(t, r.body), parseSSE(t, readFixture(t, "04a-chat-stream-tool-call-deltas.sse"))
	n, wn := len(got)-1, len(want)-1
	for _, p := range [][2]int{{0, 0}, {1, 1}, {n - 1, wn - 1}} {
		sameShape(t, "tool chunk", []byte(got[p[0]].data), []byte(want[p[1]].data))
	}
	var args strings.Builder
	var finish string
	for _, ev := range got[:n] {
		var ch struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev.data), &ch); err != nil {
			t.Fatal(err)
		}
		for _, tc := range ch.Choices[0].Delta.ToolCalls {
			args.WriteString(tc.Function.Arguments)
		}
		if f := ch.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if args.String() != `{"location":"San Francisco, CA"}` || finish != "tool_calls" {
		t.Errorf("joined arguments %q, finish %q", args.String(), finish)
	}
}

func TestOpenAIFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault    string
		status   int
		code     string // error.code, "" for null
		typ      string
		fixture  string
		retryHdr bool
	}{
		{"auth", 401, "invalid_api_key", "invalid_request_error", "05a-error-401-invalid-api-key.json", false},
		{"quota", 429, "insufficient_quota", "insufficient_quota", "05b-error-429-insufficient-quota.json", false},
		{"rate_limit", 429, "rate_limit_exceeded", "tokens", "05a-error-401-invalid-api-key.json", true},
		{"overloaded", 503, "", "server_error", "", false},
		{"context_length", 400, "context_length_exceeded", "invalid_request_error", "", false},
		{"bad_request", 400, "unsupported_parameter", "invalid_request_error", "", false},
		{"server", 500, "", "server_error", "", false},
	}
	_, srv := newServer(t, Config{})
	for _, tc := range tests {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			r := post(t, nil, srv.URL+"/v1/chat/completions", openAIHeaders,
				oaBody([]map[string]any{{"role": "user", "content": "hi " + tc.fault + "\nFAULT " + tc.fault}}, nil))
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if !strings.HasPrefix(string(r.body), "{\n    \"error\": {\n        \"message\": ") || !strings.HasSuffix(string(r.body), "}\n") {
				t.Errorf("not OpenAI's 4-space error layout: %q", r.body)
			}
			if tc.fixture != "" {
				sameShape(t, "error", r.body, readFixture(t, tc.fixture))
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatal(err)
			}
			code := ""
			if e.Error.Code != nil {
				code = *e.Error.Code
			}
			if code != tc.code || e.Error.Type != tc.typ || e.Error.Message == "" {
				t.Errorf("error %+v code %q", e.Error, code)
			}
			if got := r.header.Get("Retry-After") != ""; got != tc.retryHdr {
				t.Errorf("Retry-After present=%v, want %v", got, tc.retryHdr)
			}
		})
	}
}

func TestOpenAICutAndSlow(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{})
	url := srv.URL + "/v1/chat/completions"
	for _, stream := range []bool{false, true} {
		r := post(t, nil, url, openAIHeaders, oaBody([]map[string]any{{"role": "user", "content": "a longer question to be cut in the middle\nFAULT cut"}}, map[string]any{"stream": stream}))
		if r.status != 200 || r.readErr == nil {
			t.Errorf("stream=%v: cut should fail while reading a 200 body, got status %d err %v body %q", stream, r.status, r.readErr, r.body)
		}
		if strings.Contains(string(r.body), "[DONE]") {
			t.Errorf("stream=%v: cut stream reached [DONE]", stream)
		}
	}
	// A slow answer outlives a short client timeout, and arrives intact without one.
	client := &http.Client{Timeout: 50 * time.Millisecond}
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"FAULT slow 10s"}]}`))
	_, err := client.Do(req)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("slow: want a client timeout, got %v", err)
	}
	r := post(t, nil, url, openAIHeaders, oaBody([]map[string]any{{"role": "user", "content": "hello\nFAULT slow 1ms"}}, nil))
	if a := oaDecode(t, r); !strings.Contains(*a.Choices[0].Message.Content, "hello") {
		t.Errorf("slow answer %s", r.body)
	}
}

func TestOpenAIRefusesBrokenRequests(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{APIKey: "sk-right-key-123"})
	url := srv.URL + "/v1/chat/completions"
	good := map[string]string{"Authorization": "Bearer sk-right-key-123"}
	call := map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": "{}"}}
	tests := []struct {
		name    string
		headers map[string]string
		body    any
		status  int
		want    string
	}{
		{"wrong key", openAIHeaders, oaBody([]map[string]any{{"role": "user", "content": "hi"}}, nil), 401, "Incorrect API key provided: sk-****0001"},
		{"not json", good, "{", 400, "could not parse the JSON body"},
		{"no model", good, map[string]any{"messages": []any{}}, 400, "you must provide a model parameter"},
		{"orphan tool result", good, oaBody([]map[string]any{{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_9", "content": "x"}}, nil), 400, "must be a response to a preceeding message with 'tool_calls'"},
		{"call without result", good, oaBody([]map[string]any{{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": []any{call}}, {"role": "user", "content": "and?"}}, nil), 400, "did not have response messages: call_1"},
		{"bad role", good, oaBody([]map[string]any{{"role": "robot", "content": "hi"}}, nil), 400, "Invalid value: 'robot'"},
	}
	for _, tc := range tests {
		r := post(t, nil, url, tc.headers, tc.body)
		if r.status != tc.status || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: status %d body %s; want %d containing %q", tc.name, r.status, r.body, tc.status, tc.want)
		}
	}
}

func TestScheduledFaultsThenRecovery(t *testing.T) {
	t.Parallel()
	m, srv := newServer(t, Config{})
	url := srv.URL + "/v1/chat/completions"
	body := oaBody([]map[string]any{{"role": "user", "content": "hi"}}, nil)
	m.FailNext(2, Fault{Kind: FaultRateLimit})
	// Over HTTP too: one overloaded after the two rate limits.
	if r := post(t, nil, srv.URL+"/fake/fail?fault=overloaded&n=1", nil, ""); r.status != 204 {
		t.Fatalf("/fake/fail: %d %s", r.status, r.body)
	}
	for i, want := range []int{429, 429, 503, 200} {
		if r := post(t, nil, url, openAIHeaders, body); r.status != want {
			t.Errorf("call %d: status %d, want %d", i, r.status, want)
		}
	}
	// A counted directive fails the first N sends of the same prompt only.
	counted := oaBody([]map[string]any{{"role": "user", "content": "retry me\nFAULT server x2"}}, nil)
	for i, want := range []int{500, 500, 200, 200} {
		if r := post(t, nil, url, openAIHeaders, counted); r.status != want {
			t.Errorf("counted call %d: status %d, want %d", i, r.status, want)
		}
	}
	s := m.Stats()
	if s.Requests != 8 || s.Failed != 5 {
		t.Errorf("stats %+v", s)
	}
	if r := post(t, nil, srv.URL+"/fake/fail?fault=explode", nil, ""); r.status != 400 || !strings.Contains(string(r.body), "unknown fault") {
		t.Errorf("bad fault: %d %s", r.status, r.body)
	}
}
