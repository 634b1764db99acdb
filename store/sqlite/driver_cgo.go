//go:build sqlite_cgo

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"net/url"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/spoolhq/spool/store"
)

// driverName is the database/sql driver of the cgo build (tags: sqlite_cgo sqlite_fts5): mattn's
// driver registered again with a connect hook for the pragmas its DSN cannot carry.
const driverName = "sqlite3_spool"

// DriverLabel names the driver in reports and benchmarks.
const DriverLabel = "github.com/mattn/go-sqlite3"

// LibraryVersion is the version of the SQLite library this build links.
func LibraryVersion() string {
	v, _, _ := sqlite3.Version()
	return v
}

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			_, err := c.Exec("PRAGMA "+cachePragma+"; PRAGMA "+mmapPragma, nil)
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

// rawReader is the modernc build's reader on SQLite's C API; with mattn's driver everything
// reads through database/sql, whose cgo calls are cheap enough.
type rawReader struct{}

func newRawReader(string, int) *rawReader { return nil }

var errNoRawReader = errors.New("no raw reader in the cgo build")

func (*rawReader) load(context.Context, string, string) ([]store.Message, error) {
	return nil, errNoRawReader
}

func (*rawReader) loadActive(context.Context, string, *historyCache) ([]store.Message, bool, error) {
	return nil, false, errNoRawReader
}

func (*rawReader) query(context.Context, string, []any, func(rowScanner) error) error {
	return errNoRawReader
}

func (*rawReader) close() {}

func sqliteCode(err error) sqlite3.ErrNo {
	if err == nil {
		return -1 // the common case: no error, and errors.As's target would escape to the heap
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code
	}
	return -1
}

// isCantOpen: SQLite could not open the file (or its -wal/-shm).
func isCantOpen(err error) bool { return sqliteCode(err) == sqlite3.ErrCantOpen }

// isCorrupt: the file is damaged or not a database.
func isCorrupt(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.ErrCorrupt || c == sqlite3.ErrNotADB
}

// isFull: the disk (or the filesystem's quota) is full.
func isFull(err error) bool { return sqliteCode(err) == sqlite3.ErrFull }

// isIOErr: a disk I/O error (extending the -shm on a full disk, for one).
func isIOErr(err error) bool { return sqliteCode(err) == sqlite3.ErrIoErr }

// isReadOnlyCode: SQLite refused a write, or could not set up a read (SQLITE_READONLY: the file,
// or the directory a WAL reader needs for its -shm, is read-only).
func isReadOnlyCode(err error) bool { return sqliteCode(err) == sqlite3.ErrReadonly }
