//go:build !sqlite_cgo

package sqlite

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// The history cache against changes no store method makes but another program on the file may
// (the triggers of migration 0012 see them all): a row edited in place in the middle of the
// history, and an active row inserted with an explicit id below the newest. After each, the
// cached handle loads what a handle without the cache loads. Appends are served from the cache.
func TestHistoryCacheSeesChangesOfOtherWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "spool.db")
	db, err := Open(bg, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := Open(bg, path, Options{Logger: discardLogger(), HistoryCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, id := range []string{"h", "gap"} {
		if _, err := db.CreateSession(bg, store.NewSession{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string) {
		t.Helper()
		got, err := db.Conversation(bg, "h", store.ViewActive)
		if err != nil {
			t.Fatal(err)
		}
		want, err := other.Conversation(bg, "h", store.ViewActive)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: cached %q, uncached %q", step, contents(got), contents(want))
		}
	}
	// A free id below the session's next rows: a row of another session, deleted.
	gap, err := db.Append(bg, "gap", store.Message{Role: store.RoleUser, Content: "to be deleted"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.w.ExecContext(bg, "DELETE FROM messages WHERE id = ?", gap); err != nil {
		t.Fatal(err)
	}
	ids, err := db.AppendBatch(bg, "h", []store.Message{{Role: store.RoleUser, Content: "one"}, {Role: store.RoleAssistant, Content: "two"},
		{Role: store.RoleUser, Content: "three"}, {Role: store.RoleAssistant, Content: "four"}})
	if err != nil {
		t.Fatal(err)
	}
	check("first load")
	before := db.hist.extended.Load()
	if _, err := db.AppendBatch(bg, "h", []store.Message{{Role: store.RoleUser, Content: "five"}, {Role: store.RoleAssistant, Content: "six"}}); err != nil {
		t.Fatal(err)
	}
	check("after an append")
	if db.hist.extended.Load() != before+1 {
		t.Fatalf("an append reloaded the whole history (%d loads served from the cache, want %d)", db.hist.extended.Load(), before+1)
	}
	if _, err := other.w.ExecContext(bg, "UPDATE messages SET content = 'edited in place' WHERE id = ?", ids[1]); err != nil {
		t.Fatal(err)
	}
	check("after an edit in place")
	if _, err := other.w.ExecContext(bg, "INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (?, 'h', 'user', 'inserted below', ?)",
		gap, time.Now().UnixMicro()); err != nil {
		t.Fatal(err)
	}
	// (message_count left as it was, as a program that does not know it would.)
	check("after an insert below the newest row")
	if ms, _ := db.Conversation(bg, "h", store.ViewActive); len(ms) == 0 || ms[0].Content != "inserted below" {
		t.Fatalf("the row inserted below is not first: %q", contents(ms))
	}
}

func contents(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}
