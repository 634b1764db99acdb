package bench

import (
	"context"

	"github.com/spoolhq/spool/store/sqlite"
)

// The backend under test. DriverLabel is the driver's module path, so its linked version can be
// read from the build info.
const (
	driverLabel  = sqlite.DriverLabel
	driverModule = sqlite.DriverLabel
)

func schemaVersion() int { return sqlite.SchemaVersion() }

// openSQLite opens the store under test without its history cache: W2 is the workload's cold
// resume (the reference and PostgreSQL have no such cache), and a cache would make its rounds
// two to five hits (0.2 ms against a read of the rows). The cache's own figure is
// `go test ./store/sqlite -run ^$ -bench 'Conversation$'`.
func openSQLite(ctx context.Context, path, synchronous string) (Store, error) {
	db, err := sqlite.Open(ctx, path, sqlite.Options{Synchronous: synchronous, HistoryCacheBytes: -1})
	if err != nil {
		return nil, err
	}
	return db, nil
}
