package postgres

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// TestTitleScopeMigration: a database from before titles were scoped per principal (its title
// index over the title alone) upgrades in place; afterwards another principal may hold the same
// title and one principal still may not hold it twice.
func TestTitleScopeMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	db, err := Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, store.NewSession{ID: "a", UserID: "alice", Title: "Secret plan"}); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before the scoped index.
	if _, err := db.pool.Exec(ctx, `DROP INDEX sessions_title;
		CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;
		DELETE FROM spool_schema WHERE version >= 13`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(ctx, store.NewSession{ID: "b", UserID: "bob", Title: "Secret plan"}); err != nil {
		t.Fatalf("bob taking alice's title after the upgrade: %v", err)
	}
	if _, err := db.CreateSession(ctx, store.NewSession{ID: "c", UserID: "alice", Title: "Secret plan"}); !errors.Is(err, store.ErrTitleInUse) {
		t.Fatalf("alice taking her own title twice after the upgrade: %v", err)
	}
}
