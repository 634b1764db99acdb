//go:build sqlite_cgo

package sqlite

import (
	"errors"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// driverName is the database/sql driver of the cgo build (tags: sqlite_cgo sqlite_fts5).
const driverName = "sqlite3"

// DriverLabel names the driver in reports and benchmarks.
const DriverLabel = "github.com/mattn/go-sqlite3"

func isBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}
