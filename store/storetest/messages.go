package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

func testMessageRoundTrip(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "rt"})
	ts := time.Date(2026, 11, 29, 15, 42, 33, 123456000, time.UTC)
	in := []store.Message{
		{Role: store.RoleSystem, Content: "system text", Timestamp: ts},
		{Role: store.RoleUser, Content: "请修复 parser 🐛 — naïve café\n\ttabs and \"quotes\" \\ back", APIContent: "请修复 parser 🐛\n\n<memory-context>recall</memory-context>", Timestamp: ts, TokenCount: 17},
		{Role: store.RoleAssistant, Content: "", Reasoning: "think: 考虑", ReasoningDetails: json.RawMessage(`[{"type":"thinking","signature":"abc=="}]`),
			ToolCalls: []store.ToolCall{
				toolCall("call_1", "read_file", `{"path":"src/main.go"}`),
				toolCall("call_2", "terminal", `{"cmd":"go test ./... \u0026\u0026 echo ok","note":"✓"}`),
			}, FinishReason: "tool_calls", Timestamp: ts.Add(time.Second)},
		toolResult("call_1", "read_file", "package main\n\nfunc main() {}\n"),
		toolResult("call_2", "terminal", strings.Repeat("ok\n", 5000)),
		{Role: store.RoleAssistant, Content: "Done. 日本語のテキスト, 한국어, emoji 👍🏽", FinishReason: "stop", Summary: false},
	}
	ids := mustAppend(t, st, "rt", in[:2]...)
	id3, err := st.Append(bg, "rt", in[2])
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id3)
	ids = append(ids, mustAppend(t, st, "rt", in[3:]...)...)
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ids not increasing: %v", ids)
		}
	}
	out := mustConversation(t, st, "rt", store.ViewActive)
	if len(out) != len(in) {
		t.Fatalf("got %d messages, want %d", len(out), len(in))
	}
	for i := range in {
		want := in[i]
		got := out[i]
		if got.ID != ids[i] || got.SessionID != "rt" || !got.Active || got.Compacted {
			t.Fatalf("message %d bookkeeping: %+v", i, got)
		}
		if want.Timestamp.IsZero() {
			if got.Timestamp.IsZero() || time.Since(got.Timestamp) > time.Minute {
				t.Fatalf("message %d: default timestamp %v", i, got.Timestamp)
			}
			want.Timestamp = got.Timestamp
		}
		if !got.Timestamp.Equal(want.Timestamp) {
			t.Fatalf("message %d timestamp %v, want %v", i, got.Timestamp, want.Timestamp)
		}
		got.ID, got.SessionID, got.Active, got.Timestamp = 0, "", false, time.Time{}
		want.Timestamp = time.Time{}
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Fatalf("message %d round trip:\n got %#v\nwant %#v", i, got, want)
		}
	}
	expectCounts(t, st, "rt", 6, 2)

	_, err = st.Append(bg, "missing", user("x"))
	wantErr(t, err, store.ErrNotFound, "append to missing session")
	_, err = st.Conversation(bg, "missing", store.ViewActive)
	wantErr(t, err, store.ErrNotFound, "load missing session")
	_, err = st.Conversation(bg, "rt", store.View(42))
	wantErr(t, err, store.ErrInvalid, "unknown view")
	if empty := mustConversation(t, st, mustCreate(t, st, store.NewSession{ID: "empty"}).ID, store.ViewActive); len(empty) != 0 {
		t.Fatalf("empty session has %d messages", len(empty))
	}
}

// normalize makes nil and empty equivalent for comparison.
func normalize(m store.Message) store.Message {
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	}
	if len(m.ReasoningDetails) == 0 {
		m.ReasoningDetails = nil
	}
	return m
}

