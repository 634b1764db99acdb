package store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/store/storetest"
)

func openDB(t *testing.T) store.Backend {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// must(f())(t) fails the test on f's error and returns its value.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

var t0 = time.Date(2026, 11, 20, 9, 30, 0, 123456000, time.UTC)

// seedTree builds root → (branch child, compression continuation → grandchild) plus an unrelated
// session, with every message field in use and rows archived by compaction. It returns the ids.
func seedTree(t *testing.T, st store.Backend) (root, branch, cont, grand, other string) {
	t.Helper()
	ctx := context.Background()
	root, branch, cont, grand, other = "s-root", "s-branch", "s-cont", "s-grand", "s-other"
	must(st.CreateSession(ctx, store.NewSession{ID: root, Source: "cli", UserID: "u1", SessionKey: "k1",
		Title: "Root work", Model: "m-1", ModelConfig: json.RawMessage(`{"temperature":0.2}`),
		StartedAt: t0, Cwd: "/src/x", GitBranch: "main"}))(t)
	must(st.SetSystemPrompt(ctx, root, "You are a careful agent.\nRules: 会话 🚀"))(t)
	if err := st.RecordRequest(ctx, root, store.RequestRecord{Usage: store.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 800,
		CacheWriteTokens: 100, ReasoningTokens: 50, APICalls: 3, CostUSD: 0.0125}}); err != nil {
		t.Fatal(err)
	}
	msgs := []store.Message{
		{Role: store.RoleUser, Content: "please fix the parser 修复", APIContent: "please fix the parser 修复\n[ctx: day 3]", Timestamp: t0.Add(time.Second)},
		{Role: store.RoleAssistant, Content: "Reading it.", Reasoning: "look at parse.go first",
			ReasoningDetails: json.RawMessage(`[ {"type": "reasoning.encrypted", "data": "abc=="} ]`),
			ToolCalls:        []store.ToolCall{{ID: "call_1", Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: `{"path": "parse.go"}`}}},
			FinishReason:     "tool_calls", TokenCount: 42, Timestamp: t0.Add(2 * time.Second)},
		{Role: store.RoleTool, Content: "package parse\n\nfunc Parse() {}", ToolCallID: "call_1", ToolName: "read_file", Timestamp: t0.Add(3 * time.Second)},
		{Role: store.RoleAssistant, Content: "Fixed <b>it</b> & done 🎉", FinishReason: "stop", Timestamp: t0.Add(4 * time.Second)},
		{Role: store.RoleUser, Content: "thanks", Timestamp: t0.Add(5 * time.Second)},
	}
	must(st.AppendBatch(ctx, root, msgs))(t)
	// Compact in place: the old rows become archived, a summary carrier heads the new history.
	must(storetest.Compact(ctx, st, store.CompactRequest{SessionID: root, Messages: []store.Message{
		{Role: store.RoleUser, Content: "[summary] parser fixed", Summary: true, Timestamp: t0.Add(6 * time.Second)},
		{Role: store.RoleUser, Content: "thanks", Timestamp: t0.Add(5 * time.Second)},
	}}))(t)
	must(st.Append(ctx, root, store.Message{Role: store.RoleAssistant, Content: "anything else?", Timestamp: t0.Add(7 * time.Second)}))(t)

	must(st.Branch(ctx, root, store.NewSession{ID: branch, Title: "Root work (try B)", StartedAt: t0.Add(time.Minute)}))(t)
	must(st.Append(ctx, branch, store.Message{Role: store.RoleUser, Content: "try another way", Timestamp: t0.Add(61 * time.Second)}))(t)

	must(storetest.Rotate(ctx, st, store.RotateRequest{ParentID: root,
		Child:    store.NewSession{ID: cont, StartedAt: t0.Add(2 * time.Minute)},
		Messages: []store.Message{{Role: store.RoleUser, Content: "[summary] all of root", Summary: true, Timestamp: t0.Add(120 * time.Second)}}}))(t)
	must(st.Append(ctx, cont, store.Message{Role: store.RoleUser, Content: "continue please", Timestamp: t0.Add(121 * time.Second)}))(t)
	must(st.CreateSession(ctx, store.NewSession{ID: grand, ParentID: cont, Relation: store.RelationDelegate, Source: "subagent", StartedAt: t0.Add(3 * time.Minute)}))(t)
	must(st.Append(ctx, grand, store.Message{Role: store.RoleUser, Content: "subtask", Timestamp: t0.Add(181 * time.Second)}))(t)
	if err := st.EndSession(ctx, grand, "done"); err != nil {
		t.Fatal(err)
	}

	must(st.CreateSession(ctx, store.NewSession{ID: other, Source: "api", StartedAt: t0.Add(time.Hour)}))(t)
	must(st.Append(ctx, other, store.Message{Role: store.RoleUser, Content: "unrelated", Timestamp: t0.Add(time.Hour)}))(t)
	return
}

