package fake

import (
	"encoding/json"
	"strings"
	"testing"
)

type anTestResponse struct {
	ID      string `json:"id"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		CacheCreation            struct {
			Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
			Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
		} `json:"cache_creation"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func anDecode(t *testing.T, r reply) anTestResponse {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var out anTestResponse
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return out
}

var anWeatherTool = []map[string]any{{"name": "get_weather", "description": "Get the current weather for a location",
	"input_schema": map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}}}}

func anBody(msgs []map[string]any, extra map[string]any) map[string]any {
	b := map[string]any{"model": "claude-sonnet-4-5-20250929", "max_tokens": 4096, "messages": msgs}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestAnthropicAnswerAndToolUseMatchRecordings(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{})
	url := srv.URL + "/v1/messages"
	r := post(t, nil, url, anthropicHeaders, anBody([]map[string]any{{"role": "user", "content": "Say hello in one word."}}, map[string]any{"system": "Be brief."}))
	sameShape(t, "text message", r.body, readFixture(t, "06-messages-nonstream-cache-read.json"))
	if r.header.Get("request-id") == "" || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", r.header)
	}
	a := anDecode(t, r)
	if a.StopReason != "end_turn" || !strings.Contains(a.Content[0].Text, "Say hello in one word.") || !strings.HasPrefix(a.ID, "msg_01") {
		t.Errorf("answer %+v", a)
	}

	msgs := []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "What is the weather in Tokyo?\nCALL get_weather {\"location\":\"Tokyo\"}"}}}}
	r = post(t, nil, url, anthropicHeaders, anBody(msgs, map[string]any{"tools": anWeatherTool}))
	sameShape(t, "tool_use message", r.body, readFixture(t, "07-messages-nonstream-tool-use-cache-read.json"))
	b := anDecode(t, r)
	if b.StopReason != "tool_use" || len(b.Content) != 1 || b.Content[0].Type != "tool_use" || string(b.Content[0].Input) != `{"location":"Tokyo"}` || !strings.HasPrefix(b.Content[0].ID, "toolu_01") {
		t.Fatalf("tool use %s", r.body)
	}
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": b.Content[0].ID, "name": "get_weather", "input": map[string]any{"location": "Tokyo"}}}},
		map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": b.Content[0].ID, "content": []map[string]any{{"type": "text", "text": "Sunny, 21C"}}}}})
	c := anDecode(t, post(t, nil, url, anthropicHeaders, anBody(msgs, map[string]any{"tools": anWeatherTool})))
	if c.StopReason != "end_turn" || !strings.Contains(c.Content[0].Text, "get_weather returned \"Sunny, 21C\"") {
		t.Errorf("after result: %+v", c)
	}
}

