package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func echoTool(name string) Tool {
	return Tool{
		Name:        name,
		Description: "echo " + name,
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"text":{"type":"string"},
			"n":{"type":"integer","minimum":0,"maximum":5},
			"mode":{"type":"string","enum":["a","b"]},
			"tags":{"type":"array","items":{"type":"string"}}
		},"required":["text"],"additionalProperties":false}`),
		Run: func(_ context.Context, _ Env, args json.RawMessage) (string, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return a.Text, nil
		},
	}
}

func TestDefinitionsStableAcrossRegistries(t *testing.T) {
	t.Parallel()
	a := Default()
	// Built in reverse order, from tools whose schemas are written differently (spacing, key
	// order): the definitions must still be the same bytes.
	rev := Builtins()
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	for i := range rev {
		var v map[string]any
		if err := json.Unmarshal(rev[i].Parameters, &v); err != nil {
			t.Fatal(err)
		}
		rev[i].Parameters, _ = json.MarshalIndent(v, "", "    ")
	}
	b, err := New(rev...)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a.Definitions())
	jb, _ := json.Marshal(b.Definitions())
	if !bytes.Equal(ja, jb) {
		t.Fatalf("definitions differ:\n%s\n%s", ja, jb)
	}
	var names []string
	for _, d := range a.Definitions() {
		names = append(names, d.Name)
	}
	want := "edit_file list_files memory read_file search_files session_search terminal write_file"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	// The caller may scribble on what it got without touching the registry.
	defs := a.Definitions()
	defs[0].Parameters[0] = 'X'
	defs[0].Name = "changed"
	ja2, _ := json.Marshal(a.Definitions())
	if !bytes.Equal(ja, ja2) {
		t.Fatal("mutating returned definitions changed the registry")
	}
}

func TestNewRejectsBadTools(t *testing.T) {
	t.Parallel()
	ok := echoTool("ok")
	cases := []struct {
		name  string
		tools []Tool
		want  string
	}{
		{"duplicate", []Tool{ok, ok}, "registered twice"},
		{"bad name", []Tool{func() Tool { x := ok; x.Name = "has space"; return x }()}, "tool name"},
		{"no run", []Tool{func() Tool { x := ok; x.Run = nil; return x }()}, "no Run"},
		{"bad json", []Tool{func() Tool { x := ok; x.Parameters = json.RawMessage(`{"type":`); return x }()}, "not valid JSON"},
		{"not object", []Tool{func() Tool { x := ok; x.Parameters = json.RawMessage(`{"type":"string"}`); return x }()}, "must be \"object\""},
		{"unknown type", []Tool{func() Tool {
			x := ok
			x.Parameters = json.RawMessage(`{"type":"object","properties":{"a":{"type":"strnig"}}}`)
			return x
		}()}, "unknown type"},
		{"required undefined", []Tool{func() Tool {
			x := ok
			x.Parameters = json.RawMessage(`{"type":"object","required":["a"]}`)
			return x
		}()}, "not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(c.tools...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want error containing %q", err, c.want)
			}
		})
	}
}

func TestCallArgumentErrors(t *testing.T) {
	t.Parallel()
	r, err := New(echoTool("echo"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, tool, args string
		want             string
		isErr            bool
	}{
		{"ok", "echo", `{"text":"hi"}`, "hi", false},
		{"ok with all fields", "echo", `{"text":"hi","n":5,"mode":"b","tags":["x"]}`, "hi", false},
		{"integer as float", "echo", `{"text":"hi","n":2.0}`, "hi", false},
		{"unknown tool", "nope", `{}`, `unknown tool "nope"; available tools: echo`, true},
		{"invalid json", "echo", `{"text":`, "invalid arguments for echo: not valid JSON", true},
		{"trailing data", "echo", `{"text":"a"} {}`, "extra data", true},
		{"not object", "echo", `["text"]`, "want a JSON object, got array", true},
		{"missing required", "echo", `{}`, `missing required property "text"`, true},
		{"empty args", "echo", ``, `missing required property "text"`, true},
		{"wrong type", "echo", `{"text":5}`, "text: want string, got number 5", true},
		{"fractional integer", "echo", `{"text":"a","n":1.5}`, "n: want integer", true},
		{"above maximum", "echo", `{"text":"a","n":6}`, "above the maximum", true},
		{"below minimum", "echo", `{"text":"a","n":-1}`, "below the minimum", true},
		{"enum", "echo", `{"text":"a","mode":"c"}`, `mode: want one of "a", "b"`, true},
		{"items", "echo", `{"text":"a","tags":[1]}`, "tags[0]: want string", true},
		{"unknown property", "echo", `{"text":"a","extra":1}`, `unknown property "extra"`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := r.Call(context.Background(), Env{}, c.tool, c.args)
			if res.IsError != c.isErr || !strings.Contains(res.Content, c.want) {
				t.Fatalf("Call = %+v, want IsError=%v and %q", res, c.isErr, c.want)
			}
		})
	}
}

func TestCallSurvivesPanicsAndErrors(t *testing.T) {
	t.Parallel()
	boom := echoTool("boom")
	boom.Run = func(context.Context, Env, json.RawMessage) (string, error) {
		var m map[string]int
		m["x"] = 1 // nil map write: a real runtime panic
		return "unreachable", nil
	}
	fail := echoTool("fail")
	fail.Run = func(context.Context, Env, json.RawMessage) (string, error) {
		return "partial output", errors.New("disk on fire")
	}
	cancelled := echoTool("slow")
	cancelled.Run = func(ctx context.Context, _ Env, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}
	r, err := New(boom, fail, cancelled)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Call(context.Background(), Env{}, "boom", `{"text":"x"}`)
	if !res.IsError || !strings.HasPrefix(res.Content, "tool boom failed: panic: assignment to entry in nil map") {
		t.Fatalf("panic result: %+v", res)
	}
	if len(res.Content) > 4000 {
		t.Fatalf("panic result carries %d bytes of stack", len(res.Content))
	}
	res = r.Call(context.Background(), Env{}, "fail", `{"text":"x"}`)
	if !res.IsError || res.Content != "tool fail failed: disk on fire\npartial output" {
		t.Fatalf("error result: %+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = r.Call(ctx, Env{}, "slow", `{"text":"x"}`)
	if !res.IsError || !strings.HasPrefix(res.Content, "tool slow cancelled: context canceled") {
		t.Fatalf("cancelled result: %+v", res)
	}
}

func TestCallCapsOutput(t *testing.T) {
	t.Parallel()
	big := echoTool("big")
	big.Run = func(context.Context, Env, json.RawMessage) (string, error) {
		return "HEAD" + strings.Repeat("é", 20_000) + "TAIL", nil
	}
	small := echoTool("small")
	small.MaxOutput = 100
	small.Run = big.Run
	r, err := New(big, small)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool  string
		limit int
	}{{"big", DefaultMaxOutput}, {"small", 100}} {
		res := r.Call(context.Background(), Env{}, c.tool, `{"text":""}`)
		if res.IsError || len(res.Content) > c.limit {
			t.Fatalf("%s: %d bytes, limit %d", c.tool, len(res.Content), c.limit)
		}
		if !strings.HasPrefix(res.Content, "HEAD") || !strings.HasSuffix(res.Content, "TAIL") ||
			!strings.Contains(res.Content, "bytes omitted ...]") || !utf8.ValidString(res.Content) {
			t.Fatalf("%s: bad cut: %q...%q", c.tool, res.Content[:20], res.Content[len(res.Content)-20:])
		}
	}
}

func TestTruncateAndHeadTail(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 50, 99, 100, 101, 1000, 100_000} {
		s := strings.Repeat("a€", n)
		for _, limit := range []int{10, 100, 1000, 4096} {
			got := Truncate(s, limit)
			if len(got) > limit && len(s) > limit || !utf8.ValidString(got) {
				t.Fatalf("Truncate(%d bytes, %d) = %d bytes, valid=%v", len(s), limit, len(got), utf8.ValidString(got))
			}
			if len(s) <= limit && got != s {
				t.Fatalf("Truncate changed a string that fits")
			}
			if limit >= 100 && len(s) > limit && !strings.Contains(got, "omitted") {
				t.Fatalf("no marker in %q", got)
			}
			// Streaming in small writes keeps the same head and tail as cutting the whole text.
			w := newHeadTail(limit)
			for i := 0; i < len(s); i += 7 {
				w.Write([]byte(s[i:min(i+7, len(s))]))
			}
			if hs := w.String(); len(s) <= limit && hs != s || len(s) > limit && (!strings.HasSuffix(s, hs[len(hs)-limit/3:]) || !utf8.ValidString(hs)) {
				t.Fatalf("headTail(%d bytes, %d) = %q", len(s), limit, hs)
			}
		}
	}
}
