package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

// Options tune a database handle. The zero value is the documented default.
type Options struct {
	// Synchronous is "NORMAL" (default) or "FULL".
	Synchronous string
	// JournalMode is "wal" (default) or "delete". A database whose file is already in WAL mode
	// stays in WAL mode whatever this says.
	JournalMode string
	// ReadConns bounds the read pool (default 4).
	ReadConns int
	// WriteBudget bounds how long any write waits for a database another process has locked
	// (default 60 s); past it the write fails with a *store.WriteTimeoutError. After
	// store.WaitNoticeAfter a waiting write says so through Logger, once.
	WriteBudget time.Duration
	// Logger receives warnings (journal fallback, reclaimed locks). Default: slog.Default().
	Logger *slog.Logger
	// HistoryCacheBytes bounds the cache of loaded active histories (see historyCache; 0: 64
	// MiB, negative: no cache). Only the default build's raw reader uses it.
	HistoryCacheBytes int

	// manualCheckpoints (tests) starts no checkpointer goroutine: the test runs its passes.
	manualCheckpoints bool
}

// DB is a store.Backend on one SQLite file.
type DB struct {
	sqlq.Store // the domains whose SQL both backends share

	path        string
	w           *sql.DB // exactly one connection: writes serialize in-process, BEGIN IMMEDIATE across processes
	r           *sql.DB // bounded read pool
	opts        Options
	journal     string
	log         *slog.Logger
	busyRetries atomic.Int64
	// gateBypasses counts writes that went ahead without the write gate (its holder hung).
	gateBypasses atomic.Int64
	pending      atomic.Int64 // rows appended by this handle and not yet indexed
	gate         *writeGate   // orders this host's writers (see writeGate)
	group        *groupWriter // commits the turn path's writes together (nil when read-only)
	wstmts       stmtCache    // prepared statements on the writer connection
	rstmts       stmtCache    // prepared statements of the hot read paths, on the reader pool
	raw          *rawReader
	hist         *historyCache // nil: no cache
	ckpt         *checkpointer // nil unless the journal is WAL
	// readerFallbacks counts transcript loads the reader failed and database/sql served.
	readerFallbacks atomic.Int64
	// readOnly is set when the file, its directory or its filesystem cannot be written: every
	// connection is opened read-only, there is no write gate, and writes fail with
	// store.ErrReadOnly before touching anything.
	readOnly bool
	roErr    error // why writes fail on a read-only handle (store.ErrReadOnly unless the disk is full)
	// damaged is set once SQLite reports the file corrupt: from then on every write fails with
	// store.ErrDamaged before touching the file, so nothing is added to a damaged database.
	damaged   atomic.Pointer[store.DamagedError]
	closeOnce sync.Once
	closeErr  error
	// mem is set on a Memory database: its connections, the one that keeps it alive, and its
	// in-process lease bells (nil otherwise).
	mem *memory
}

// Memory is the path that opens a database of its own in memory, kept only while the handle is
// open: no file is created anywhere. Every Open of Memory is a new, empty database (another
// handle, another process, cannot reach it). Memory followed by a name (":memory:chat") names
// an in-memory database this process shares: every Open of the same name while a handle on it
// is open reaches the same database; it is gone when the last handle closes.
const Memory = ":memory:"

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

const (
	writeBusyTimeoutMS = 5    // SQLite's own busy handler: short, the jittered retry does the waiting
	readBusyTimeoutMS  = 5000 // readers in WAL rarely wait; in rollback mode they may
	walSizeLimit       = 64 << 20
	// walCheckpointPages is how long the WAL may grow before the checkpointer makes sure it is
	// copied entirely (and so starts over): 4,000 pages rather than SQLite's 1,000, because a
	// larger batch copies each hot page once for many commits (about 25% more appends per second
	// on the standard workload); 10,000 made every read after a burst slower (pages still in the
	// WAL are read with pread, not through the memory map).
	walCheckpointPages = 4000
	// Every connection gets a 32 MB page cache and memory-mapped reads, because every page read
	// that misses the cache is a system call, and system calls dominate the cost of reading a
	// long transcript or a large index.
	cachePragma = "cache_size = -32000"
	// gatePatience is how long a write waits for the host's write gate before it goes ahead
	// without it (see DB.write).
	gatePatience = 2 * time.Second
	mmapPragma   = "mmap_size = 268435456"
)

