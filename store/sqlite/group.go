package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// groupWriter commits the small writes of many callers in one SQLite transaction (group
// commit). A turn's writes (its lease, its messages, its last commit) queue here; one goroutine,
// owned by the DB and ended by Close, takes everything queued (up to maxGroup jobs), enters the
// write gate once, and runs each caller's function in its own SAVEPOINT inside one BEGIN
// IMMEDIATE transaction, then commits once:
//
//   - each function does its own checks (a fenced write checks its own conversation, holder and
//     generation inside the transaction, exactly as alone): a function that fails is rolled back
//     to its savepoint and its caller gets its error, while the others go on and commit;
//   - a failure that may have ended the transaction itself (busy, I/O, disk full, corruption,
//     a rollback to the savepoint that fails) or a failed COMMIT lands nothing of the group; then
//     every job of the group runs again alone, one transaction each, with the retries of any
//     write, so one caller's failure never decides another's;
//   - a caller returns only once its transaction committed (or failed): the durability of a
//     write is that of its commit, as before;
//   - a caller whose context ends while its job is still queued gets ctx.Err() and its job
//     never runs; once started, a job runs to its end (the group runs on a context that is not
//     cancelled, so one caller's cancellation cannot interrupt the others' transaction).
//
// Why: under load the single writer's cost was its hand-over, not its work. A writer that left
// the gate went on with its own turn's work on its core while the next writer, woken, waited for
// that core: the gate stood free with writers waiting for longer than it was held. Here the
// callers wait and the writer goroutine runs; and one commit (one set of WAL frames, one round of
// locks) serves a group.
type groupWriter struct {
	db      *DB
	mu      sync.Mutex
	queue   []*groupJob
	closed  bool
	wake    chan struct{} // capacity 1: a submit's nudge
	stopped chan struct{}

	groups    atomic.Int64 // transactions committed by the group writer
	jobs      atomic.Int64 // jobs those transactions carried
	fallbacks atomic.Int64 // groups whose jobs ran again one transaction each
	submitted atomic.Int64 // jobs queued so far (tests wait on it)
}

// maxGroup bounds one transaction's jobs, so that a long queue does not make one long commit.
const maxGroup = 64

type groupJob struct {
	ctx      context.Context
	fn       func(ctx context.Context, tx *sql.Tx) error
	start    time.Time
	deadline time.Time
	state    atomic.Int32
	err      error // set by the writer before done is closed
	done     chan struct{}
}

const (
	jobQueued int32 = iota
	jobRunning
	jobAbandoned
)

// errGroupClosed is what a write submitted after Close gets.
var errGroupClosed = errors.New("database is closed")

func startGroupWriter(db *DB) *groupWriter {
	g := &groupWriter{db: db, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go g.run()
	return g
}

// submit queues fn and waits for its outcome (see groupWriter).
func (g *groupWriter) submit(ctx context.Context, budget time.Duration, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	budget = min(budget, g.db.opts.WriteBudget)
	j := &groupJob{ctx: ctx, fn: fn, start: now, deadline: now.Add(budget), done: make(chan struct{})}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return fmt.Errorf("%s: %w", g.db.path, errGroupClosed)
	}
	g.queue = append(g.queue, j)
	g.mu.Unlock()
	g.submitted.Add(1)
	select {
	case g.wake <- struct{}{}:
	default:
	}
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return ctx.Err()
		}
		<-j.done // started: it runs to its end
		return j.err
	}
}

// close lets the queued jobs run, then stops the goroutine; later submits fail.
func (g *groupWriter) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	<-g.stopped
}

func (g *groupWriter) run() {
	defer close(g.stopped)
	var batch []*groupJob
	for {
		g.mu.Lock()
		for len(g.queue) == 0 {
			if g.closed {
				g.mu.Unlock()
				return
			}
			g.mu.Unlock()
			<-g.wake
			g.mu.Lock()
		}
		n := min(len(g.queue), maxGroup)
		batch = append(batch[:0], g.queue[:n]...)
		rest := copy(g.queue, g.queue[n:])
		clear(g.queue[rest:])
		g.queue = g.queue[:rest]
		g.mu.Unlock()
		g.runGroup(batch)
		for _, j := range batch {
			close(j.done)
		}
		clear(batch)
	}
}

// runGroup runs batch (see groupWriter) and leaves each job's outcome in its err.
func (g *groupWriter) runGroup(batch []*groupJob) {
	db := g.db
	if d := db.damaged.Load(); d != nil {
		for _, j := range batch {
			j.err = d
		}
		return
	}
	budget := time.Duration(0)
	for _, j := range batch {
		budget = max(budget, time.Until(j.deadline))
	}
	gctx, cancel := context.WithTimeout(context.Background(), min(max(budget, time.Millisecond), gatePatience))
	err := db.gate.enter(gctx)
	cancel()
	switch {
	case err == nil:
		defer db.gate.exit()
	case errors.Is(err, context.DeadlineExceeded):
		db.gateBypasses.Add(1) // as in writeAnyway: go ahead on SQLite's lock alone
	default:
		for _, j := range batch {
			j.err = err
		}
		return
	}
	// live is filtered in place (pending, the busy retry): a copy, so batch keeps every job once
	// for run to close its done (filtering batch itself left a later job in it twice when an
	// earlier one was abandoned: a double close, a panic).
	live := slices.Clone(batch)
	var wait *lockWait // the group's wait, from its oldest job's start
	for attempt := 0; ; attempt++ {
		live = pending(live)
		if len(live) == 0 {
			return
		}
		err := g.try(live)
		if err == nil {
			if db.ckpt != nil {
				db.ckpt.committed()
			}
			return
		}
		if !isBusy(err) {
			g.alone(live)
			return
		}
		// Locked by another process: nothing ran; wait and try the group again, each job
		// within its own budget.
		now := time.Now()
		if wait == nil {
			oldest := now
			for _, j := range live {
				if j.start.Before(oldest) {
					oldest = j.start
				}
			}
			wait = db.lockWait(oldest)
		}
		waited := wait.waited(now)
		keep := live[:0]
		for _, j := range live {
			if !now.Before(j.deadline) {
				if j.state.CompareAndSwap(jobQueued, jobRunning) || j.state.Load() == jobRunning {
					j.err = db.lockWait(j.start).timeout(err)
				}
				continue
			}
			keep = append(keep, j)
		}
		live = keep
		if len(live) == 0 {
			return
		}
		db.busyRetries.Add(1)
		sleep := backoff(attempt, waited)
		for _, j := range live {
			if rest := j.deadline.Sub(now); sleep > rest {
				sleep = max(rest, time.Millisecond)
			}
		}
		time.Sleep(sleep)
	}
}

