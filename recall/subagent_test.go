package recall

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// Sub-agent sessions are left out of discover unless asked for (subagents: true), then rank
// below interactive results; reading one by id always works.
func TestSubagentSessions(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, s := range []store.NewSession{
		{ID: "parent", Source: "cli"},
		{ID: "child", Source: SubagentSource, ParentID: "parent", Relation: store.RelationDelegate},
		{ID: "other", Source: "cli"},
	} {
		if _, err := st.CreateSession(bg, s); err != nil {
			t.Fatal(err)
		}
	}
	put := func(id, text string) {
		if _, err := st.AppendBatch(bg, id, []store.Message{{Role: "user", Content: text}, {Role: "assistant", Content: "noted"}}); err != nil {
			t.Fatal(err)
		}
	}
	put("child", "the quillwort migration needs quillwort quillwort indexes")
	put("other", "a quillwort aside")
	discover := func(args string) []string {
		var d Discovery
		if err := json.Unmarshal(Run(bg, st, "parent", json.RawMessage(args)), &d); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range d.Results {
			ids = append(ids, r.SessionID)
		}
		return ids
	}
	if got := discover(`{"query":"quillwort"}`); len(got) != 1 || got[0] != "other" {
		t.Fatalf("default discover = %v, want only the interactive session", got)
	}
	if got := discover(`{"query":"quillwort","subagents":true}`); len(got) != 2 || got[0] != "other" || got[1] != "child" {
		t.Fatalf("discover with subagents = %v, want the child ranked last", got)
	}
	var r Reading
	if err := json.Unmarshal(Run(bg, st, "parent", json.RawMessage(`{"session_id":"child"}`)), &r); err != nil || !r.Success || r.MessageCount != 2 {
		t.Fatalf("read of the child by id = %+v (%v)", r, err)
	}
}
