package openai_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/storetest"
)

// TestServeUpgradedV010 runs spool serve on a database spool v0.1.0 wrote (upgraded at open),
// on SQLite and PostgreSQL: every response id it recorded is found, previous_response_id
// continues its latest response on the same session and branches from an older one, the
// conversation keeps its metadata, and an Idempotency-Key it recorded replays its outcome.
func TestServeUpgradedV010(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			f := storetest.ReadUpgradeFixture(t, filepath.Join(fixtureDir, backend+".json"))
			home := t.TempDir()
			config := ""
			if backend == "sqlite" {
				sqliteFixture(t, home)
			} else {
				config = postgresFixture(t)
			}
			checkServedFixture(t, startServe(t, home, config), f)
		})
	}
}

// fixtureDir holds databases written by earlier releases (store/testdata/v0.1.0/gen).
const fixtureDir = "../../store/testdata/v0.1.0"

// freshKeys makes the fixture's Idempotency-Keys a minute old: outcomes are replayed for 24 h,
// and the fixture was written long before the test runs.
func freshKeys() string {
	return "UPDATE idempotency_keys SET created_at = " + strconv.FormatInt(time.Now().Add(-time.Minute).UnixMicro(), 10)
}

// sqliteFixture copies the SQLite fixture into home.
func sqliteFixture(t *testing.T, home string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "spool.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, "spool.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(freshKeys()); err != nil {
		t.Fatal(err)
	}
}

// postgresFixture restores the PostgreSQL fixture into a fresh database and returns the
// configuration that points spool serve at it.
func postgresFixture(t *testing.T) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	pgtest.Restore(t, dsn, filepath.Join(fixtureDir, "postgres.sql"))
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), freshKeys()); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("database:\n  url: %s\n", dsn)
}

// checkServedFixture checks the fixture f through the API of s.
func checkServedFixture(t *testing.T, s *server, f storetest.UpgradeFixture) {
	t.Helper()
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
	for id, in := range f.Responses {
		if in == sid && id != f.Latest {
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