// pending drops the jobs whose callers left before they ran.
func pending(jobs []*groupJob) []*groupJob {
	out := jobs[:0]
	for _, j := range jobs {
		if j.state.Load() != jobAbandoned {
			out = append(out, j)
		}
	}
	return out
}

// errGroupBroken: a job's failure may have ended the group's transaction.
var errGroupBroken = errors.New("group transaction broken")

// try runs live in one transaction. nil: it committed, and each job's err says whether its part
// landed (a failed job was rolled back to its savepoint). A busy error: nothing ran to a commit,
// the group may be tried again as it is. Any other error: nothing landed; the jobs must run alone.
// A single job runs without a savepoint, as a write alone does.
func (g *groupWriter) try(live []*groupJob) (err error) {
	db := g.db
	ctx := context.Background()
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	q := cachedTx{db, tx}
	ran := 0
	for _, j := range live {
		if !j.state.CompareAndSwap(jobQueued, jobRunning) && j.state.Load() != jobRunning {
			continue // left before it started
		}
		j.err = nil
		jctx := context.WithoutCancel(j.ctx)
		if len(live) == 1 {
			if ferr := j.fn(jctx, tx); ferr != nil {
				if isBusy(ferr) {
					return ferr
				}
				j.err = ferr
				return errSoloFailed
			}
			ran++
			continue
		}
		if _, err := q.ExecContext(ctx, savepointSQL); err != nil {
			return fmt.Errorf("%w: %v", errGroupBroken, err)
		}
		ferr := j.fn(jctx, tx)
		if ferr != nil {
			if isBusy(ferr) || isCorrupt(ferr) || isFull(ferr) || isIOErr(ferr) {
				return fmt.Errorf("%w: %v", errGroupBroken, ferr)
			}
			if _, err := q.ExecContext(ctx, rollbackToSQL); err != nil {
				return fmt.Errorf("%w: %v", errGroupBroken, err)
			}
			j.err = ferr
		} else {
			ran++
		}
		if _, err := q.ExecContext(ctx, releaseSQL); err != nil {
			return fmt.Errorf("%w: %v", errGroupBroken, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	g.groups.Add(1)
	g.jobs.Add(int64(ran))
	return nil
}

// errSoloFailed: a group of one whose function failed; its err is final and nothing landed.
var errSoloFailed = errors.New("job failed")

// alone runs each job of a group that could not commit together in a transaction of its own,
// in order, with the busy retries of any write (the gate is held already). A single job whose
// function failed keeps its error.
func (g *groupWriter) alone(live []*groupJob) {
	db := g.db
	if len(live) == 1 && live[0].err != nil && live[0].state.Load() == jobRunning {
		return // errSoloFailed: its own error, nothing landed
	}
	g.fallbacks.Add(1)
	for _, j := range live {
		if !j.state.CompareAndSwap(jobQueued, jobRunning) && j.state.Load() != jobRunning {
			continue
		}
		// Started jobs run to their end here too: on a context that is not cancelled, as in the
		// group (the caller waits for the outcome either way).
		jctx := context.WithoutCancel(j.ctx)
		j.err = db.retryLocked(jctx, j.start, j.deadline, func(tx *sql.Tx) error { return j.fn(jctx, tx) })
		if isCorrupt(j.err) {
			j.err = db.damage(j.err)
		}
	}
}

// The savepoint each job of a group runs in (prepared with writerStatements).
const (
	savepointSQL  = "SAVEPOINT spool_group_job"
	rollbackToSQL = "ROLLBACK TO spool_group_job"
	releaseSQL    = "RELEASE spool_group_job"
)

func init() {
	writerStatements = append(writerStatements, savepointSQL, rollbackToSQL, releaseSQL)
}

// writeGrouped runs fn through the group writer (see groupWriter): fn gets a context that is
// not cancelled and must make every statement with it. fn may run more than once: it must not
// have effects outside tx. Without a group writer (a read-only handle) it is write.
func (db *DB) writeGrouped(ctx context.Context, budget time.Duration, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if d := db.damaged.Load(); d != nil {
		return d
	}
	if db.group == nil {
		return db.write(ctx, budget, func(tx *sql.Tx) error { return fn(ctx, tx) })
	}
	err := db.group.submit(ctx, budget, fn)
	if isCorrupt(err) {
		return db.damage(err)
	}
	return err
}

// GroupStats reports the group writer's transactions, the jobs they carried, and how many
// groups fell back to one transaction per job (for tests and benchmarks).
func (db *DB) GroupStats() (groups, jobs, fallbacks int64) {
	if db.group == nil {
		return 0, 0, 0
	}
	return db.group.groups.Load(), db.group.jobs.Load(), db.group.fallbacks.Load()
}
