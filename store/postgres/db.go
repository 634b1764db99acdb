package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

// Options tune a database handle. The zero value is the documented default.
type Options struct {
	// MaxConns bounds the connection pool (default: pgxpool's, max(4, CPUs)).
	MaxConns int32
	// WriteBudget bounds how long any write waits (default 60 s): it is every connection's
	// lock_timeout (a row or table another transaction holds), and how long a write retries a
	// serialization failure, a deadlock, or a connection the server dropped or refused (a
	// restart) where nothing of the write can have landed. Past it the write fails with a
	// *store.WriteTimeoutError. After store.WaitNoticeAfter a waiting write says so through
	// Logger, once.
	WriteBudget time.Duration
	// Logger receives warnings (reclaimed locks, lost notifications). Default: slog.Default().
	Logger *slog.Logger

	// For the tests that compare bounded and unbounded searches: searchSpan is the first id
	// range of a ranked search (0: sized from the word's frequency; negative: no bounded
	// passes; positive: that span, widened fourfold until it holds the window), rankWindow
	// replaces the window's size (0: rankWindow), and onPass, when set, sees each pass (its
	// lower id bound, 0 for none, and the window size it found).
	searchSpan int64
	rankWindow int
	onPass     func(lo, found int64)
}

// DB is a store.Backend on one PostgreSQL database.
type DB struct {
	sqlq.Store // the domains whose SQL both backends share

	pool *pgxpool.Pool
	url  string
	opts Options
	log  *slog.Logger

	watchOnce sync.Once
	hub       *notifyHub

	words wordStats // the word index's statistics, for sizing a ranked search's first range
}

// DB provides every domain of the store contract.
var (
	_ store.Sessions      = (*DB)(nil)
	_ store.Transcript    = (*DB)(nil)
	_ store.Searcher      = (*DB)(nil)
	_ store.Leaser        = (*DB)(nil)
	_ store.Compactor     = (*DB)(nil)
	_ store.PlatformState = (*DB)(nil)
	_ store.APIState      = (*DB)(nil)
	_ store.Accounting    = (*DB)(nil)
	_ store.Admin         = (*DB)(nil)
	_ store.Backend       = (*DB)(nil)
)

// IsURL reports whether s names a PostgreSQL database (postgres:// or postgresql://).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns the URL with its password replaced, for messages.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}

// Open connects to the database at dsn (a postgres:// URL or key=value string) and runs
// pending migrations.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	if opts.WriteBudget <= 0 {
		opts.WriteBudget = 60 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the whole string, password included.
		return nil, fmt.Errorf("open %s: cannot parse the database URL", Redact(dsn))
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if _, set := cfg.ConnConfig.RuntimeParams["lock_timeout"]; !set {
		// A lock another transaction keeps (an idle psql in a transaction, a paused replica)
		// fails the waiting statement with lock_not_available after the budget instead of
		// holding it for as long as the caller's context lasts, or forever.
		cfg.ConnConfig.RuntimeParams["lock_timeout"] = fmt.Sprint(opts.WriteBudget.Milliseconds())
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerTSVector(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", Redact(dsn), err)
	}
	db := &DB{pool: pool, url: dsn, opts: opts, log: opts.Logger}
	db.Store = sqlq.New(shared{db}, &sqlq.Postgres)
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open %s: connect: %w", Redact(dsn), distinctLines(err))
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open %s: %w", Redact(dsn), err)
	}
	return db, nil
}

// distinctLines keeps err (for errors.Is and As) but says each of its lines once: pgx reports
// every attempt of a connection (TLS, then plain, each address), one per line, and most say the
// same thing ("connection refused" twice).
func distinctLines(err error) error {
	lines := strings.Split(err.Error(), "\n")
	seen := make(map[string]bool, len(lines))
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !seen[l] {
			seen[l] = true
			kept = append(kept, l)
		}
	}
	msg := strings.Join(kept, "; ")
	if len(kept) > 1 && strings.HasSuffix(kept[0], ":") {
		msg = kept[0] + " " + strings.Join(kept[1:], "; ")
	}
	return &tidyError{err: err, msg: msg}
}

type tidyError struct {
	err error
	msg string
}

func (e *tidyError) Error() string { return e.msg }
func (e *tidyError) Unwrap() error { return e.err }

// Close closes the pool and the notification listener.
func (db *DB) Close() error {
	if db.hub != nil {
		db.hub.close()
	}
	db.pool.Close()
	return nil
}

