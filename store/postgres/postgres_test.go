package postgres

import (
	"context"
	"log/slog"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.Main(m, openStore)
}

func openStore(ctx context.Context, dsn string) (store.Backend, error) {
	return Open(ctx, dsn, Options{Logger: slog.New(slog.DiscardHandler), MaxConns: 8})
}

// TestConformance runs the whole store/storetest suite, process tests included, on a fresh
// database per test.
func TestConformance(t *testing.T) {
	storetest.Run(t, dbHarness)
}

// dbHarness opens a fresh database per test.
var dbHarness = storetest.Harness{
	NewDSN:  func(t *testing.T) string { return pgtest.NewDatabase(t) },
	Open:    openStore,
	Pending: pending,
}

// TestConformanceControls: every tier fails on a backend broken in its domain.
func TestConformanceControls(t *testing.T) {
	storetest.Controls(t, dbHarness)
}

// pending lists the suite's tests this backend does not pass yet, with the reason: none.
var pending = map[string]string{}

// TestConformancePoolerMode runs the suite again as it runs behind PgBouncer in transaction
// mode: default_query_exec_mode=exec (no prepared statements kept on a server connection).
func TestConformancePoolerMode(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		NewDSN:  func(t *testing.T) string { return pgtest.NewDatabase(t) + "&default_query_exec_mode=exec" },
		Open:    openStore,
		Pending: pending,
	})
}
