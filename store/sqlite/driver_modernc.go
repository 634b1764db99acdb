//go:build !sqlite_cgo

package sqlite

import (
	"errors"
	"net/url"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// driverName is the database/sql driver the default (pure Go) build uses.
const driverName = "sqlite"

// DriverLabel names the driver in reports and benchmarks.
const DriverLabel = "modernc.org/sqlite"

// addTuning sets per-connection pragmas: a 32 MB page cache and memory-mapped reads, because
// every page read that misses the cache is a system call, and system calls dominate the cost of
// reading a long transcript or a large index.
func addTuning(q url.Values) {
	q.Add("_pragma", "cache_size(-32000)")
	q.Add("_pragma", "mmap_size(268435456)")
}

// isBusy reports whether err is SQLite telling us another connection holds the lock.
func isBusy(err error) bool {
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}
