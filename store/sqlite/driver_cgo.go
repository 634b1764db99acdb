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

// transcriptReader is the modernc build's C-API transcript loader; with mattn's driver
// transcripts load through database/sql, whose cgo calls are cheap enough.
type transcriptReader struct{}

func newTranscriptReader(string, int) *transcriptReader { return nil }

func (*transcriptReader) load(context.Context, string, string) ([]store.Message, error) {
	return nil, errors.New("no transcript reader in the cgo build")
}

func (*transcriptReader) close() {}
