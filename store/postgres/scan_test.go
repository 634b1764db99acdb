package postgres

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/storetest"
)

// TestConversationDecodesLikeScan checks Conversation's own decoding of the rows (binary
// integers and booleans, or text ones in the simple protocol) against pgx's generic scan of the
// same rows, field for field, in every view and exec mode, on messages that use every column:
// NULL and empty text, tool calls, reasoning details, token counts, hidden and undone rows.
func TestConversationDecodesLikeScan(t *testing.T) {
	t.Parallel()
	msgs := []store.Message{
		{Role: store.RoleSystem, Content: "rules"},
		{Role: store.RoleUser, Content: "héllo 世界", APIContent: "héllo 世界 [injected]", TokenCount: 7},
		{Role: store.RoleAssistant, Content: "", Reasoning: "think", ReasoningDetails: json.RawMessage(`[{"type":"reasoning","signature":"c2ln"}]`),
			FinishReason: "tool_calls", TokenCount: 1 << 20, ToolCalls: []store.ToolCall{
				{ID: "call_1", Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: `{"path": "a \"b\".go"}`}},
				{ID: "call_2", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{}`}},
			}},
		{Role: store.RoleTool, Content: "file body", ToolCallID: "call_1", ToolName: "read_file"},
		{Role: store.RoleTool, Content: "", ToolCallID: "call_2", ToolName: "terminal"},
		{Role: store.RoleAssistant, Content: "done", FinishReason: "stop"},
		{Role: store.RoleUser, Content: "again"},
		{Role: store.RoleAssistant, Content: "undone"},
	}
	for _, mode := range []string{"", "&default_query_exec_mode=exec", "&default_query_exec_mode=simple_protocol"} {
		db, err := Open(bg, pgtest.NewDatabase(t)+mode, Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
			t.Fatal(err)
		}
		ids, err := db.AppendBatch(bg, "s", msgs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Hide(bg, db, "s", ids[5]); err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Undo(bg, db, "s"); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			view  store.View
			where string
			n     int
		}{{store.ViewAll, "true", len(msgs)}, {store.ViewActive, "m.active", len(msgs) - 3}, {store.ViewDisplay, displayWhere, len(msgs) - 3}} {
			got, err := db.Conversation(bg, "s", c.view)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := db.pool.Query(bg, "SELECT "+messageCols+" FROM messages m WHERE m.session_id = $1 AND "+c.where+" ORDER BY m.id", "s")
			if err != nil {
				t.Fatal(err)
			}
			want, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Message, error) { return scanMessage(r, "s") })
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.n || !reflect.DeepEqual(got, want) {
				t.Errorf("mode %q, view %d: Conversation gave %d messages, the generic scan %d (want %d):\n%+v\n%+v", mode, c.view, len(got), len(want), c.n, got, want)
			}
		}
		all, err := db.Conversation(bg, "s", store.ViewAll)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range all {
			w := msgs[i]
			if m.ID != ids[i] || m.Role != w.Role || m.Content != w.Content || m.APIContent != w.APIContent || m.Reasoning != w.Reasoning ||
				string(m.ReasoningDetails) != string(w.ReasoningDetails) || m.FinishReason != w.FinishReason || m.TokenCount != w.TokenCount ||
				m.ToolCallID != w.ToolCallID || m.ToolName != w.ToolName || !reflect.DeepEqual(m.ToolCalls, w.ToolCalls) {
				t.Errorf("mode %q: message %d = %+v, appended %+v", mode, i, m, w)
			}
		}
		if all[5].Active || all[6].Active || !all[4].Active {
			t.Errorf("mode %q: active flags %v %v %v, want the hidden and undone rows inactive", mode, all[4].Active, all[5].Active, all[6].Active)
		}
		db.Close()
	}
}

// TestCollectMessagesSortsByID feeds collectMessages rows newest first: it returns them in id
// order, as Conversation promises whatever order the server reads them in.
func TestCollectMessagesSortsByID(t *testing.T) {
	t.Parallel()
	db, err := Open(bg, pgtest.NewDatabase(t), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	ids, err := db.AppendBatch(bg, "s", []store.Message{{Role: store.RoleUser, Content: "a"}, {Role: store.RoleAssistant, Content: "b"},
		{Role: store.RoleUser, Content: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.pool.Query(bg, "SELECT "+messageCols+" FROM messages m WHERE m.session_id = $1 ORDER BY m.id DESC", "s")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := collectMessages(rows, "s")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, m := range ms {
		got = append(got, m.ID)
	}
	if !reflect.DeepEqual(got, ids) {
		t.Fatalf("ids %v, want %v", got, ids)
	}
	// An empty transcript is an empty slice, not nil, as on SQLite (store/dbcopy compares them).
	if _, err := db.CreateSession(bg, store.NewSession{ID: "empty"}); err != nil {
		t.Fatal(err)
	}
	if ms, err := db.Conversation(bg, "empty", store.ViewAll); err != nil || ms == nil || len(ms) != 0 {
		t.Fatalf("empty session: %#v, %v; want an empty slice", ms, err)
	}
}
