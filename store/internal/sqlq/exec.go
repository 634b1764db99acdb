package sqlq

import (
	"context"

	"github.com/spoolhq/spool/store"
)

// Scanner is one result row.
type Scanner interface{ Scan(dest ...any) error }

// Rows is a result set as both drivers give it (database/sql's *Rows, pgx's Rows); its caller
// closes it.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// EachRow calls row for every row of rows, in order, stopping at row's first error, then
// returns the result set's own error. It is the loop under every Executor.Query.
func EachRow(rows Rows, row func(Scanner) error) error {
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Executor runs statements over a pool or one transaction.
type Executor interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// QueryRow runs a query of at most one row; Scan's error matches sql.ErrNoRows when there
	// is none.
	QueryRow(ctx context.Context, query string, args ...any) Scanner
	// Query runs a query and calls row for each result row, in order; an error row returns
	// stops the reading and is returned.
	Query(ctx context.Context, query string, args []any, row func(Scanner) error) error
}

// DB is what a backend provides the shared domains.
type DB interface {
	// Read is the executor for reads outside a transaction.
	Read() Executor
	// Write runs job in one write transaction, retried as the backend retries its writes (job
	// may run more than once). grouped allows the backend to commit job together with other
	// callers' (SQLite's group writer); job must then make every statement with the ctx it gets.
	Write(ctx context.Context, grouped bool, job Job) error
	// CheckLease fences a transcript write of conversation root inside x's transaction: nil
	// when l is nil or still holds the conversation's turn lease.
	CheckLease(ctx context.Context, x Executor, root string, l *store.Lease) error
}

// Job is one write transaction's work. A hot path makes its job one value that holds all it
// needs (one allocation); elsewhere a TxFunc closure does.
type Job interface {
	Run(ctx context.Context, x Executor) error
}

// TxFunc is a function as a Job.
type TxFunc func(ctx context.Context, x Executor) error

// Run implements Job.
func (f TxFunc) Run(ctx context.Context, x Executor) error { return f(ctx, x) }

// Store is the shared domains over one backend. Backends embed it, so its methods are theirs.
type Store struct {
	db DB
	d  *Dialect
}

// New is the shared domains over db, spelled in d.
func New(db DB, d *Dialect) Store { return Store{db: db, d: d} }

// Dialect is the store's dialect.
func (s Store) Dialect() *Dialect { return s.d }
