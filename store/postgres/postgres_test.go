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

func openStore(ctx context.Context, dsn string) (store.Store, error) {
	return Open(ctx, dsn, Options{Logger: slog.New(slog.DiscardHandler), MaxConns: 8})
}

// TestConformance runs the whole store/storetest suite, process tests included, on a fresh
// database per test.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		NewDSN: func(t *testing.T) string { return pgtest.NewDatabase(t) },
		Open:   openStore,
	})
}
