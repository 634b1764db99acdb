package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

// shared gives db the domains whose SQL both backends share (store/internal/sqlq).
func shared(db *DB) *DB {
	db.Store = sqlq.New(sharedDB{db}, &sqlq.SQLite)
	return db
}

// sharedDB is db as the shared domains see it: reads through readRows (the raw reader where the
// build has one), writes through the write gate or the group writer, statements through the
// writer's prepared ones.
type sharedDB struct{ db *DB }

func (s sharedDB) Read() sqlq.Executor { return readExec{s.db} }

func (s sharedDB) Write(ctx context.Context, grouped bool, job sqlq.Job) error {
	if grouped {
		return s.db.writeGrouped(ctx, routineBudget, func(ctx context.Context, tx *sql.Tx) error {
			return job.Run(ctx, cachedTx{s.db, tx})
		})
	}
	return s.db.write(ctx, routineBudget, func(tx *sql.Tx) error { return job.Run(ctx, cachedTx{s.db, tx}) })
}

func (s sharedDB) CheckLease(ctx context.Context, x sqlq.Executor, root string, l *store.Lease) error {
	t, ok := x.(cachedTx)
	if !ok {
		return errors.New("check lease: not in a write transaction")
	}
	return s.db.checkLease(ctx, t.tx, root, store.FenceOf(l))
}

// Exec implements sqlq.Executor.
func (c cachedTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// QueryRow implements sqlq.Executor.
func (c cachedTx) QueryRow(ctx context.Context, query string, args ...any) sqlq.Scanner {
	return c.QueryRowContext(ctx, query, args...)
}

// Query implements sqlq.Executor.
func (c cachedTx) Query(ctx context.Context, query string, args []any, row func(sqlq.Scanner) error) error {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return sqlq.EachRow(rows, row)
}

// readExec is the read side: readRows and readRow.
type readExec struct{ db *DB }

var errReadExec = errors.New("write statement on the read executor")

// Exec implements sqlq.Executor: reads make no changes.
func (r readExec) Exec(context.Context, string, ...any) (int64, error) { return 0, errReadExec }

// QueryRow implements sqlq.Executor.
func (r readExec) QueryRow(ctx context.Context, query string, args ...any) sqlq.Scanner {
	return &lazyRow{db: r.db, ctx: ctx, query: query, args: args}
}

// Query implements sqlq.Executor.
func (r readExec) Query(ctx context.Context, query string, args []any, row func(sqlq.Scanner) error) error {
	return r.db.readRows(ctx, query, args, row)
}

// lazyRow runs its query through readRow when scanned.
type lazyRow struct {
	db    *DB
	ctx   context.Context
	query string
	args  []any
}

func (l *lazyRow) Scan(dest ...any) error {
	found, err := l.db.readRow(l.ctx, l.query, l.args, func(r rowScanner) error { return r.Scan(dest...) })
	if err == nil && !found {
		return sql.ErrNoRows
	}
	return err
}
