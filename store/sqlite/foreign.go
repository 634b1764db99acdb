package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
)

// OpenForeignReadOnly opens another program's SQLite database (a Hermes Agent state.db, say) for
// reading only, through this build's driver: mode=ro, and PRAGMA query_only on its one
// connection, so no statement can write. A live WAL database is read with its -wal frames.
// immutable additionally tells SQLite the file cannot change (no locks, no -wal/-shm files); use
// it only where the file cannot have a writer (a read-only directory without a -wal file).
// Nothing of spool's schema is created. The caller closes the handle.
func OpenForeignReadOnly(ctx context.Context, path string, immutable bool) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: the pragma below holds for every statement, and reads are sequential.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if _, err := db.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}
