package openai_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store/storetest"
)

// TestServeUpgradedV010 runs spool serve on a database spool v0.1.0 wrote (upgraded at open):
// every response id it recorded is found, previous_response_id continues its latest response
// on the same session and branches from an older one, the conversation keeps its metadata, and
// an Idempotency-Key it recorded replays its outcome.
func TestServeUpgradedV010(t *testing.T) {
	t.Parallel()
	fixture := "../../store/testdata/v0.1.0"
	f := storetest.ReadUpgradeFixture(t, filepath.Join(fixture, "sqlite.json"))
	home := t.TempDir()
	b, err := os.ReadFile(filepath.Join(fixture, "spool.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "spool.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Idempotent outcomes are replayed for 24 h: the fixture's keys are made a minute old.
	raw, err := sql.Open("sqlite", filepath.Join(home, "spool.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec("UPDATE idempotency_keys SET created_at = ?", time.Now().Add(-time.Minute).UnixMicro())
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, home, "")

	for id, sid := range f.Responses {
		code, _, body := do(t, nil, "GET", s.url+"/v1/responses/"+id, "")
		if code != 200 || !strings.Contains(body, `"id":"`+id+`"`) || !strings.Contains(body, sid) {
			t.Fatalf("GET response %s: %d %s", id, code, body)
		}
	}
	next := func(prev string) (string, string) {
		code, h, body := do(t, nil, "POST", s.url+"/v1/responses", fmt.Sprintf(`{"model":"spool","input":"after the upgrade","previous_response_id":%q}`, prev),
			"Content-Type", "application/json")
		if code != 200 {
			t.Fatalf("previous_response_id %s: %d %s", prev, code, body)
		}
		var r struct{ ID string }
		_ = json.Unmarshal([]byte(body), &r)
		return r.ID, h.Get("X-Spool-Session-Id")
	}
	// The latest response continues its session; the one before it branches.
	r, sid := next(f.Latest)
	if sid != f.Responses[f.Latest] || r == "" {
		t.Fatalf("continuing the latest response %s went to %s, want %s", f.Latest, sid, f.Responses[f.Latest])
	}
	if _, again := next(r); again != sid {
		t.Fatalf("continuing the new response went to %s, want %s", again, sid)
	}
	var older string
	for id, s := range f.Responses {
		if s == sid && id != f.Latest {
			older = id
		}
	}
	if _, branch := next(older); branch == sid || branch == "" {
		t.Fatalf("continuing the older response %s went to %q, want a branch of %s", older, branch, sid)
	}

	code, _, body := do(t, nil, "GET", s.url+"/v1/conversations/"+f.Conversation, "")
	if code != 200 || !strings.Contains(body, `"topic":"upgrade fixture"`) {
		t.Fatalf("GET conversation %s: %d %s", f.Conversation, code, body)
	}
	code, h, body := do(t, nil, "POST", s.url+"/v1/chat/completions", `{"model":"spool","messages":[{"role":"user","content":"idempotent chat"}]}`,
		"Content-Type", "application/json", "Idempotency-Key", "fixture-chat-key")
	if code != 200 || h.Get("Idempotent-Replayed") != "true" || h.Get("X-Spool-Session-Id") != f.Idempotency["fixture-chat-key"] {
		t.Fatalf("replaying fixture-chat-key: %d session %q, want %s: %s", code, h.Get("X-Spool-Session-Id"), f.Idempotency["fixture-chat-key"], body)
	}
}