func testTextCleaning(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "tc"})
	bad := "ok \xff\xfe then a lone surrogate \xed\xa0\x80 end"
	if _, err := st.Append(bg, "tc", store.Message{Role: store.RoleUser, Content: bad,
		ToolCalls: []store.ToolCall{toolCall("c\xff", "n", `{"a":"\xff"}`)}}); err != nil {
		t.Fatalf("invalid UTF-8 should be cleaned, not refused: %v", err)
	}
	got := mustConversation(t, st, "tc", store.ViewActive)[0]
	if !utf8.ValidString(got.Content) || !strings.HasPrefix(got.Content, "ok ") || !strings.HasSuffix(got.Content, " end") ||
		!strings.Contains(got.Content, "\uFFFD") {
		t.Fatalf("cleaned content = %q", got.Content)
	}
	if !utf8.ValidString(got.ToolCalls[0].ID) || !utf8.ValidString(got.ToolCalls[0].Function.Arguments) {
		t.Fatalf("tool call not cleaned: %+v", got.ToolCalls[0])
	}
	// Control characters in identifiers are cleaned too (backends may use them as separators).
	if _, err := st.Append(bg, "tc", toolResult("id\x1fwith\x00controls", "tool\x1e", "r")); err != nil {
		t.Fatal(err)
	}
	res := mustConversation(t, st, "tc", store.ViewActive)[1]
	if res.ToolCallID != "id\uFFFDwith\uFFFDcontrols" || res.ToolName != "tool\uFFFD" || res.Content != "r" {
		t.Fatalf("identifiers with control characters: %q %q %q", res.ToolCallID, res.ToolName, res.Content)
	}
	// Refused input leaves nothing behind.
	_, err := st.Append(bg, "tc", store.Message{Role: "robot", Content: "x"})
	wantErr(t, err, store.ErrInvalid, "bad role")
	_, err = st.Append(bg, "tc", store.Message{Role: store.RoleAssistant, ReasoningDetails: json.RawMessage(`{broken`)})
	wantErr(t, err, store.ErrInvalid, "bad reasoning JSON")
	if n := len(mustConversation(t, st, "tc", store.ViewAll)); n != 2 {
		t.Fatalf("refused appends stored rows: %d", n)
	}
	expectCounts(t, st, "tc", 2, 1)
}

func testBatchAtomic(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "b"})
	mustAppend(t, st, "b", user("one"))
	_, err := st.AppendBatch(bg, "b", []store.Message{assistant("two"), {Role: "nope"}, assistant("three")})
	wantErr(t, err, store.ErrInvalid, "batch with a bad message")
	if got := contents(mustConversation(t, st, "b", store.ViewAll)); !equalStrings(got, []string{"one"}) {
		t.Fatalf("failed batch left %v", got)
	}
	expectCounts(t, st, "b", 1, 0)
	ids, err := st.AppendBatch(bg, "b", nil)
	if err != nil || len(ids) != 0 {
		t.Fatalf("empty batch: %v %v", ids, err)
	}
}

func testUndo(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "u"})
	_, err := Undo(bg, st, "u")
	wantErr(t, err, store.ErrNotFound, "undo with nothing to undo")
	mustAppend(t, st, "u", user("first ask"), assistant("first answer"))
	mustAppend(t, st, "u", user("second ask"), callingAssistant("calling", toolCall("c1", "t", "{}")),
		toolResult("c1", "t", "result"), assistant("second answer"))
	n, err := Undo(bg, st, "u")
	if err != nil || n != 4 {
		t.Fatalf("undo = %d, %v; want 4 rows", n, err)
	}
	if got := contents(mustConversation(t, st, "u", store.ViewActive)); !equalStrings(got, []string{"first ask", "first answer"}) {
		t.Fatalf("after undo: %q", got)
	}
	if got := contents(mustConversation(t, st, "u", store.ViewDisplay)); len(got) != 2 {
		t.Fatalf("undone rows still displayed: %q", got)
	}
	if hits, _ := st.Search(bg, store.SearchQuery{Text: "second"}); len(hits) != 0 {
		t.Fatalf("undone rows still searchable: %+v", hits)
	}
	expectCounts(t, st, "u", 2, 0)
	_, err = Undo(bg, st, "missing")
	wantErr(t, err, store.ErrNotFound, "undo in a missing session")
	expectHealthy(t, st)
}