// Pool is the handle's connection pool (tools such as db copy use it for bulk reads).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// ServerVersion reports the server's version string.
func (db *DB) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := db.pool.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v, err
}

// nowUS is the database clock in microseconds since the epoch; leases and locks expire by it.
const nowUS = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

// retryable reports errors a transaction may simply be run again for.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
	}
	return false
}

// isUnique reports a unique violation on the named constraint or index ("" for any).
func isUnique(err error, name string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (name == "" || pe.ConstraintName == name)
}

// isLockTimeout reports lock_not_available: a statement waited lock_timeout for a lock.
func isLockTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// connLost reports an error of the connection rather than of the statement: the server refused
// the connection, dropped it (a restart, pg_terminate_backend) or is starting or stopping.
func connLost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || pgconn.SafeToRetry(err) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &ne) && !ne.Timeout())
}

// write runs fn in one transaction (see retry). fn may run more than once: it must not have
// effects outside tx.
func (db *DB) write(ctx context.Context, budget time.Duration, fn func(tx pgx.Tx) error) error {
	return db.retry(ctx, budget, func() (bool, error) {
		tx, err := db.pool.Begin(ctx)
		if err != nil {
			return true, err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback(ctx)
			return true, err // nothing committed: a dropped connection aborted the transaction
		}
		return false, tx.Commit(ctx)
	})
}

// batch sends b in one round trip, outside an explicit transaction: PostgreSQL runs a pipeline
// up to its Sync as one implicit transaction, committed only if every statement succeeds. read
// consumes the results in order; an error it returns (or the server's) leaves nothing written.
// It is retried as write is (see retry).
func (db *DB) batch(ctx context.Context, budget time.Duration, b *pgx.Batch, read func(br pgx.BatchResults) error) error {
	return db.retry(ctx, budget, func() (bool, error) {
		br := db.pool.SendBatch(ctx, b)
		rerr := read(br)
		cerr := br.Close()
		switch {
		case rerr == nil:
			// Every statement ran; the commit was the Sync, whose outcome a dropped connection
			// leaves unknown.
			return false, cerr
		case retryable(cerr):
			return true, cerr
		}
		return true, rerr // a statement failed: the implicit transaction cannot commit
	})
}

// retry runs one attempt of a write (try reports whether it failed before its commit was
// sent) until it succeeds or fails for good, within budget (capped by Options.WriteBudget):
// serialization failures and deadlocks are run again, and so is a connection the server
// dropped or refused (a restart) when the attempt never reached its commit; a commit whose
// connection dropped may have landed, and is not run twice. Waiting on a lock is bounded by
// the connections' lock_timeout (the write budget). A write still waiting after
// store.WaitNoticeAfter says so once through the logger; one that gives up returns a
// *store.WriteTimeoutError.
func (db *DB) retry(ctx context.Context, budget time.Duration, try func() (beforeCommit bool, err error)) error {
	start := time.Now()
	deadline := start.Add(min(budget, db.opts.WriteBudget))
	notice := time.AfterFunc(store.WaitNoticeAfter, func() {
		db.log.Warn("spool: waiting for PostgreSQL to complete a write (a lock another transaction holds, or the server is not answering)")
	})
	defer notice.Stop()
	for attempt := 0; ; attempt++ {
		beforeCommit, err := try()
		var sleep time.Duration
		var waitingFor string
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return err
		case isLockTimeout(err):
			return &store.WriteTimeoutError{For: "a lock another PostgreSQL transaction holds", Waited: time.Since(start), Cause: err}
		case retryable(err):
			waitingFor = "concurrent transactions on the same rows"
			sleep = time.Duration(rand.N(int64(2*time.Millisecond))) + time.Duration(min(attempt, 10))*time.Millisecond
		case beforeCommit && connLost(err):
			waitingFor = "the PostgreSQL server to accept connections"
			sleep = time.Duration(min(attempt+1, 10)) * 50 * time.Millisecond
		default:
			return err
		}
		if !time.Now().Add(sleep).Before(deadline) {
			return &store.WriteTimeoutError{For: waitingFor, Waited: time.Since(start), Cause: distinctLines(err)}
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

const routineBudget = 20 * time.Second

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us) }

func nullMicros(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMicro()
	return &v
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullJSON(raw []byte) *string {
	if len(raw) == 0 {
		return nil
	}
	s := string(raw)
	return &s
}

func notFound(kind, ref string) error {
	return fmt.Errorf("%s %q: %w", kind, ref, store.ErrNotFound)
}

// querier is what both the pool and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// column runs a one-column query and returns its values in order.
func column[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[T])
}