func TestAnthropicStreamMatchesRecording(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{})
	url := srv.URL + "/v1/messages"
	msgs := []map[string]any{{"role": "user", "content": "Checking the weather.\nCALL get_weather {\"location\":\"Paris\"}\nCALL get_weather"}}
	plain := anDecode(t, post(t, nil, url, anthropicHeaders, anBody(msgs, map[string]any{"tools": anWeatherTool})))
	r := post(t, nil, url, anthropicHeaders, anBody(msgs, map[string]any{"tools": anWeatherTool, "stream": true}))
	if r.header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("content type %q", r.header.Get("Content-Type"))
	}
	evs := parseSSE(t, r.body)
	var names []string
	for _, ev := range evs {
		names = append(names, ev.name)
		var typ struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(ev.data), &typ); err != nil || typ.Type != ev.name {
			t.Errorf("event %q carries type %q (%v)", ev.name, typ.Type, err)
		}
	}
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want {
		t.Errorf("events\n got %s\nwant %s", strings.Join(names, " "), want)
	}
	// Shapes against the tool-use recording (08b): tool block start and an input_json_delta.
	rec := parseSSE(t, readFixture(t, "08b-messages-stream-tool-use-input-json-delta.sse"))
	sameShape(t, "tool_use block start", []byte(evs[1].data), []byte(strings.Replace(rec[6].data, `"caller":{"type":"direct"},`, "", 1)))
	sameShape(t, "input_json_delta", []byte(evs[4].data), []byte(rec[8].data))

	// A text stream against the cache-era recording (08a), event by event.
	tr := post(t, nil, url, anthropicHeaders, anBody([]map[string]any{{"role": "user", "content": "Say hello"}}, map[string]any{"stream": true}))
	tevs := parseSSE(t, tr.body)
	rec = parseSSE(t, readFixture(t, "08a-messages-stream-text-cache-read.sse"))
	if len(tevs) < len(rec) {
		t.Fatalf("text stream has %d events: %s", len(tevs), tr.body)
	}
	extra := len(tevs) - len(rec) // more text deltas than the recording's one
	for i, ev := range rec {
		j := i
		if i > 3 {
			j = i + extra
		}
		if tevs[j].name != ev.name {
			t.Errorf("text stream event %d is %s, recording has %s", j, tevs[j].name, ev.name)
			continue
		}
		if ev.name == "ping" {
			if tevs[j].data != ev.data {
				t.Errorf("ping %q, want %q", tevs[j].data, ev.data)
			}
			continue
		}
		sameShape(t, ev.name, []byte(tevs[j].data), []byte(ev.data))
	}

	// The stream carries the same answer as the plain call.
	var args []string
	var text strings.Builder
	cur := ""
	for _, ev := range evs {
		var e struct {
			Delta struct {
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		json.Unmarshal([]byte(ev.data), &e)
		switch ev.name {
		case "content_block_delta":
			text.WriteString(e.Delta.Text)
			cur += e.Delta.PartialJSON
		case "content_block_stop":
			args, cur = append(args, cur), ""
		}
	}
	if text.String() != "" || len(plain.Content) != 2 {
		t.Fatalf("tool-only answer expected: text %q, plain %+v", text.String(), plain.Content)
	}
	if args[0] != string(plain.Content[0].Input) || args[1] != "" || string(plain.Content[1].Input) != "{}" {
		t.Errorf("streamed inputs %q vs %s, %s", args, plain.Content[0].Input, plain.Content[1].Input)
	}
}

func TestAnthropicFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault, typ string
		status     int
		fixture    string
		retryHdr   bool
	}{
		{"auth", "authentication_error", 401, "09c-error-529-overloaded-error.json", false},
		{"quota", "invalid_request_error", 400, "", false},
		{"rate_limit", "rate_limit_error", 429, "09b-error-429-rate-limit-error.json", true},
		{"overloaded", "overloaded_error", 529, "09c-error-529-overloaded-error.json", false},
		{"context_length", "invalid_request_error", 400, "", false},
		{"bad_request", "invalid_request_error", 400, "", false},
		{"server", "api_error", 500, "", false},
	}
	_, srv := newServer(t, Config{})
	for _, tc := range tests {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			r := post(t, nil, srv.URL+"/v1/messages", anthropicHeaders, anBody([]map[string]any{{"role": "user", "content": "FAULT " + tc.fault}}, nil))
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.fixture != "" {
				sameShape(t, "error", r.body, readFixture(t, tc.fixture))
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type, Message string
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil || e.Type != "error" || e.Error.Type != tc.typ || e.Error.Message == "" {
				t.Errorf("body %s (%v)", r.body, err)
			}
			if strings.Contains(string(r.body), "\n") {
				t.Errorf("Anthropic error bodies are compact: %q", r.body)
			}
			if got := r.header.Get("Retry-After") != ""; got != tc.retryHdr {
				t.Errorf("Retry-After present=%v", got)
			}
			switch tc.fault {
			case "quota":
				if !strings.Contains(e.Error.Message, "credit balance is too low") {
					t.Errorf("quota message %q", e.Error.Message)
				}
			case "context_length":
				if !strings.HasPrefix(e.Error.Message, "prompt is too long: ") {
					t.Errorf("context message %q", e.Error.Message)
				}
			}
		})
	}
	t.Run("cut", func(t *testing.T) {
		t.Parallel()
		for _, stream := range []bool{false, true} {
			r := post(t, nil, srv.URL+"/v1/messages", anthropicHeaders, anBody([]map[string]any{{"role": "user", "content": "cut me somewhere\nFAULT cut"}}, map[string]any{"stream": stream}))
			if r.status != 200 || r.readErr == nil || strings.Contains(string(r.body), "message_stop") {
				t.Errorf("stream=%v: status %d err %v body %q", stream, r.status, r.readErr, r.body)
			}
		}
	})
}

func TestAnthropicRefusesBrokenRequests(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{})
	url := srv.URL + "/v1/messages"
	bp := map[string]any{"type": "ephemeral"}
	five := []map[string]any{}
	for range 5 {
		five = append(five, map[string]any{"type": "text", "text": "x", "cache_control": bp})
	}
	tests := []struct {
		name    string
		headers map[string]string
		body    any
		want    string
	}{
		{"no version", map[string]string{"x-api-key": "k"}, anBody([]map[string]any{{"role": "user", "content": "hi"}}, nil), "anthropic-version: header is required"},
		{"no max_tokens", anthropicHeaders, map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "hi"}}}, "max_tokens: Field required"},
		{"five breakpoints", anthropicHeaders, anBody([]map[string]any{{"role": "user", "content": five}}, nil), "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"orphan tool_result", anthropicHeaders, anBody([]map[string]any{{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"},
			{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_x", "content": "r"}}}}, nil),
			"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x."},
		{"tool_use without result", anthropicHeaders, anBody([]map[string]any{{"role": "user", "content": "hi"},
			{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "toolu_y", "name": "f", "input": map[string]any{}}}},
			{"role": "user", "content": "go on"}}, nil),
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_y."},
	}
	for _, tc := range tests {
		r := post(t, nil, url, tc.headers, tc.body)
		if r.status != 400 || !strings.Contains(string(r.body), tc.want) || !strings.Contains(string(r.body), `"type":"invalid_request_error"`) {
			t.Errorf("%s: %d %s; want 400 with %q", tc.name, r.status, r.body, tc.want)
		}
	}
}