// comparable strips what import legitimately changes: message ids.
func comparableMessages(ms []store.Message) []store.Message {
	out := make([]store.Message, len(ms))
	for i, m := range ms {
		m.ID = 0
		m.Timestamp = m.Timestamp.UTC()
		out[i] = m
	}
	return out
}

func normSession(s store.Session) store.Session {
	s.StartedAt = s.StartedAt.UTC()
	s.EndedAt = s.EndedAt.UTC()
	return s
}

func exportString(t *testing.T, st store.Backend, ids []string, tree bool) string {
	t.Helper()
	var buf bytes.Buffer
	if err := store.Export(context.Background(), st, &buf, ids, tree, nil); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestExportImportTreeRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openDB(t)
	root, branch, cont, grand, other := seedTree(t, src)

	var lastProgress int
	var buf bytes.Buffer
	if err := store.Export(ctx, src, &buf, []string{root}, true, func(n int) { lastProgress = n }); err != nil {
		t.Fatal(err)
	}
	file := buf.String()
	lines := strings.Split(strings.TrimSuffix(file, "\n"), "\n")
	if lastProgress != len(lines) {
		t.Errorf("last progress %d, file has %d lines", lastProgress, len(lines))
	}

	// Format: header first, then each session before its messages and after its parent.
	var header map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &header); err != nil || header["spool_export"] != float64(1) || header["exported_at"] == nil {
		t.Fatalf("header = %s (%v)", lines[0], err)
	}
	seen := map[string]int{}
	var cur string
	for i, l := range lines[1:] {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("line %d: %v", i+2, err)
		}
		switch obj["type"] {
		case "session":
			id := obj["id"].(string)
			if p, _ := obj["parent_id"].(string); p != "" {
				if _, ok := seen[p]; !ok {
					t.Errorf("session %s written before its parent %s", id, p)
				}
			}
			seen[id] = i
			cur = id
		case "message":
			if obj["session_id"] != cur {
				t.Errorf("line %d: message of %v under session %s", i+2, obj["session_id"], cur)
			}
		default:
			t.Errorf("line %d: type %v", i+2, obj["type"])
		}
	}
	for _, id := range []string{root, branch, cont, grand} {
		if _, ok := seen[id]; !ok {
			t.Errorf("tree export lacks %s", id)
		}
	}
	if _, ok := seen[other]; ok {
		t.Errorf("tree export of %s includes unrelated %s", root, other)
	}
	if !strings.Contains(file, `"system_prompt":"You are a careful agent.\nRules: 会话 🚀"`) {
		t.Errorf("system prompt text missing from the export")
	}

	dst := openDB(t)
	res, err := store.Import(ctx, dst, strings.NewReader(file), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sessions != 4 || len(res.Skipped) != 0 || len(res.Orphaned) != 0 {
		t.Fatalf("import result %+v", res)
	}
	total := 0
	for _, id := range []string{root, branch, cont, grand} {
		a := must(src.GetSession(ctx, id))(t)
		b := must(dst.GetSession(ctx, id))(t)
		if !reflect.DeepEqual(normSession(a), normSession(b)) {
			t.Errorf("session %s differs after round trip:\n src %+v\n dst %+v", id, a, b)
		}
		pa := must(src.SystemPrompt(ctx, id))(t)
		pb := must(dst.SystemPrompt(ctx, id))(t)
		if pa != pb {
			t.Errorf("session %s system prompt %q, want %q", id, pb, pa)
		}
		ma := must(src.Conversation(ctx, id, store.ViewAll))(t)
		mb := must(dst.Conversation(ctx, id, store.ViewAll))(t)
		total += len(ma)
		if !reflect.DeepEqual(comparableMessages(ma), comparableMessages(mb)) {
			t.Errorf("session %s messages differ after round trip:\n src %+v\n dst %+v", id, ma, mb)
		}
		for i := 1; i < len(mb); i++ {
			if mb[i].ID <= mb[i-1].ID {
				t.Errorf("session %s: imported ids not increasing: %d then %d", id, mb[i-1].ID, mb[i].ID)
			}
		}
	}
	if res.Messages != total {
		t.Errorf("import counted %d messages, sessions hold %d", res.Messages, total)
	}
	// The exact reasoning bytes (whitespace included) survive.
	ms := must(dst.Conversation(ctx, root, store.ViewAll))(t)
	found := false
	for _, m := range ms {
		if string(m.ReasoningDetails) == `[ {"type": "reasoning.encrypted", "data": "abc=="} ]` {
			found = true
		}
	}
	if !found {
		t.Error("reasoning_details bytes changed in the round trip")
	}
	// Archived rows exist in the source, so the round trip covered them.
	archived := 0
	for _, m := range ms {
		if !m.Active && m.Compacted {
			archived++
		}
	}
	if archived == 0 {
		t.Error("the seed has no archived rows: the test does not cover them")
	}

	// A second import skips every session and changes nothing.
	before := must(dst.Stats(ctx))(t)
	res, err = store.Import(ctx, dst, strings.NewReader(file), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sessions != 0 || len(res.Skipped) != 4 {
		t.Errorf("re-import result %+v, want 4 skipped", res)
	}
	if after := must(dst.Stats(ctx))(t); !reflect.DeepEqual(before, after) {
		t.Errorf("re-import changed the store: %+v -> %+v", before, after)
	}
}

func TestExportAllAndSingle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openDB(t)
	root, _, cont, grand, other := seedTree(t, src)

	all := exportString(t, src, nil, false)
	for _, id := range []string{root, cont, grand, other} {
		if !strings.Contains(all, `"type":"session","id":"`+id+`"`) {
			t.Errorf("export of everything lacks %s", id)
		}
	}
	dst := openDB(t)
	if _, err := store.Import(ctx, dst, strings.NewReader(all), nil); err != nil {
		t.Fatal(err)
	}
	sa, sb := must(src.Stats(ctx))(t), must(dst.Stats(ctx))(t)
	if sa.Sessions != sb.Sessions || sa.Messages != sb.Messages || sa.ActiveMessages != sb.ActiveMessages || sa.ArchivedMessages != sb.ArchivedMessages {
		t.Errorf("stats after importing everything: %+v, source %+v", sb, sa)
	}

	// One child without its tree: its parent is missing in a fresh store, so it arrives orphaned.
	one := exportString(t, src, []string{grand}, false)
	if n := strings.Count(one, `"type":"session"`); n != 1 {
		t.Fatalf("single export has %d sessions", n)
	}
	fresh := openDB(t)
	res, err := store.Import(ctx, fresh, strings.NewReader(one), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sessions != 1 || !reflect.DeepEqual(res.Orphaned, []string{grand}) {
		t.Errorf("result %+v, want %s imported and orphaned", res, grand)
	}
	if s := must(fresh.GetSession(ctx, grand))(t); s.ParentID != "" {
		t.Errorf("orphan keeps parent %q", s.ParentID)
	}

	if err := store.Export(ctx, src, &bytes.Buffer{}, []string{"no-such"}, false, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("export of an unknown id: %v, want ErrNotFound", err)
	}
}

func TestImportRefusesMalformedFiles(t *testing.T) {
	t.Parallel()
	src := openDB(t)
	seedTree(t, src)
	good := exportString(t, src, []string{"s-root"}, true)
	goodLines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	header := goodLines[0]
	sess := func(id, parent string) string {
		p := ""
		if parent != "" {
			p = fmt.Sprintf(`,"parent_id":%q,"relation":"branch"`, parent)
		}
		return fmt.Sprintf(`{"type":"session","id":%q,"started_at":"2026-11-20T09:30:00Z","message_count":0,"tool_call_count":0,"usage":{}%s}`, id, p)
	}
	msg := func(sid, role string) string {
		return fmt.Sprintf(`{"type":"message","session_id":%q,"id":1,"role":%q,"content":"hi","timestamp":"2026-11-20T09:30:00Z","summary":false,"active":true,"compacted":false}`, sid, role)
	}
	// The good file with one line broken at the end: the valid sessions before it must not land.
	brokenTail := good + "{not json\n"
	tests := []struct {
		name string
		file string
		line int
		want string
	}{
		{"empty file", "", 1, "empty file"},
		{"blank first line", "\n" + header + "\n", 1, "empty first line"},
		{"no header", sess("a", "") + "\n", 1, "not a spool export"},
		{"wrong version", `{"spool_export":9,"exported_at":"2026-11-20T09:30:00Z"}` + "\n", 1, "version 9"},
		{"bad json at the end", brokenTail, len(goodLines) + 1, "invalid JSON"},
		{"unknown type", header + "\n" + `{"type":"note"}` + "\n", 2, `unknown line type "note"`},
		{"no type", header + "\n" + `{"id":"x"}` + "\n", 2, `no "type"`},
		{"unknown field", header + "\n" + strings.Replace(sess("a", ""), `"usage":{}`, `"usage":{},"colour":"red"`, 1) + "\n", 2, `unknown field "colour"`},
		{"wrong field type", header + "\n" + strings.Replace(sess("a", ""), `"message_count":0`, `"message_count":"many"`, 1) + "\n", 2, "message_count"},
		{"message first", header + "\n" + msg("a", "user") + "\n", 2, "before any session"},
		{"message of another session", header + "\n" + sess("a", "") + "\n" + msg("b", "user") + "\n", 3, `session "b"`},
		{"bad role", header + "\n" + sess("a", "") + "\n" + msg("a", "wizard") + "\n", 3, `role "wizard"`},
		{"duplicate session", header + "\n" + sess("a", "") + "\n" + sess("a", "") + "\n", 3, "appears twice"},
		{"no id", header + "\n" + sess("", "") + "\n", 2, "no id"},
		{"own parent", header + "\n" + sess("a", "a") + "\n", 2, "its own parent"},
		{"child before parent", header + "\n" + sess("kid", "mum") + "\n" + sess("mum", "") + "\n", 2, "before its parent mum (line 3)"},
		{"bad relation", header + "\n" + strings.Replace(sess("a", "b"), `"branch"`, `"cousin"`, 1) + "\n", 2, `relation "cousin"`},
		{"bad reasoning_details", header + "\n" + sess("a", "") + "\n" + strings.Replace(msg("a", "assistant"), `"content":"hi"`, `"content":"hi","reasoning_details":"{oops"`, 1) + "\n", 3, "reasoning_details"},
		{"trailing garbage", header + "\n" + sess("a", "") + " x\n", 2, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dst := openDB(t)
			before := must(dst.Stats(ctx))(t)
			res, err := store.Import(ctx, dst, strings.NewReader(tc.file), nil)
			var le *store.ImportLineError
			if !errors.As(err, &le) {
				t.Fatalf("Import = %+v, %v; want an *ImportLineError", res, err)
			}
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if le.Line != tc.line {
				t.Errorf("error names line %d, want %d (%v)", le.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q does not say %q on one line", err, tc.want)
			}
			if res.Sessions != 0 {
				t.Errorf("result claims %d sessions imported", res.Sessions)
			}
			if after := must(dst.Stats(ctx))(t); !reflect.DeepEqual(before, after) {
				t.Errorf("a refused import changed the store: %+v -> %+v", before, after)
			}
		})
	}
}

func TestImportFromNonSeekableReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openDB(t)
	seedTree(t, src)
	file := exportString(t, src, nil, false)
	dst := openDB(t)
	// bufio.Reader hides the Seek method, so Import must buffer.
	res, err := store.Import(ctx, dst, bufio.NewReader(strings.NewReader(file)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sessions != 5 {
		t.Errorf("imported %d sessions, want 5", res.Sessions)
	}
}

// A message line without "active" (a file written by hand or by another tool) imports as a row
// the model sees, not as a hidden one; "active": false still imports hidden.
func TestImportMessageWithoutActiveIsShown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := `{"spool_export":1,"exported_at":"2026-11-20T09:30:00Z","sessions":1}
{"type":"session","id":"s-hand","source":"cli","started_at":"2026-11-20T09:30:00Z"}
{"type":"message","session_id":"s-hand","role":"user","content":"written by hand","timestamp":"2026-11-20T09:30:01Z"}
{"type":"message","session_id":"s-hand","role":"assistant","content":"superseded","timestamp":"2026-11-20T09:30:02Z","active":false}
`
	dst := openDB(t)
	if _, err := store.Import(ctx, dst, strings.NewReader(file), nil); err != nil {
		t.Fatal(err)
	}
	shown := must(dst.Conversation(ctx, "s-hand", store.ViewActive))(t)
	if len(shown) != 1 || shown[0].Content != "written by hand" {
		t.Fatalf("active view after import = %+v; want the message without \"active\" only", shown)
	}
	if s := must(dst.GetSession(ctx, "s-hand"))(t); s.MessageCount != 1 {
		t.Errorf("message_count = %d, want 1", s.MessageCount)
	}
}
