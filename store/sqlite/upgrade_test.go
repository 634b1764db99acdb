package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store/storetest"
)

// fixtureDir holds databases written by earlier releases (store/testdata/v0.1.0/gen).
const fixtureDir = "../testdata/v0.1.0"

// copyFixture copies the v0.1.0 database into a fresh directory and returns its path.
func copyFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "spool.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spool.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUpgradeFromV010 opens a database spool v0.1.0 wrote: it is upgraded in place, a second
// open changes nothing, and every session, route, response id, idempotency key, cursor,
// watermark and the poller's lease works.
func TestUpgradeFromV010(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := storetest.ReadUpgradeFixture(t, filepath.Join(fixtureDir, "sqlite.json"))
	path := copyFixture(t)
	if v := rawVersion(t, path); v != 14 {
		t.Fatalf("the fixture is at schema %d, want v0.1.0's 14", v)
	}
	db, err := openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	first := rawContents(t, path)
	db, err = openStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v := rawVersion(t, path); v != SchemaVersion() {
		t.Fatalf("schema %d after the upgrade, want %d", v, SchemaVersion())
	}
	if second := rawContents(t, path); second != first {
		t.Fatalf("a second open changed the database:\n%s\nthen\n%s", first, second)
	}
	storetest.CheckUpgraded(t, db, f)
}

// TestUpgradeKeepsUnnamedResponses: a response no other row names (no session's latest, no
// response's previous) keeps the digest of its id until a client names it, and is found then.
func TestUpgradeKeepsUnnamedResponses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := storetest.ReadUpgradeFixture(t, filepath.Join(fixtureDir, "sqlite.json"))
	path := copyFixture(t)
	raw, err := sql.Open(driverName, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`DELETE FROM routes WHERE session_key LIKE 'api:%:latest:%'`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err := Open(ctx, path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var legacy int
	if err := db.w.QueryRow("SELECT count(*) FROM api_responses WHERE id LIKE 'sha256:%'").Scan(&legacy); err != nil || legacy == 0 {
		t.Fatalf("%d responses kept by digest, %v; want some (the fixture's latest responses are named nowhere else)", legacy, err)
	}
	for id, sid := range f.Responses {
		r, err := db.GetResponse(ctx, "", id)
		if err != nil || r.ID != id || r.SessionID != sid {
			t.Fatalf("response %s = %+v, %v; want session %s", id, r, err, sid)
		}
	}
	if err := db.w.QueryRow("SELECT count(*) FROM api_responses WHERE id LIKE 'sha256:%'").Scan(&legacy); err != nil || legacy != 0 {
		t.Fatalf("%d responses still kept by digest after each was named, %v", legacy, err)
	}
}

func rawVersion(t *testing.T, path string) int {
	t.Helper()
	raw, err := sql.Open(driverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// rawContents is every table's rows, as text, in a stable order.
func rawContents(t *testing.T, path string) string {
	t.Helper()
	raw, err := sql.Open(driverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var out strings.Builder
	for _, table := range tables {
		fmt.Fprintf(&out, "%s:\n", table)
		rs, err := raw.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		var lines []string
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%q", vals))
		}
		rs.Close()
		sort.Strings(lines)
		out.WriteString(strings.Join(lines, "\n") + "\n")
	}
	return out.String()
}
