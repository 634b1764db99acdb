package wire

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// agentStep is what an agent does with a build: send the messages, and give the current user
// message its sidecar so later requests replay the same bytes.
func agentStep(t *testing.T, history []store.Message, turn TurnContext) ([]store.Message, []byte, Result) {
	t.Helper()
	res, err := Build(history, turn)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(res.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if res.Injected {
		history = append([]store.Message(nil), history...)
		history[res.Current].APIContent = res.APIContent
	}
	return history, body, res
}

func msg(id int64, role, content string) store.Message {
	return store.Message{
		ID: id, SessionID: "secret-session-id", Role: role, Content: content,
		Timestamp: time.Date(2026, 11, 29, 15, 42, int(id), 0, time.UTC), Active: true, TokenCount: 99,
	}
}

// conversation plays three turns; turn 2 calls a tool, so it makes two requests.
func conversation(t *testing.T) (requests [][]byte, history []store.Message) {
	t.Helper()
	var body []byte
	var res Result

	history = append(history, msg(1, store.RoleUser, "What does the build use?"))
	history, body, res = agentStep(t, history, TurnContext{Recall: "- the build uses make"})
	if !res.Injected || res.Current != 0 || res.APIContent == "" {
		t.Fatalf("turn 1 not injected: %+v", res)
	}
	requests = append(requests, body)
	history = append(history, msg(2, store.RoleAssistant, "It uses make."))

	turn2 := TurnContext{Recall: "- tests run with go test ./...", Plugin: []string{"[git] branch main, clean"}}
	history = append(history, msg(3, store.RoleUser, "Run the tests."))
	history, body, _ = agentStep(t, history, turn2)
	requests = append(requests, body)
	call := msg(4, store.RoleAssistant, "")
	call.ToolCalls = []store.ToolCall{{ID: "call_1", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"go test ./..."}`}}}
	call.Reasoning = "The user wants the tests run."
	call.ReasoningDetails = json.RawMessage(`[{"type":"reasoning.encrypted","data":"b64=="}]`)
	result := msg(5, store.RoleTool, "ok  \tgithub.com/x/y\t0.1s")
	result.ToolCallID, result.ToolName = "call_1", "terminal"
	history = append(history, call, result)
	// The second call of the same turn: the sidecar exists, so nothing is injected again.
	history, body, res = agentStep(t, history, turn2)
	if res.Injected || res.Current != 2 {
		t.Fatalf("second call of turn 2 re-injected: %+v", res)
	}
	requests = append(requests, body)
	done := msg(6, store.RoleAssistant, "")
	done.APIContent = "All tests pass." // a reasoning-only clean stop keeps its text in the sidecar
	done.Reasoning = "Tests passed."
	history = append(history, done)

	history = append(history, msg(7, store.RoleUser, "Thanks."))
	history, body, res = agentStep(t, history, TurnContext{Recall: "  \n", Plugin: []string{""}})
	if res.Injected || res.APIContent != "" {
		t.Fatalf("a blank turn context injected something: %+v", res)
	}
	requests = append(requests, body)
	return requests, history
}

func TestRequestsExtendTheirPrefix(t *testing.T) {
	t.Parallel()
	requests, _ := conversation(t)
	for i := 1; i < len(requests); i++ {
		prefix := string(bytes.TrimSuffix(requests[i-1], []byte("]"))) + ","
		if !bytes.HasPrefix(requests[i], []byte(prefix)) {
			t.Errorf("request %d does not start with the bytes of request %d:\nprev %s\ncur  %s", i, i-1, requests[i-1], requests[i])
		}
	}
	golden := filepath.Join("testdata", "turns.golden")
	got := bytes.Join(requests, []byte("\n"))
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./wire -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request bytes differ from %s (rerun with -update only if the change is intended):\n%s", golden, got)
	}
}

func TestResumeReplaysTheSameBytes(t *testing.T) {
	t.Parallel()
	requests, history := conversation(t)
	// Persist and reload, as a restarted process would; row metadata changes on the way.
	path := filepath.Join(t.TempDir(), "history.json")
	raw, err := json.Marshal(history)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var loaded []store.Message
	if err := json.Unmarshal(raw, &loaded); err != nil {
		t.Fatal(err)
	}
	for i := range loaded {
		loaded[i].ID += 1000
		loaded[i].Timestamp = loaded[i].Timestamp.Add(time.Hour)
		loaded[i].TokenCount = 0
	}
	// The last request replayed after resume.
	res, err := Build(loaded, TurnContext{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(res.Messages)
	last := requests[len(requests)-1]
	if !bytes.Equal(body, last) {
		t.Errorf("resumed request differs:\nbefore %s\nafter  %s", last, body)
	}
	// Turn 2's replay from the reloaded prefix is byte-identical too, whatever recall the
	// resumed process finds: the sidecar wins.
	res, err = Build(loaded[:5], TurnContext{Recall: "something recalled later"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Injected {
		t.Error("resume injected into a message that has its sidecar")
	}
	body, _ = json.Marshal(res.Messages)
	if !bytes.Equal(body, requests[2]) {
		t.Errorf("resumed turn-2 request differs:\nbefore %s\nafter  %s", requests[2], body)
	}
}

func deepCopy(h []store.Message) []store.Message {
	out := make([]store.Message, len(h))
	for i, m := range h {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		m.ReasoningDetails = slices.Clone(m.ReasoningDetails)
		out[i] = m
	}
	return out
}

func TestBuildNeverMutatesHistory(t *testing.T) {
	t.Parallel()
	_, history := conversation(t)
	history[len(history)-1].APIContent = "" // make the last user message injectable
	before := deepCopy(history)
	res, err := Build(history, TurnContext{Recall: "fact", Plugin: []string{"plugin"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Injected {
		t.Fatal("expected an injection")
	}
	if !reflect.DeepEqual(before, history) {
		t.Fatal("Build changed the history")
	}
	// The result must not alias the history's slices either.
	for i := range res.Messages {
		m := &res.Messages[i]
		for j := range m.ToolCalls {
			m.ToolCalls[j].Function.Arguments = "{}"
		}
		for j := range m.ReasoningDetails {
			m.ReasoningDetails[j] = 'x'
		}
	}
	if !reflect.DeepEqual(before, history) {
		t.Fatal("changing the built messages changed the history")
	}
}

func TestPrivateFieldsStayHome(t *testing.T) {
	t.Parallel()
	requests, _ := conversation(t)
	allowed := map[string]bool{"role": true, "content": true, "tool_calls": true, "tool_call_id": true,
		"name": true, "reasoning": true, "reasoning_details": true}
	for i, body := range requests {
		if bytes.Contains(body, []byte("secret-session-id")) || bytes.Contains(body, []byte("2026-11-29")) {
			t.Errorf("request %d leaks a session id or timestamp: %s", i, body)
		}
		var ms []map[string]json.RawMessage
		if err := json.Unmarshal(body, &ms); err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			for k := range m {
				if !allowed[k] {
					t.Errorf("request %d has key %q", i, k)
				}
			}
		}
	}
}

func TestSidecarSubstitution(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		m    store.Message
		want string
	}{
		{"user with sidecar", store.Message{Role: "user", Content: "hi", APIContent: "hi\n\nctx"}, "hi\n\nctx"},
		{"assistant with sidecar", store.Message{Role: "assistant", Content: "", APIContent: "text"}, "text"},
		{"user without sidecar", store.Message{Role: "user", Content: "hi"}, "hi"},
		{"tool ignores a sidecar", store.Message{Role: "tool", Content: "out", APIContent: "other", ToolCallID: "c"}, "out"},
	}
	for _, c := range cases {
		// A trailing assistant message keeps the user message from being the injection target.
		res, err := Build([]store.Message{c.m}, TurnContext{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := res.Messages[0].Content; got != c.want {
			t.Errorf("%s: content %q, want %q", c.name, got, c.want)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		m    store.Message
		want string
	}{
		{store.Message{ID: 7, Role: "system", Content: "x"}, "wire message 0 (id 7): system message in history: the system prompt travels in Request.System"},
		{store.Message{ID: 8, Role: "robot"}, `wire message 0 (id 8): unknown role "robot"`},
		{store.Message{ID: 9, Role: "tool", Content: "x"}, "wire message 0 (id 9): tool result without tool_call_id"},
	}
	for _, c := range cases {
		_, err := Build([]store.Message{c.m}, TurnContext{})
		if err == nil || err.Error() != c.want {
			t.Errorf("Build(%s) error = %v, want %q", c.m.Role, err, c.want)
		}
	}
}

func TestInjectionTarget(t *testing.T) {
	t.Parallel()
	turn := TurnContext{Plugin: []string{"P"}}
	cases := []struct {
		name    string
		history []store.Message
		current int
		wire    []string
	}{
		{"last user behind tool traffic", []store.Message{
			{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"},
			{Role: "assistant", ToolCalls: []store.ToolCall{{ID: "1"}}}, {Role: "tool", ToolCallID: "1", Content: "r"},
		}, 2, []string{"a", "b", "c\n\nP", "", "r"}},
		{"no user message", []store.Message{{Role: "assistant", Content: "b"}}, -1, []string{"b"}},
		{"empty history", nil, -1, nil},
	}
	for _, c := range cases {
		res, err := Build(c.history, turn)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res.Messages {
			got = append(got, m.Content)
		}
		if res.Current != c.current || !reflect.DeepEqual(got, c.wire) {
			t.Errorf("%s: current %d wire %q, want %d %q", c.name, res.Current, got, c.current, c.wire)
		}
	}
}

func TestCompose(t *testing.T) {
	t.Parallel()
	fence := "<memory-context>\n" + MemoryNote + "\n\n- fact one\n- fact two\n</memory-context>"
	cases := []struct {
		name string
		turn TurnContext
		want string
	}{
		{"nothing", TurnContext{}, "hello"},
		{"blank recall and plugin", TurnContext{Recall: " \n", Plugin: []string{"", "  "}}, "hello"},
		{"recall", TurnContext{Recall: "\n- fact one\n- fact two\n"}, "hello\n\n" + fence},
		{"recall then plugins", TurnContext{Recall: "- fact one\n- fact two", Plugin: []string{"p1", "p2"}}, "hello\n\n" + fence + "\n\np1\n\np2"},
		{"plugin only", TurnContext{Plugin: []string{"p1"}}, "hello\n\np1"},
	}
	for _, c := range cases {
		got := Compose("hello", c.turn)
		if got != c.want {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
		if c.turn.Empty() != (got == "hello") || (Sidecar("hello", got) == "") != (got == "hello") {
			t.Errorf("%s: Empty/Sidecar disagree with Compose", c.name)
		}
		if stripped := StripMemoryContext(got); strings.Contains(stripped, MemoryOpen) || !strings.HasPrefix(stripped, "hello") {
			t.Errorf("%s: StripMemoryContext left %q", c.name, stripped)
		}
	}
	if got := StripMemoryContext("hello\n\n" + fence); got != "hello" {
		t.Errorf("StripMemoryContext = %q", got)
	}
	if got := StripMemoryContext("a <memory-context> unclosed"); got != "a <memory-context> unclosed" {
		t.Errorf("unclosed fence was changed: %q", got)
	}
}

func TestRewriteDropsSidecar(t *testing.T) {
	t.Parallel()
	orig := store.Message{ID: 3, Role: "user", Content: "old", APIContent: "old\n\nctx"}
	got := Rewrite(orig, "new")
	if got.Content != "new" || got.APIContent != "" || got.ID != 3 {
		t.Errorf("Rewrite changed content but kept %+v", got)
	}
	if orig.Content != "old" || orig.APIContent != "old\n\nctx" {
		t.Error("Rewrite changed its input")
	}
	if same := Rewrite(orig, "old"); same.APIContent != orig.APIContent {
		t.Error("an identical rewrite dropped the sidecar")
	}
}

func BenchmarkBuild(b *testing.B) {
	history := make([]store.Message, 0, 2000)
	for i := range 1000 {
		history = append(history,
			store.Message{Role: "user", Content: strings.Repeat("question ", 40), APIContent: "q" + strings.Repeat("x", i%7)},
			store.Message{Role: "assistant", Content: strings.Repeat("answer ", 80)})
	}
	turn := TurnContext{Recall: "fact"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(history, turn); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNullReasoningDetailsAreNone(t *testing.T) {
	t.Parallel()
	for _, raw := range []json.RawMessage{nil, {}, json.RawMessage("null"), json.RawMessage(" null\n")} {
		res, err := Build([]store.Message{{Role: "assistant", Content: "x", ReasoningDetails: raw}}, TurnContext{})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(res.Messages)
		if string(body) != `[{"role":"assistant","content":"x"}]` {
			t.Errorf("ReasoningDetails %q gave %s", raw, body)
		}
	}
}

// The wire type is what providers receive; this keeps the test honest if its shape changes.
var _ = []provider.Message(Result{}.Messages)
