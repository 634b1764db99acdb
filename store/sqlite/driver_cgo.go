//go:build sqlite_cgo

package sqlite

import (
	"database/sql"
	"errors"
	"net/url"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// driverName is the database/sql driver of the cgo build (tags: sqlite_cgo sqlite_fts5): mattn's
// driver registered again with a connect hook for the pragmas its DSN cannot carry.
const driverName = "sqlite3_spool"

// DriverLabel names the driver in reports and benchmarks.
const DriverLabel = "github.com/mattn/go-sqlite3"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			// See addTuning in driver_modernc.go for why.
			_, err := c.Exec("PRAGMA cache_size = -32000; PRAGMA mmap_size = 268435456", nil)
			return err
		},
	})
}

// addTuning has nothing to add to the DSN: the connect hook sets the pragmas.
func addTuning(url.Values) {}

func isBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}
