package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

func request(system string, tools []string, contents ...string) provider.Request {
	req := provider.Request{Model: "m1", System: system}
	for _, n := range tools {
		req.Tools = append(req.Tools, provider.Tool{Name: n, Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)})
	}
	for i, c := range contents {
		role := store.RoleUser
		if i%2 == 1 {
			role = store.RoleAssistant
		}
		req.Messages = append(req.Messages, provider.Message{Role: role, Content: c})
	}
	return req
}

func TestDiff(t *testing.T) {
	t.Parallel()
	tiers := []string{"stable", "context", "volatile"}
	sys := strings.Join(tiers, "\n\n")
	base := FingerprintOf(request(sys, []string{"a", "b"}, "u1", "a1", "u2"), tiers)
	cases := []struct {
		name  string
		req   provider.Request
		tiers []string
		want  Break
	}{
		{"identical", request(sys, []string{"a", "b"}, "u1", "a1", "u2"), tiers, Break{Tier: -1, Index: -1}},
		{"appended messages", request(sys, []string{"a", "b"}, "u1", "a1", "u2", "a2", "u3"), tiers, Break{Tier: -1, Index: -1}},
		{"dropped from the end", request(sys, []string{"a", "b"}, "u1"), tiers, Break{Tier: -1, Index: -1}},
		{"restored prompt, same bytes", request(sys, []string{"a", "b"}, "u1", "a1", "u2", "a2"), nil, Break{Tier: -1, Index: -1}},
		{"model", func() provider.Request { r := request(sys, []string{"a", "b"}, "u1"); r.Model = "m2"; return r }(), tiers, Break{Layer: LayerModel, Tier: -1, Index: -1}},
		{"tool added", request(sys, []string{"a", "b", "c"}, "u1", "a1", "u2"), tiers, Break{Layer: LayerTools, Tier: -1, Index: -1}},
		{"tools reordered", request(sys, []string{"b", "a"}, "u1", "a1", "u2"), tiers, Break{Layer: LayerTools, Tier: -1, Index: -1}},
		{"volatile tier", request("stable\n\ncontext\n\nvolatile2", []string{"a", "b"}, "u1"), []string{"stable", "context", "volatile2"}, Break{Layer: LayerSystem, Tier: 2, Index: -1}},
		{"system changed, tiers unknown", request("stable\n\ncontext\n\nvolatile2", []string{"a", "b"}, "u1"), nil, Break{Layer: LayerSystem, Tier: -1, Index: -1}},
		{"tiers that do not match System are ignored", request("other", []string{"a", "b"}, "u1"), []string{"x", "y", "z"}, Break{Layer: LayerSystem, Tier: -1, Index: -1}},
		{"message 1 rewritten", request(sys, []string{"a", "b"}, "u1", "a1 edited", "u2", "a2"), tiers, Break{Layer: LayerMessage, Tier: -1, Index: 1}},
		{"compaction replaced the head", request(sys, []string{"a", "b"}, "summary", "a1", "u2", "a2"), tiers, Break{Layer: LayerMessage, Tier: -1, Index: 0}},
	}
	for _, c := range cases {
		got := Diff(base, FingerprintOf(c.req, c.tiers))
		if got != c.want {
			t.Errorf("%s: Diff = %+v (%s), want %+v", c.name, got, got, c.want)
		}
	}
}

