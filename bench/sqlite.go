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

func openSQLite(ctx context.Context, path, synchronous string) (Store, error) {
	db, err := sqlite.Open(ctx, path, sqlite.Options{Synchronous: synchronous})
	if err != nil {
		return nil, err
	}
	return db, nil
}
