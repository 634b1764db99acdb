package bench

import (
	"context"
	"errors"
)

// Placeholder until store/sqlite builds: the runner then opens the real backend here.

const driverLabel = "modernc.org/sqlite"
const driverModule = driverLabel

func schemaVersion() int { return 0 }

func openSQLite(ctx context.Context, path, synchronous string) (Store, error) {
	return nil, errors.New("bench: the SQLite backend is not wired in yet")
}
