package compress

import (
	"reflect"
	"testing"

	"github.com/spoolhq/spool/store"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	call := func(ids ...string) store.Message {
		m := store.Message{Role: store.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, store.ToolCall{ID: id, Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: "{}"}})
		}
		return m
	}
	res := func(id string) store.Message {
		return store.Message{Role: store.RoleTool, ToolCallID: id, Content: "out " + id}
	}
	user := store.Message{Role: store.RoleUser, Content: "hi"}
	text := store.Message{Role: store.RoleAssistant, Content: "done"}
	withText := func(m store.Message, s string) store.Message { m.Content = s; return m }

	tests := []struct {
		name string
		in   []store.Message
		want []store.Message
	}{
		{"valid history unchanged", []store.Message{user, call("a", "b"), res("a"), res("b"), text},
			[]store.Message{user, call("a", "b"), res("a"), res("b"), text}},
		{"orphan tool result dropped", []store.Message{user, res("x"), text},
			[]store.Message{user, text}},
		{"call without result stripped, text kept", []store.Message{user, withText(call("a"), "let me look"), text},
			[]store.Message{user, {Role: store.RoleAssistant, Content: "let me look"}, text}},
		{"call without result and no text becomes (tool call removed)", []store.Message{user, call("a"), text},
			[]store.Message{user, {Role: store.RoleAssistant, Content: ToolCallRemoved}, text}},
		{"partial results keep only answered calls", []store.Message{user, call("a", "b"), res("b"), text},
			[]store.Message{user, call("b"), res("b"), text}},
		{"result separated from its call by a user turn", []store.Message{user, call("a"), user, res("a")},
			[]store.Message{user, {Role: store.RoleAssistant, Content: ToolCallRemoved}, user}},
		{"repeated result for one call dropped", []store.Message{user, call("a"), res("a"), res("a"), text},
			[]store.Message{user, call("a"), res("a"), text}},
		{"result of another assistant's call dropped", []store.Message{user, call("a"), res("a"), call("b"), res("a"), res("b")},
			[]store.Message{user, call("a"), res("a"), call("b"), res("b")}},
		{"no user turn: continuation marker appended", []store.Message{text},
			[]store.Message{text, {Role: store.RoleUser, Content: ContinuationUser}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Sanitize(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %s\nwant %s", roles(got), roles(tt.want))
			}
			if why := Validate(got); why != "" {
				t.Fatalf("sanitised history invalid: %s", why)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"u c t":     "",
		"u c":       "tool call call_1 has no result",
		"a":         "no user message",
		"u S a S a": "more than one compaction summary",
	} {
		if got := Validate(hist(spec)); got != want {
			t.Errorf("Validate(%s) = %q, want %q", spec, got, want)
		}
	}
	orphan := append(hist("u a"), store.Message{Role: store.RoleTool, ToolCallID: "x"})
	if Validate(orphan) == "" {
		t.Error("orphan tool result accepted")
	}
}