// Open opens (creating if needed) the database at path, applies the journal policy and runs
// pending migrations. The path Memory opens a new database that Close removes.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if err := opts.fill(); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if name, ok := strings.CutPrefix(path, Memory); ok {
		return openMemory(ctx, name, opts)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Create the file ourselves so it is born 0600; SQLite gives its -wal and -shm the same mode.
	// Only a file that does not exist yet is opened here: closing a descriptor of an existing one
	// would drop every POSIX lock this process holds on it, SQLite's included. An existing file of
	// this user's loses its group and other bits (restrictModes) and keeps its owner's bits, so a
	// deliberately read-only file stays read-only.
	created := false
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		f.Close()
		created = true
	case !errors.Is(err, os.ErrExist):
		return nil, fmt.Errorf("open %s: %w", path, pathErr(err))
	}

	db := shared(&DB{path: abs, opts: opts, log: opts.Logger})
	db.restrictModes()
	db.readOnly = !created && !canWrite(abs)
	if !db.readOnly {
		db.gate, err = openWriteGate(abs)
		if err != nil && isReadOnlyErr(err) && !created {
			db.readOnly, err = true, nil
		}
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
	}
	if db.readOnly {
		if err := db.openReadOnly(ctx); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		return db, nil
	}
	db.w, err = sql.Open(driverName, dsn(abs, writeBusyTimeoutMS, opts.Synchronous, false))
	if err != nil {
		db.gate.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.w.SetConnMaxIdleTime(0)

	if err := db.retryBusy(ctx, func() error { return db.setup(ctx) }); err != nil {
		db.w.Close()
		db.gate.close()
		if !created && (isFull(err) || isIOErr(err)) && walEmpty(abs) {
			// A full disk leaves no room for the -shm a WAL reader needs: read what is there.
			// An absent or empty -wal holds nothing the file lacks, and nobody can write it
			// until space is freed.
			ro := shared(&DB{path: abs, opts: opts, log: opts.Logger, readOnly: true, roErr: errDiskFull})
			if rerr := ro.openReadOnly(ctx); rerr == nil {
				return ro, nil
			}
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := db.prepareWriter(ctx); err != nil {
		db.w.Close()
		db.gate.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.r, err = sql.Open(driverName, dsn(abs, readBusyTimeoutMS, opts.Synchronous, true))
	if err != nil {
		db.w.Close()
		db.gate.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.r.SetMaxOpenConns(opts.ReadConns)
	db.r.SetMaxIdleConns(opts.ReadConns)
	db.raw = newRawReader(abs, opts.ReadConns)
	db.hist = newHistoryCache(opts.HistoryCacheBytes)
	if db.journal == "wal" {
		ck, err := sql.Open(driverName, dsn(abs, writeBusyTimeoutMS, opts.Synchronous, false))
		if err != nil {
			db.r.Close()
			db.w.Close()
			db.gate.close()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		ck.SetMaxOpenConns(1)
		ck.SetMaxIdleConns(1)
		ck.SetConnMaxLifetime(0)
		ck.SetConnMaxIdleTime(0)
		db.ckpt = startCheckpointer(db, ck, opts.manualCheckpoints)
	}
	db.group = startGroupWriter(db)
	db.restrictModes() // a -wal or -shm this open created
	return db, nil
}

// fill checks o and sets its defaults.
func (o *Options) fill() error {
	if o.Synchronous == "" {
		o.Synchronous = "NORMAL"
	}
	o.Synchronous = strings.ToUpper(o.Synchronous)
	if o.Synchronous != "NORMAL" && o.Synchronous != "FULL" {
		return fmt.Errorf("synchronous must be NORMAL or FULL, not %q", o.Synchronous)
	}
	o.JournalMode = strings.ToLower(o.JournalMode)
	if o.JournalMode == "" {
		o.JournalMode = "wal"
	}
	if o.JournalMode != "wal" && o.JournalMode != "delete" {
		return fmt.Errorf("journal mode must be wal or delete, not %q", o.JournalMode)
	}
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	if o.WriteBudget <= 0 {
		o.WriteBudget = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// openReadOnly opens a database this process cannot write: both pools read-only, no write gate,
// no checkpointer, no migrations. A WAL database whose -wal and -shm are gone (it was closed
// cleanly) cannot be opened read-only where SQLite cannot create them (a read-only directory
// or filesystem); it is then opened immutable, which is safe exactly because nobody can write
// it there.
func (db *DB) openReadOnly(ctx context.Context) error {
	open := func(immutable bool) error {
		var err error
		db.w, err = sql.Open(driverName, roDSN(db.path, readBusyTimeoutMS, immutable))
		if err != nil {
			return err
		}
		db.w.SetMaxOpenConns(1)
		db.w.SetMaxIdleConns(1)
		if err := db.retryBusy(ctx, func() error { return db.setupReadOnly(ctx) }); err != nil {
			db.w.Close()
			return err
		}
		db.r, err = sql.Open(driverName, roDSN(db.path, readBusyTimeoutMS, immutable))
		if err != nil {
			db.w.Close()
			return err
		}
		db.r.SetMaxOpenConns(db.opts.ReadConns)
		db.r.SetMaxIdleConns(db.opts.ReadConns)
		return nil
	}
	err := open(false)
	if err != nil && (isCantOpen(err) || isIOErr(err) || isFull(err) || isReadOnlyCode(err)) && walEmpty(db.path) {
		err = open(true)
	}
	return err
}

func (db *DB) setupReadOnly(ctx context.Context) error {
	if err := db.w.PingContext(ctx); err != nil {
		return err
	}
	if err := db.checkFTS5(ctx); err != nil {
		return err
	}
	if err := db.checkOwnership(ctx); err != nil {
		return err
	}
	mode, err := db.journalPragma(ctx, "journal_mode")
	if err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	db.journal = mode
	var current int
	if err := db.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch want := SchemaVersion(); {
	case current > want:
		return fmt.Errorf("database schema version %d is newer than this spool (%d): upgrade spool", current, want)
	case current < want:
		return fmt.Errorf("database is read-only and has schema version %d, older than this spool's %d: open it once where it can be written to upgrade it", current, want)
	}
	return nil
}

// retryBusy runs fn again while it fails because another process holds a lock (a writer
// migrating, recovering or checkpointing the file), for up to the write budget.
func (db *DB) retryBusy(ctx context.Context, fn func() error) error {
	wait := db.lockWait(time.Now())
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || !isBusy(err) {
			return err
		}
		waited := wait.waited(time.Now())
		if waited >= db.opts.WriteBudget {
			return wait.timeout(err)
		}
		db.busyRetries.Add(1)
		t := time.NewTimer(backoff(attempt, waited))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// lockWait follows one write's wait for the lock another process holds: after
// store.WaitNoticeAfter it says once, through the handle's logger, what it waits for, and it
// makes the *store.WriteTimeoutError the write gives up with.
type lockWait struct {
	db    *DB
	start time.Time
	told  bool
}

func (db *DB) lockWait(start time.Time) *lockWait { return &lockWait{db: db, start: start} }

// waited is the time waited so far; past store.WaitNoticeAfter the first call says so.
func (w *lockWait) waited(now time.Time) time.Duration {
	d := now.Sub(w.start)
	if d >= store.WaitNoticeAfter && !w.told {
		w.told = true
		w.db.log.Warn("spool: waiting for the database write lock (held by another process)", "path", w.db.path)
	}
	return d
}

// timeout is the error of a write that gave up; err is SQLite's last busy error.
func (w *lockWait) timeout(err error) error {
	return &store.WriteTimeoutError{For: "the write lock on " + w.db.path + " (held by another process)",
		Waited: time.Since(w.start), Cause: err}
}

// ReadOnly reports whether the database was opened read-only (file, directory or filesystem
// not writable): reads work, every write fails with store.ErrReadOnly.
func (db *DB) ReadOnly() bool { return db.readOnly }

func dsn(path string, busyMS int, synchronous string, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyMS))
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", synchronous)
	q.Set("_txlock", "immediate")
	if readOnly {
		q.Set("_query_only", "1")
	}
	addTuning(q)
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// roDSN opens path read-only (immutable: without looking for a -wal or locking the file).
func roDSN(path string, busyMS int, immutable bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyMS))
	q.Set("mode", "ro")
	q.Set("_query_only", "1")
	if immutable {
		q.Set("immutable", "1")
	}
	addTuning(q)
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// setup applies the journal policy, the WAL companions and the migrations on the writer.
func (db *DB) setup(ctx context.Context) error {
	if err := db.w.PingContext(ctx); err != nil {
		return err
	}
	if err := db.checkFTS5(ctx); err != nil {
		return err
	}
	// Before anything is changed (the journal mode is written into the file): another program's
	// database is refused untouched.
	if err := db.checkOwnership(ctx); err != nil {
		return err
	}
	mode, err := db.applyJournalMode(ctx)
	if err != nil {
		return err
	}
	db.journal = mode
	if mode == "wal" {
		// The checkpointer (checkpoint.go) copies the WAL back on its own connection, so the
		// writer's automatic checkpoint is off. The WAL file is trimmed back to 64 MiB after a
		// checkpoint.
		for _, p := range []string{fmt.Sprintf("journal_size_limit=%d", walSizeLimit), "wal_autocheckpoint=0"} {
			if _, err := db.w.ExecContext(ctx, "PRAGMA "+p); err != nil {
				return err
			}
		}
	}
	return db.migrate(ctx)
}

func (db *DB) checkFTS5(ctx context.Context) error {
	var ok int
	err := db.w.QueryRowContext(ctx, "SELECT sqlite_compileoption_used('ENABLE_FTS5')").Scan(&ok)
	if err != nil {
		return fmt.Errorf("probe FTS5: %w", err)
	}
	if ok != 1 {
		return errors.New("this SQLite build has no FTS5: build with -tags \"sqlite_cgo sqlite_fts5\" or without sqlite_cgo")
	}
	return nil
}

// JournalMode reports the journal mode in force ("wal" or "delete").
func (db *DB) JournalMode() string { return db.journal }

// Path is the database file.
func (db *DB) Path() string { return db.path }

// BusyRetries counts how often a write found the database locked and slept before retrying.
func (db *DB) BusyRetries() int64 { return db.busyRetries.Load() }

// SQLiteVersion reports the linked SQLite library version.
func (db *DB) SQLiteVersion(ctx context.Context) (string, error) {
	var v string
	err := db.r.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v)
	return v, err
}

// restrictModes clears the group and other permission bits of the database, its -wal and its
// -shm when this user owns them: transcripts are readable by their owner only, whatever mode a
// copy or a chmod left. The owner's bits are kept (a read-only file stays read-only); another
// user's file is left alone, and a file that cannot be changed (a read-only filesystem) is only
// reported.
func (db *DB) restrictModes() {
	for _, p := range []string{db.path, db.path + "-wal", db.path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 == 0 || !ownedByMe(fi) {
			continue
		}
		// chmod by path, never open+close: closing a descriptor would drop this process's POSIX locks.
		if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil && !errors.Is(err, os.ErrNotExist) {
			db.log.Warn("spool: cannot restrict database file mode", "path", p, "err", err)
		}
	}
}

// Close indexes what this handle appended, checkpoints (PASSIVE, never TRUNCATE) and closes
// both pools. Closing again returns the first Close's result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closeErr = db.close()
	})
	return db.closeErr
}

func (db *DB) close() error {
	var errs []error
	if !db.readOnly && db.pending.Load() > 0 {
		if err := db.flushIndex(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("index pending messages: %w", err))
		}
	}
	if db.group != nil {
		db.group.close() // the queued writes run first
	}
	if db.ckpt != nil {
		errs = append(errs, db.ckpt.close())
	}
	if db.journal == "wal" && !db.readOnly {
		// Only an optimisation: a checkpoint that cannot run now (busy, disk full) loses nothing,
		// the next writer's checkpointer copies the WAL back.
		_, _ = db.w.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	}
	db.wstmts.close()
	db.rstmts.close()
	if db.raw != nil {
		db.raw.close()
	}
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	errs = append(errs, db.w.Close(), db.gate.close())
	if db.mem != nil {
		errs = append(errs, db.mem.close())
	}
	return errors.Join(errs...)
}

// damage records that SQLite found the file corrupt (err says how) and returns the error to
// report: it is store.ErrDamaged, and every later write fails with it at once.
func (db *DB) damage(err error) error {
	d := &store.DamagedError{Path: db.path, Cause: err.Error()}
	db.damaged.CompareAndSwap(nil, d)
	return d
}

// write runs fn in one BEGIN IMMEDIATE transaction on the writer, retrying while the database
// is locked by another process, until budget is spent. fn may run more than once: it must not
// have effects outside tx. On a handle that has seen damage it fails at once; a write that
// meets damage marks the handle (see damage).
func (db *DB) write(ctx context.Context, budget time.Duration, fn func(tx *sql.Tx) error) error {
	if d := db.damaged.Load(); d != nil {
		return d
	}
	err := db.writeAnyway(ctx, budget, fn)
	if isCorrupt(err) {
		return db.damage(err)
	}
	return err
}

// writeAnyway is write without the damage bookkeeping, for Check's probes: they run as write
// statements, are rolled back and so store nothing, and must run on a damaged file too.
func (db *DB) writeAnyway(ctx context.Context, budget time.Duration, fn func(tx *sql.Tx) error) error {
	if db.readOnly {
		return fmt.Errorf("%s: %w", db.path, cmp.Or(db.roErr, store.ErrReadOnly))
	}
	budget = min(budget, db.opts.WriteBudget)
	start := time.Now()
	deadline := start.Add(budget)
	// The gate only orders this host's writers; a holder that hangs (SIGSTOPped, swapped out)
	// must not hold every other writer back. After gatePatience (or the budget, if shorter) the
	// write goes ahead without it, on SQLite's lock and the busy retry alone, so the budget holds.
	gctx, cancel := context.WithTimeout(ctx, min(budget, gatePatience))
	err := db.gate.enter(gctx)
	cancel()
	switch {
	case err == nil:
		defer db.gate.exit()
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		db.gateBypasses.Add(1)
	default:
		return err
	}
	return db.retryLocked(ctx, start, deadline, fn)
}

// retryLocked runs fn in one transaction (tryWrite), again while the database is locked by
// another process, until deadline. The caller holds the write gate (or went ahead without it).
func (db *DB) retryLocked(ctx context.Context, start, deadline time.Time, fn func(tx *sql.Tx) error) error {
	wait := db.lockWait(start)
	for attempt := 0; ; attempt++ {
		err := db.tryWrite(ctx, fn)
		if err == nil {
			if db.ckpt != nil {
				db.ckpt.committed()
			}
			return nil
		}
		if !isBusy(err) {
			return err
		}
		now := time.Now()
		waited := wait.waited(now)
		if !now.Before(deadline) {
			return wait.timeout(err)
		}
		db.busyRetries.Add(1)
		sleep := backoff(attempt, waited)
		if rest := deadline.Sub(now); sleep > rest {
			sleep = max(rest, time.Millisecond)
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

// backoff is a short jittered sleep that grows with the attempts: contention between a few local
// processes clears within milliseconds, and short sleeps keep the worst-case wait low.
func backoff(attempt int, waited time.Duration) time.Duration {
	lo, hi := 200*time.Microsecond, 2*time.Millisecond
	if attempt > 8 {
		lo, hi = time.Millisecond, 5*time.Millisecond
	}
	if waited > 2*time.Second {
		lo, hi = 20*time.Millisecond, 150*time.Millisecond
	}
	return lo + rand.N(hi-lo)
}

func (db *DB) tryWrite(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// read returns the read pool.
func (db *DB) read() *sql.DB { return db.r }

// readRows runs a read-only query and calls row for each result row: on the raw reader where
// the build has one (its rows cost a fraction of database/sql's), else, or when the raw reader
// fails before the first row, through a statement prepared once on the reader pool.
func (db *DB) readRows(ctx context.Context, query string, args []any, row func(rowScanner) error) error {
	if db.raw != nil {
		delivered := false
		err := db.raw.query(ctx, query, args, func(r rowScanner) error {
			delivered = true
			return row(r)
		})
		if isCorrupt(err) {
			return db.damage(err) // database/sql would read the same damaged pages
		}
		if err == nil || delivered || ctx.Err() != nil {
			return err
		}
		db.rawFallback(err)
	}
	stmt, err := db.rstmts.get(ctx, db.r, query)
	if err != nil {
		return err
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return sqlq.EachRow(rows, row)
}

// readColumn runs a one-column read-only query through readRows and returns its values in order.
func readColumn[T any](ctx context.Context, db *DB, query string, args ...any) ([]T, error) {
	var out []T
	err := db.readRows(ctx, query, args, func(r rowScanner) error {
		var v T
		err := r.Scan(&v)
		out = append(out, v)
		return err
	})
	return out, err
}

// readRow is readRows for a query of at most one row (the turn's point reads: the session, its
// route, its tip, its prompt); found reports whether there was one.
func (db *DB) readRow(ctx context.Context, query string, args []any, row func(rowScanner) error) (found bool, err error) {
	err = db.readRows(ctx, query, args, func(r rowScanner) error {
		found = true
		return row(r)
	})
	return found, err
}

// rawFallback notes a read the raw reader failed and database/sql serves instead.
func (db *DB) rawFallback(err error) {
	db.readerFallbacks.Add(1)
	db.log.Warn("spool: raw reader failed; reading through database/sql", "err", err)
}
