package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

// The accounting statements CommitTurn pipelines, in this dialect's spelling.
var (
	usageAddSQL   = sqlq.Postgres.Rebind(sqlq.UsageAddSQL)
	requestAddSQL = sqlq.Postgres.Rebind(sqlq.RequestAddSQL)
)

// shared is db as the shared domains (store/internal/sqlq) see it: reads on the pool, writes in
// write's retried transactions.
type shared struct{ db *DB }

func (s shared) Read() sqlq.Executor { return pgExec{s.db.pool} }

func (s shared) Write(ctx context.Context, _ bool, job sqlq.Job) error {
	return s.db.write(ctx, routineBudget, func(tx pgx.Tx) error { return job.Run(ctx, pgExec{tx}) })
}

func (s shared) CheckLease(ctx context.Context, x sqlq.Executor, root string, l *store.Lease) error {
	e, ok := x.(pgExec)
	if !ok {
		return errors.New("check lease: not in a write transaction")
	}
	tx, ok := e.q.(pgx.Tx)
	if !ok {
		return errors.New("check lease: not in a write transaction")
	}
	return checkLease(ctx, tx, root, store.FenceOf(l))
}

// pgExec is a pool or a transaction as a sqlq.Executor; it rebinds the shared "?" placeholders.
type pgExec struct{ q querier }

// Exec implements sqlq.Executor.
func (e pgExec) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := e.q.Exec(ctx, sqlq.Postgres.Rebind(query), args...)
	return tag.RowsAffected(), err
}

// QueryRow implements sqlq.Executor.
func (e pgExec) QueryRow(ctx context.Context, query string, args ...any) sqlq.Scanner {
	return e.q.QueryRow(ctx, sqlq.Postgres.Rebind(query), args...)
}

// Query implements sqlq.Executor.
func (e pgExec) Query(ctx context.Context, query string, args []any, row func(sqlq.Scanner) error) error {
	rows, err := e.q.Query(ctx, sqlq.Postgres.Rebind(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return sqlq.EachRow(rows, row)
}