func TestFingerprintFieldBoundaries(t *testing.T) {
	t.Parallel()
	a := FingerprintOf(provider.Request{Messages: []provider.Message{{Role: "user", Content: "ab", ToolName: "c"}}}, nil)
	b := FingerprintOf(provider.Request{Messages: []provider.Message{{Role: "user", Content: "a", ToolName: "bc"}}}, nil)
	if a.Messages[0] == b.Messages[0] {
		t.Error("moving bytes between fields kept the hash")
	}
	c := FingerprintOf(provider.Request{Messages: []provider.Message{{Role: "assistant", ToolCalls: []store.ToolCall{{ID: "1", Function: store.ToolFunction{Arguments: "{}"}}}}}}, nil)
	d := FingerprintOf(provider.Request{Messages: []provider.Message{{Role: "assistant", ToolCalls: []store.ToolCall{{ID: "1", Function: store.ToolFunction{Arguments: "{ }"}}}}}}, nil)
	if c.Messages[0] == d.Messages[0] {
		t.Error("tool-call arguments are not hashed")
	}
	e := FingerprintOf(provider.Request{Messages: []provider.Message{{Role: "assistant", ReasoningDetails: json.RawMessage(`[1]`)}}}, nil)
	f := FingerprintOf(provider.Request{Messages: []provider.Message{{Role: "assistant", ReasoningDetails: json.RawMessage(`[2]`)}}}, nil)
	if e.Messages[0] == f.Messages[0] {
		t.Error("reasoning details are not hashed")
	}
	if len(a.Messages[0]) != 64 || len(a.Tools) != 64 || len(a.System) != 64 {
		t.Errorf("hashes are not sha256 hex: %+v", a)
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	sys := "s"
	prev := FingerprintOf(request(sys, []string{"a"}, "u1", "a1", "u2"), nil)
	same := FingerprintOf(request(sys, []string{"a"}, "u1", "a1", "u2", "a2", "u3"), nil)
	edited := FingerprintOf(request(sys, []string{"a"}, "u1", "a1 edited", "u2"), nil)
	newSys := FingerprintOf(request("s2", []string{"a"}, "u1", "a1", "u2"), nil)
	newTools := FingerprintOf(request(sys, []string{"a", "b"}, "summary", "u2"), nil)
	expired := Hints{Elapsed: 6 * time.Minute, TTL: 5 * time.Minute}
	cases := []struct {
		name  string
		cur   Fingerprint
		hints Hints
		want  Reason
		layer Layer
	}{
		{"compaction rewrote the history", edited, Hints{Compacted: true}, ReasonCompaction, LayerMessage},
		{"compaction rebuilt the prompt", newSys, Hints{Compacted: true, Resumed: true}, ReasonCompaction, LayerSystem},
		{"tools changed, even with a compaction", newTools, Hints{Compacted: true}, ReasonTools, LayerTools},
		{"nothing changed, TTL expired", same, expired, ReasonTTL, LayerNone},
		{"nothing changed, within TTL", same, Hints{Elapsed: time.Minute, TTL: 5 * time.Minute}, ReasonUnknown, LayerNone},
		{"nothing changed, resumed", same, Hints{Resumed: true}, ReasonResume, LayerNone},
		{"bytes changed across a resume", edited, Hints{Resumed: true}, ReasonResume, LayerMessage},
		{"edit within TTL", edited, Hints{Elapsed: time.Second, TTL: time.Minute}, ReasonEdit, LayerMessage},
		{"edit after TTL: expiry explains the miss", edited, expired, ReasonTTL, LayerMessage},
		{"system edited without a compaction", newSys, Hints{}, ReasonEdit, LayerSystem},
		{"unknown TTL never expires", same, Hints{Elapsed: time.Hour}, ReasonUnknown, LayerNone},
	}
	for _, c := range cases {
		got := Explain(prev, c.cur, c.hints)
		if got.Reason != c.want || got.Layer != c.layer {
			t.Errorf("%s: Explain = %s, want layer %q reason %q", c.name, got, c.layer, c.want)
		}
	}
}

func TestBreakString(t *testing.T) {
	t.Parallel()
	cases := map[string]Break{
		"no change":                  {Tier: -1, Index: -1},
		"message 14 (edit)":          {Layer: LayerMessage, Index: 14, Tier: -1, Reason: ReasonEdit},
		"system tier 2 (compaction)": {Layer: LayerSystem, Tier: 2, Index: -1, Reason: ReasonCompaction},
		"system":                     {Layer: LayerSystem, Tier: -1, Index: -1},
		"tools (tools)":              {Layer: LayerTools, Tier: -1, Index: -1, Reason: ReasonTools},
	}
	for want, b := range cases {
		if got := b.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

// The conversation's requests, fingerprinted, never break: the one rule, checked end to end.
func TestConversationHasNoBreaks(t *testing.T) {
	t.Parallel()
	requests, _ := conversation(t)
	var prev Fingerprint
	for i, body := range requests {
		var ms []provider.Message
		if err := json.Unmarshal(body, &ms); err != nil {
			t.Fatal(err)
		}
		cur := FingerprintOf(provider.Request{Model: "m", System: "sys", Messages: ms}, nil)
		if i > 0 {
			if b := Diff(prev, cur); b.Changed() {
				t.Errorf("request %d breaks the cache at %s", i, b)
			}
		}
		prev = cur
	}
}

func BenchmarkFingerprint(b *testing.B) {
	req := provider.Request{System: strings.Repeat("s", 20_000)}
	for range 2000 {
		req.Messages = append(req.Messages, provider.Message{Role: "user", Content: strings.Repeat("x", 400)})
	}
	b.ReportAllocs()
	for b.Loop() {
		FingerprintOf(req, nil)
	}
}
