package recall

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// A chat-platform session (one with a gateway session key) sees its own lineage and the
// sessions of its key by default, in every mode; another chat's and the CLI's sessions are
// invisible unless a wide scope of the same principal is asked for.
func TestScopeByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const keyA, keyB = "agent:main:telegram:dm:1", "agent:main:telegram:dm:2"
	mk := func(id, key, user, text string) {
		if _, err := st.CreateSession(ctx, store.NewSession{ID: id, Source: "telegram", SessionKey: key, UserID: user}); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if _, err := st.AppendBatch(ctx, id, []store.Message{
			{Role: store.RoleUser, Content: text, Timestamp: at}, {Role: store.RoleAssistant, Content: "ok " + text, Timestamp: at},
		}); err != nil {
			t.Fatal(err)
		}
	}
	mk("a-old", keyA, "", "quokka plans from chat one")
	mk("a-now", keyA, "", "current chat one")
	mk("b", keyB, "", "quokka secrets of chat two")
	mk("cli", "", "", "quokka in the terminal")
	mk("other", keyB, "mallory", "quokka of another principal")

	ids := func(raw []byte) string {
		var d struct {
			Success bool
			Error   string
			Results []struct {
				SessionID string `json:"session_id"`
			}
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range d.Results {
			out = append(out, r.SessionID)
		}
		if !d.Success {
			return "error: " + d.Error
		}
		return strings.Join(out, ",")
	}
	if got := ids(Run(ctx, st, "a-now", json.RawMessage(`{"query":"quokka"}`))); got != "a-old" {
		t.Fatalf("discover from chat one = %q, want only a-old", got)
	}
	if got := ids(Run(ctx, st, "a-now", json.RawMessage(`{}`))); got != "a-old" {
		t.Fatalf("browse from chat one = %q, want only a-old", got)
	}
	if got := ids(Run(ctx, st, "a-now", json.RawMessage(`{"session_id":"b"}`))); !strings.Contains(got, "unknown session_id") {
		t.Fatalf("read of another chat's session = %q, want refused as unknown", got)
	}
	// The CLI (no key) still sees everything.
	if got := ids(Run(ctx, st, "cli", json.RawMessage(`{"query":"quokka"}`))); !strings.Contains(got, "b") || !strings.Contains(got, "a-old") {
		t.Fatalf("discover from the CLI = %q", got)
	}
	// Wide: the same principal's sessions, never another principal's.
	d, err := Discover(ctx, st, Request{Current: "a-now", Query: "quokka", Limit: 10, Window: 1, Scope: &Scope{SessionKey: keyA, Wide: true, UserID: ""}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range d.Results {
		got = append(got, r.SessionID)
	}
	if s := strings.Join(got, ","); strings.Contains(s, "other") || !strings.Contains(s, "b") || !strings.Contains(s, "cli") {
		t.Fatalf("wide discover = %q, want the principal's sessions only", s)
	}
}
