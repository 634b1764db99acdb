package sqlite

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/storetest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(gateChildEnv); role != "" {
		gateChild(role)
		return
	}
	storetest.Main(m, openStore)
}

func openStore(ctx context.Context, dsn string) (store.Backend, error) {
	return Open(ctx, dsn, Options{Logger: discardLogger()})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		NewDSN: func(t *testing.T) string { return filepath.Join(t.TempDir(), "spool.db") },
		Open:   openStore,
	})
}
