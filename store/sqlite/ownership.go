package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spoolhq/spool/store"
)

// spoolTables are tables every spool schema has; a database with tables but without these is
// another program's.
var spoolTables = []string{"sessions", "messages"}

// checkOwnership refuses a database that belongs to another program, before anything is written
// to it. A new (empty) database and a spool database pass.
func (db *DB) checkOwnership(ctx context.Context) error {
	var version, tables, ours int
	if err := db.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	err := db.w.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE name IN (?, ?))
		FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`,
		spoolTables[0], spoolTables[1]).Scan(&tables, &ours)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if tables > 0 && (version == 0 || ours < len(spoolTables)) {
		return errForeign
	}
	return nil
}

var errForeign = errors.New("not a spool database (it holds another program's tables); refusing to touch it: point database.path at another file")

// pathErr drops the operation and path from an *os.PathError (the caller names the path).
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// errDiskFull is why writes fail on a database opened read-only because the disk is full.
var errDiskFull = fmt.Errorf("the disk is full (free some space to write again): %w", store.ErrReadOnly)

// walEmpty reports whether the database's -wal is absent or empty: then the file alone holds
// everything committed.
func walEmpty(dbPath string) bool {
	fi, err := os.Stat(dbPath + "-wal")
	return errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0)
}
