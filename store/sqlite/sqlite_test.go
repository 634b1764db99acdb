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

// fileHarness opens a fresh SQLite file per test.
var fileHarness = storetest.Harness{
	NewDSN: func(t *testing.T) string { return filepath.Join(t.TempDir(), "spool.db") },
	Open:   openStore,
}

func TestConformance(t *testing.T) {
	storetest.Run(t, fileHarness)
}

// TestConformanceControls: every tier fails on a backend broken in its domain.
func TestConformanceControls(t *testing.T) {
	storetest.Controls(t, fileHarness)
}

// TestConformanceBaseOnly: a backend that provides only the base domains (sessions, transcript,
// search) passes the base tier alone; the tier's checks of extended domains are skipped, not
// failed.
func TestConformanceBaseOnly(t *testing.T) {
	h := fileHarness.Base()
	open := h.Open
	h.Open = func(ctx context.Context, dsn string) (storetest.BaseBackend, error) {
		st, err := open(ctx, dsn)
		return baseOnly{st}, err
	}
	storetest.Base(t, h)
}

// baseOnly hides every domain of a backend but the base ones.
type baseOnly struct{ storetest.BaseBackend }
