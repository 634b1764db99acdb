//go:build !sqlite_cgo

package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/storetest"
)

// richTranscript has every field a row can carry, texts around the reader's chunk and
// own-allocation sizes, and archived, hidden and active rows after a compaction.
func richTranscript(t *testing.T) (*DB, string) {
	t.Helper()
	db, err := Open(bg, filepath.Join(t.TempDir(), "t.db"), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const sid = "rich"
	if _, err := db.CreateSession(bg, store.NewSession{ID: sid}); err != nil {
		t.Fatal(err)
	}
	var batch []store.Message
	for i := range 300 {
		batch = append(batch,
			store.Message{Role: store.RoleUser, Content: fmt.Sprintf("turn %d: 修复 the build 🚀\nplease", i), APIContent: fmt.Sprintf("<memory-context>%d</memory-context>", i)},
			store.Message{Role: store.RoleAssistant, Content: strings.Repeat("x", i*97%(20<<10)), Reasoning: "thinking…",
				ReasoningDetails: json.RawMessage(`[{"type":"reasoning.encrypted","data":"abc=="}]`), FinishReason: "tool_calls", TokenCount: i,
				ToolCalls: []store.ToolCall{
					{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"go test ./... && echo \"ok\"","dir":"<root>"}`}},
					{ID: fmt.Sprintf("call_%d_b", i), Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: "{\"path\":\"文档/😀.md\"}"}},
				}},
			store.Message{Role: store.RoleTool, ToolCallID: fmt.Sprintf("call_%d", i), ToolName: "terminal", Content: "exit 0\n" + strings.Repeat("ok ", i)},
			store.Message{Role: store.RoleTool, ToolCallID: fmt.Sprintf("call_%d_b", i), ToolName: "read_file", Content: ""},
		)
	}
	ids, err := db.AppendBatch(bg, sid, batch)
	if err != nil {
		t.Fatal(err)
	}
	summary := store.Message{Role: store.RoleUser, Content: "## Summary\nkept", Summary: true}
	if _, err := storetest.Compact(bg, db, store.CompactRequest{SessionID: sid, Messages: []store.Message{batch[0], summary, batch[len(batch)-1]},
		Watermark: ids[len(ids)-1], TailCount: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(bg, sid, store.Message{Role: store.RoleUser, Content: "after the compaction"}); err != nil {
		t.Fatal(err)
	}
	return db, sid
}

// The raw reader and the database/sql path must return the same messages, field for
// field, for every view: the cgo build and the fallback use the latter.
func TestRawReaderMatchesDatabaseSQL(t *testing.T) {
	t.Parallel()
	db, sid := richTranscript(t)
	for _, where := range []string{"m.active = 1", "(m.active = 1 OR m.compacted = 1)", "1"} {
		got, err := db.raw.load(bg, sid, where)
		if err != nil {
			t.Fatal(err)
		}
		want, err := db.loadMessagesSQL(bg, sid, where)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(got) < 4 {
			t.Fatalf("%s: %d rows, database/sql %d", where, len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%s: row %d differs:\n got %#v\nwant %#v", where, i, got[i], want[i])
			}
		}
	}
}

func TestRawReaderConcurrentLoads(t *testing.T) {
	t.Parallel()
	db, sid := richTranscript(t)
	want, err := db.Conversation(bg, sid, store.ViewAll)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for range 5 {
				got, err := db.Conversation(bg, sid, store.ViewAll)
				if err != nil {
					errs <- err
					return
				}
				if !reflect.DeepEqual(got, want) {
					errs <- errors.New("a concurrent load returned different messages")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := db.readerFallbacks.Load(); n != 0 {
		t.Errorf("%d loads fell back to database/sql", n)
	}
	if n := len(db.raw.idle); n > db.opts.ReadConns {
		t.Errorf("%d idle reader connections, the bound is %d", n, db.opts.ReadConns)
	}
}

func TestRawReaderCancelAndClose(t *testing.T) {
	t.Parallel()
	db, sid := richTranscript(t)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := db.Conversation(ctx, sid, store.ViewAll); !errors.Is(err, context.Canceled) {
		t.Errorf("load with a cancelled context: %v, want context.Canceled", err)
	}
	// A closed reader is an error the store falls back from: loads keep working.
	want, err := db.loadMessagesSQL(bg, sid, "m.active = 1")
	if err != nil {
		t.Fatal(err)
	}
	db.raw.close()
	if _, err := db.raw.load(bg, sid, "m.active = 1"); !errors.Is(err, errReaderClosed) {
		t.Errorf("load from a closed reader: %v", err)
	}
	got, err := db.Conversation(bg, sid, store.ViewActive)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("fallback load: %d messages, err %v; want %d", len(got), err, len(want))
	}
}

// The reader opens the file by URI, like the driver: a path with URI syntax in it must work.
func TestRawReaderOddPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "my sessions #1?v=2%", "t.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(bg, "s", store.Message{Role: store.RoleUser, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	ms, err := db.raw.load(bg, "s", "m.active = 1")
	if err != nil || len(ms) != 1 || ms[0].Content != "hello" {
		t.Fatalf("load: %v, %+v", err, ms)
	}
}

// Listings read through the raw reader must equal those through database/sql, every field of
// every kind of session included (titles, config, parents, ends, usage, chains, previews).
func TestRawReaderListingsMatchDatabaseSQL(t *testing.T) {
	t.Parallel()
	db, _ := richTranscript(t)
	for i := range 12 {
		id := fmt.Sprint("s", i)
		ns := store.NewSession{ID: id, Source: []string{"cli", "telegram", "api"}[i%3], UserID: fmt.Sprint("u", i%2),
			Model: "gpt-4o", Cwd: "/src/项目", GitBranch: "main"}
		if i%2 == 0 {
			ns.Title, ns.ModelConfig = fmt.Sprintf("task %d ✓", i), json.RawMessage(`{"compression":{"attempts":1}}`)
		}
		if _, err := db.CreateSession(bg, ns); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Append(bg, id, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("first question %d\nwith a second line that is long enough to be cut in the preview", i)}); err != nil {
			t.Fatal(err)
		}
		if err := db.RecordRequest(bg, id, store.RequestRecord{Model: "gpt-4o", Usage: store.Usage{InputTokens: int64(1000 * i), CacheReadTokens: 7, CostUSD: 0.0125 * float64(i)}}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := db.EndSession(bg, id, "user_exit"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.Branch(bg, "s4", store.NewSession{ID: "s4-branch"}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []store.ListOptions{{}, {Limit: 5}, {Limit: 5, Offset: 3}, {Source: "telegram"}, {UserID: "u1", IncludeChildren: true}} {
		got, err := db.ListSessions(bg, o)
		if err != nil {
			t.Fatal(err)
		}
		raw := db.raw
		db.raw = nil
		want, err := db.ListSessions(bg, o)
		db.raw = raw
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: raw reader listed\n%+v\ndatabase/sql listed\n%+v", o, got, want)
		}
	}
	if n := db.readerFallbacks.Load(); n != 0 {
		t.Errorf("%d reads fell back to database/sql", n)
	}
}

// More distinct statements than a connection keeps: they are finalized and prepared again, and
// every answer is still right.
func TestRawReaderStatementBound(t *testing.T) {
	t.Parallel()
	db, err := Open(bg, filepath.Join(t.TempDir(), "t.db"), Options{Logger: discardLogger(), ReadConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for round := range 2 {
		for i := range maxStmts + 40 {
			got, err := readColumn[int64](bg, db, fmt.Sprintf("SELECT ? + %d", i), int64(round))
			if err != nil || len(got) != 1 || got[0] != int64(i+round) {
				t.Fatalf("SELECT ? + %d with %d: %v, %v", i, round, got, err)
			}
		}
	}
	if n := len(db.raw.idle[0].stmts); n > maxStmts {
		t.Errorf("%d statements kept, the bound is %d", n, maxStmts)
	}
}
