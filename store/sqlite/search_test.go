package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// TestMigrationLinksStoredCopies: a database written before schema 6 (compaction copies without
// links, tool calls indexed as raw JSON) upgrades to one where the display view and search show
// each carried-over message once, identical messages stay distinct, and the tool-call envelope
// is no longer searchable.
func TestMigrationLinksStoredCopies(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v4.db")
	old := openAt(t, path, searchCopiesSchema-1)
	mustExec(t, old, `INSERT INTO sessions (id, root_id, started_at, last_active, message_count) VALUES ('s', 's', 1, 1, 5)`)
	// Generation 1 (archived): the port fact, "ok" twice, a tool call; generation 2 (active):
	// the same head copied verbatim, a summary, a new "ok" (another time: not a copy).
	mustExec(t, old, `INSERT INTO messages (session_id, role, content, tool_calls, timestamp, active, compacted, summary) VALUES
		('s', 'user', 'the database listens on port 5433', NULL, 10, 0, 1, 0),
		('s', 'user', 'ok', NULL, 11, 0, 1, 0),
		('s', 'user', 'ok', NULL, 11, 0, 1, 0),
		('s', 'assistant', '', '[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"main.go\"}"}}]', 12, 0, 1, 0),
		('s', 'user', 'the database listens on port 5433', NULL, 10, 1, 0, 0),
		('s', 'user', 'ok', NULL, 11, 1, 0, 0),
		('s', 'user', 'ok', NULL, 11, 1, 0, 0),
		('s', 'user', '[CONTEXT COMPACTION] port 5433', NULL, 20, 1, 0, 1),
		('s', 'user', 'ok', NULL, 30, 1, 0, 0)`)
	old.Close()

	db, err := Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	display, err := db.Conversation(bg, "s", store.ViewDisplay)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range display {
		got = append(got, m.Content)
	}
	want := []string{"", "the database listens on port 5433", "ok", "ok", "[CONTEXT COMPACTION] port 5433", "ok"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("display view after the upgrade = %q, want %q", got, want)
	}
	hits, err := db.Search(bg, store.SearchQuery{Text: "listens", NoContext: true})
	if err != nil || len(hits) != 1 || len(hits[0].Copies) != 1 || !hits[0].Copies[0].Active {
		t.Fatalf("search after the upgrade: %v %+v", err, hits)
	}
	for q, n := range map[string]int{"function": 0, "call_1": 0, "read_file": 1, "main.go": 1, "ok": 3} {
		hits, err := db.Search(bg, store.SearchQuery{Text: q, NoContext: true})
		if err != nil || len(hits) != n {
			t.Errorf("search %q after the upgrade: %d hits (%v), want %d", q, len(hits), err, n)
		}
	}
	if problems, err := db.Check(bg); err != nil || len(problems) > 0 {
		t.Fatalf("check after the upgrade: %v %v", problems, err)
	}
}

// FuzzSearch: no query makes Search fail, on any path (word index, CJK fast and boolean paths,
// the long tool scan), whatever the sort.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"桂林 OR 北京", "桂林 NOT 漓江", "NOT 桂林", "会话数据库 OR x", `"会话" NOT "`, "OR OR 会",
		"a NOT b", "needle*", `"x y"`, "会话 AND AND 数据", "%_\\", "桂林 OR beijing NOT x", "*", "NEAR(会话 数据)"} {
		f.Add(s)
	}
	for _, s := range []string{"issue AND main", "hello AND", "OR hello", "chat-send*", "my-app.config.ts", "src/main.py",
		"50%", "TODO: fix", `say "unbalanced`, "**deploy**", "issue --- main", "NEAR(a b, 3)", "a:b", "(x OR y)"} {
		f.Add(s) // inputs of the sanitizer's table (store/fts)
	}
	db, err := Open(bg, filepath.Join(f.TempDir(), "fuzz.db"), Options{Logger: discardLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	if _, err := db.CreateSession(bg, store.NewSession{ID: "f"}); err != nil {
		f.Fatal(err)
	}
	if _, err := db.AppendBatch(bg, "f", []store.Message{
		{Role: store.RoleUser, Content: "桂林的山水 beijing needle"},
		{Role: store.RoleTool, ToolName: "t", Content: strings.Repeat("x ", 5000) + "会话数据库 needle"},
		{Role: store.RoleAssistant, Content: "plain words", ToolCalls: []store.ToolCall{{ID: "c", Function: store.ToolFunction{Name: "n", Arguments: `{"a":"b"}`}}}},
	}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, q := range []store.SearchQuery{
			{Text: in},
			{Text: in, Roles: []string{store.RoleTool}, Sort: store.SortNewest},
			{Text: in, Roles: []string{store.RoleUser, store.RoleTool}, Sort: store.SortOldest, Offset: 1},
		} {
			if _, err := db.Search(bg, q); err != nil {
				t.Fatalf("search %+v: %v", q, err)
			}
		}
	})
}
