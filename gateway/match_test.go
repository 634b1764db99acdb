package gateway

import (
	"testing"

	"github.com/spoolhq/spool/store"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	u := func(s string) store.Message { return store.Message{Role: store.RoleUser, Content: s} }
	a := func(s string) store.Message { return store.Message{Role: store.RoleAssistant, Content: s} }
	call := store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "c1", Function: store.ToolFunction{Name: "x"}}}}
	res := store.Message{Role: store.RoleTool, Content: "out", ToolCallID: "c1"}
	sum := store.Message{Role: store.RoleUser, Content: "[summary]", Summary: true}
	cu := func(s string) Message { return Message{Role: "user", Content: s} }
	ca := func(s string) Message { return Message{Role: "assistant", Content: s} }

	tests := []struct {
		name  string
		hist  []store.Message
		prior []Message
		ok    bool
		cut   cutPoint
	}{
		{"in sync", []store.Message{u("q1"), a("r1")}, []Message{cu("q1"), ca("r1")}, true, cutPoint{}},
		{"tool rows are spool's own", []store.Message{u("q1"), call, res, a("r1")}, []Message{cu("q1"), ca("r1")}, true, cutPoint{}},
		{"whitespace around a reply", []store.Message{u("q1"), a("r1\n")}, []Message{cu("q1"), ca(" r1")}, true, cutPoint{}},
		{"edited second question", []store.Message{u("q1"), a("r1"), u("q2"), a("r2")}, []Message{cu("q1"), ca("r1"), cu("q2'"), ca("r2")}, false, cutPoint{rows: 2, visible: 2}},
		{"edited reply: cut before its question", []store.Message{u("q1"), a("r1"), u("q2"), a("r2")}, []Message{cu("q1"), ca("r1"), cu("q2"), ca("mine")}, false, cutPoint{rows: 2, visible: 2}},
		{"cut keeps the tool rows of a kept turn", []store.Message{u("q1"), call, res, a("r1"), u("q2"), a("r2")}, []Message{cu("q1"), ca("r1"), cu("other")}, false, cutPoint{rows: 4, visible: 2}},
		{"edited first question", []store.Message{u("q1"), a("r1")}, []Message{cu("q0"), ca("r1")}, false, cutPoint{}},
		{"client is behind", []store.Message{u("q1"), a("r1"), u("q2"), a("r2")}, []Message{cu("q1"), ca("r1")}, false, cutPoint{rows: 2, visible: 2}},
		{"compacted, in sync", []store.Message{u("q1"), sum, u("q5"), a("r5")}, []Message{cu("q1"), ca("r1"), cu("q2"), ca("r2"), cu("q5"), ca("r5")}, true, cutPoint{}},
		{"compacted, edited head", []store.Message{u("q1"), a("r1"), sum, u("q5"), a("r5")}, []Message{cu("q1"), ca("other")}, false, cutPoint{}},
		{"compacted, tail differs", []store.Message{u("q1"), sum, u("q5"), a("r5")}, []Message{cu("q1"), ca("r1"), cu("q5"), ca("r6")}, false, cutPoint{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cut, ok := match(tc.hist, tc.prior)
			if ok != tc.ok || cut != tc.cut {
				t.Fatalf("match = %+v, %v; want %+v, %v", cut, ok, tc.cut, tc.ok)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	k, err := ParseKeys(map[string]string{"alice": HashKey("a1") + ", sha256:" + HashKey("a2"), "bob": HashKey("b")})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"a1": "alice", "a2": "alice", "b": "bob"} {
		if got, ok := k.Authenticate(key); !ok || got != want {
			t.Errorf("Authenticate(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	for _, bad := range []string{"", "a3", HashKey("a1")} {
		if _, ok := k.Authenticate(bad); ok {
			t.Errorf("Authenticate(%q) succeeded", bad)
		}
	}
	for _, m := range []map[string]string{{"x": "nothex"}, {"x": "abcd"}, {" ": HashKey("k")}} {
		if _, err := ParseKeys(m); err == nil {
			t.Errorf("ParseKeys(%v) accepted it", m)
		}
	}
	if (Keys{}).Enabled() {
		t.Error("zero Keys enabled")
	}
}
