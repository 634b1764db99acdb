//go:build !sqlite_cgo

package sqlite

import (
	"errors"
	"net/url"
	"strings"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// driverName is the database/sql driver the default (pure Go) build uses.
const driverName = "sqlite"

// DriverLabel names the driver in reports and benchmarks.
const DriverLabel = "modernc.org/sqlite"

// LibraryVersion is the version of the SQLite library this build links.
func LibraryVersion() string { return sqlite3.SQLITE_VERSION }

// addTuning sets the per-connection pragmas (cachePragma, mmapPragma) in the DSN.
func addTuning(q url.Values) {
	for _, p := range []string{cachePragma, mmapPragma} {
		name, value, _ := strings.Cut(p, " = ")
		q.Add("_pragma", name+"("+value+")")
	}
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

// sqliteCode is err's primary SQLite result code, or -1.
func sqliteCode(err error) int {
	if err == nil {
		return -1 // the common case: no error, and errors.As's target would escape to the heap
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	var re *rawError
	if errors.As(err, &re) {
		return re.code & 0xff
	}
	return -1
}

// isCantOpen: SQLite could not open the file (or its -wal/-shm).
func isCantOpen(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_CANTOPEN }

// isCorrupt: the file is damaged or not a database.
func isCorrupt(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}

// isFull: the disk (or the filesystem's quota) is full.
func isFull(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_FULL }

// isIOErr: a disk I/O error (extending the -shm on a full disk, for one).
func isIOErr(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_IOERR }

// isReadOnlyCode: SQLite refused a write, or could not set up a read (SQLITE_READONLY: the file,
// or the directory a WAL reader needs for its -shm, is read-only).
func isReadOnlyCode(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_READONLY }
