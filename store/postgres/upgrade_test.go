package postgres

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/storetest"
)

// fixtureDir holds databases written by earlier releases (store/testdata/v0.1.0/gen).
const fixtureDir = "../testdata/v0.1.0"

// TestUpgradeFromV010 restores a database spool v0.1.0 wrote (its pg_dump) into a fresh
// database and opens it: it is upgraded in place, a second open changes nothing, and every
// session, route, response id, idempotency key, cursor, watermark and the poller's lease works.
func TestUpgradeFromV010(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := storetest.ReadUpgradeFixture(t, filepath.Join(fixtureDir, "postgres.json"))
	dsn := pgtest.NewDatabase(t)
	pgtest.Restore(t, dsn, filepath.Join(fixtureDir, "postgres.sql"))
	if v := rawVersion(t, dsn); v != 14 {
		t.Fatalf("the fixture is at schema %d, want v0.1.0's 14", v)
	}
	db, err := openStore(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	first := rawContents(t, dsn)
	db, err = openStore(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v := rawVersion(t, dsn); v != SchemaVersion() {
		t.Fatalf("schema %d after the upgrade, want %d", v, SchemaVersion())
	}
	if second := rawContents(t, dsn); second != first {
		t.Fatalf("a second open changed the database:\n%s\nthen\n%s", first, second)
	}
	storetest.CheckUpgraded(t, db, f)
}

func rawConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func rawVersion(t *testing.T, dsn string) int {
	t.Helper()
	var v int
	if err := rawConn(t, dsn).QueryRow(context.Background(), "SELECT coalesce(max(version), 0) FROM spool_schema").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// rawContents is every table's rows (applied_at of the schema versions aside), as text, in a
// stable order.
func rawContents(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	c := rawConn(t, dsn)
	rows, err := c.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, table := range tables {
		fmt.Fprintf(&out, "%s:\n", table)
		rs, err := c.Query(ctx, `SELECT t::text FROM public."`+table+`" t`)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(lines)
		out.WriteString(strings.Join(lines, "\n") + "\n")
	}
	return out.String()
}
