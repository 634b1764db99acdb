package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// blockWriter keeps the group writer busy in a job of its own, so that writes submitted
// meanwhile queue behind it; the returned function lets them go once the queue holds n jobs in
// all (counting the blocker), and they then run as one group.
func blockWriter(t *testing.T, db *DB) (release func(n int64)) {
	t.Helper()
	started, unblock, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.writeGrouped(context.Background(), time.Minute, func(ctx context.Context, tx *sql.Tx) error {
			select {
			case <-started: // a rerun
			default:
				close(started)
			}
			<-unblock
			return nil
		})
	}()
	<-started
	return func(n int64) {
		for db.group.submitted.Load() < n {
			runtime.Gosched() // a condition, not a duration: every submit counts itself
		}
		close(unblock)
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// queueAppend appends a user message with content to sid on a goroutine and returns once its
// write is queued (behind a blocked writer), with the channel its error arrives on.
func queueAppend(ctx context.Context, db *DB, sid, content string) <-chan error {
	n := db.group.submitted.Load()
	got := make(chan error, 1)
	go func() {
		_, err := db.Append(ctx, sid, store.Message{Role: store.RoleUser, Content: content})
		got <- err
	}()
	for db.group.submitted.Load() < n+1 {
		runtime.Gosched()
	}
	return got
}

func openGroupTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "spool.db"), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Fenced writes of many callers committed in one transaction: a stale holder's write fails
// alone (its fence is checked inside the transaction) and lands nothing, the others land.
func TestGroupCommitFencesEachCaller(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openGroupTest(t)
	const n = 24
	type conv struct {
		id          string
		live, stale store.Lease
	}
	convs := make([]conv, n)
	for i := range convs {
		s, err := db.CreateSession(ctx, store.NewSession{})
		if err != nil {
			t.Fatal(err)
		}
		stale, err := db.AcquireLease(ctx, s.ID, fmt.Sprintf("old-%d", i), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.ReleaseLease(ctx, stale); err != nil {
			t.Fatal(err)
		}
		live, err := db.AcquireLease(ctx, s.ID, fmt.Sprintf("new-%d", i), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		convs[i] = conv{s.ID, live, stale}
	}
	sub0 := db.group.submitted.Load()
	release := blockWriter(t, db)
	groups0, jobs0, fallbacks0 := db.GroupStats()
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i, c := range convs {
		for k, l := range []store.Lease{c.live, c.stale} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[2*i+k] = db.CommitTurn(ctx, c.id, l, store.TurnWrite{
					Messages: []store.Message{{Role: store.RoleUser, Content: fmt.Sprintf("from %s", l.Holder)}},
					Requests: []store.RequestRecord{{Model: "m", Usage: store.Usage{InputTokens: 7, APICalls: 1}}},
				})
			}()
		}
	}
	release(sub0 + 1 + 2*n)
	wg.Wait()
	for i, c := range convs {
		if errs[2*i] != nil {
			t.Fatalf("live holder %s: %v", c.live.Holder, errs[2*i])
		}
		if !errors.Is(errs[2*i+1], store.ErrLeaseLost) {
			t.Fatalf("stale holder %s: %v, want ErrLeaseLost", c.stale.Holder, errs[2*i+1])
		}
		ms, err := db.Conversation(ctx, c.id, store.ViewAll)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || ms[0].Content != "from "+c.live.Holder {
			t.Fatalf("%s holds %+v, want only the live holder's message", c.id, ms)
		}
		s, err := db.GetSession(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Usage.InputTokens != 7 || s.Usage.APICalls != 1 || s.MessageCount != 1 {
			t.Fatalf("%s counters %+v: the stale holder's usage landed or the live one's did not", c.id, s)
		}
	}
	groups, jobs, fallbacks := db.GroupStats()
	// The blocker's transaction, then one for the 2n queued behind it (n of them landed).
	if groups-groups0 != 2 || jobs-jobs0 != n+1 || fallbacks != fallbacks0 {
		t.Fatalf("groups %d, jobs %d, fallbacks %d: want 2 transactions carrying %d landed jobs, no fallback", groups-groups0, jobs-jobs0, fallbacks-fallbacks0, n+1)
	}
}

// A job that ends the group's transaction itself fails alone: the group runs again one job a
// transaction and every other job lands.
func TestGroupCommitBrokenTransactionFallsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openGroupTest(t)
	s, err := db.CreateSession(ctx, store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 9
	errBreak := errors.New("broke the transaction")
	_, _, fallbacks0 := db.GroupStats()
	sub0 := db.group.submitted.Load()
	release := blockWriter(t, db)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == n/2 {
				errs[i] = db.writeGrouped(ctx, time.Minute, func(ctx context.Context, tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, "INSERT INTO model_cooldowns (model, until_us, updated_at) VALUES ('broken', 1, 1)"); err != nil {
						return err
					}
					// ROLLBACK ends the whole transaction, the savepoints with it.
					if _, err := tx.ExecContext(ctx, "ROLLBACK"); err != nil {
						return err
					}
					return errBreak
				})
				return
			}
			_, errs[i] = db.Append(ctx, s.ID, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("message %d", i)})
		}()
	}
	release(sub0 + 1 + n)
	wg.Wait()
	for i, err := range errs {
		if i == n/2 {
			if !errors.Is(err, errBreak) {
				t.Fatalf("breaking job: %v, want its own error", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	ms, err := db.Conversation(ctx, s.ID, store.ViewAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != n-1 {
		t.Fatalf("%d messages landed, want %d", len(ms), n-1)
	}
	var broken int
	if err := db.r.QueryRowContext(ctx, "SELECT count(*) FROM model_cooldowns WHERE model = 'broken'").Scan(&broken); err != nil {
		t.Fatal(err)
	}
	if broken != 0 {
		t.Fatal("the breaking job's row landed")
	}
	if _, _, fallbacks := db.GroupStats(); fallbacks == fallbacks0 {
		t.Fatal("no fallback counted")
	}
}

// A caller whose context ends while its write is queued gets ctx.Err() and its write never runs.
func TestGroupCommitAbandonedJobNeverRuns(t *testing.T) {
	t.Parallel()
	db := openGroupTest(t)
	s, err := db.CreateSession(context.Background(), store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	sub0 := db.group.submitted.Load()
	release := blockWriter(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	got := queueAppend(ctx, db, s.ID, "abandoned")
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned write: %v, want context.Canceled", err)
	}
	release(sub0 + 2)
	// A write after it runs after it (the queue is in order), so once it returns the abandoned
	// one was passed over.
	if _, err := db.Append(context.Background(), s.ID, store.Message{Role: store.RoleUser, Content: "later"}); err != nil {
		t.Fatal(err)
	}
	ms, err := db.Conversation(context.Background(), s.ID, store.ViewAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Content != "later" {
		t.Fatalf("transcript %+v, want only the later message", ms)
	}
}

// A write abandoned in a group ahead of a live one: the live one lands and the writer goes on
// (filtering the group in place once left the live job in it twice, and the writer closed its
// done twice: a panic that took spool serve down when a caller left with its write queued).
func TestGroupCommitAbandonedJobAheadOfALiveOne(t *testing.T) {
	t.Parallel()
	db := openGroupTest(t)
	s, err := db.CreateSession(context.Background(), store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	sub0 := db.group.submitted.Load()
	release := blockWriter(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	abandoned := queueAppend(ctx, db, s.ID, "abandoned")
	live := queueAppend(context.Background(), db, s.ID, "live")
	cancel()
	if err := <-abandoned; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned write: %v, want context.Canceled", err)
	}
	release(sub0 + 3)
	if err := <-live; err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(context.Background(), s.ID, store.Message{Role: store.RoleUser, Content: "after"}); err != nil {
		t.Fatal(err)
	}
	ms, err := db.Conversation(context.Background(), s.ID, store.ViewAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Content != "live" || ms[1].Content != "after" {
		t.Fatalf("transcript %+v, want the live message, then the later one", ms)
	}
}

// Close runs what is queued, then refuses new writes with an error.
func TestGroupCommitClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "spool.db"), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, s.ID, store.Message{Role: store.RoleUser, Content: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, s.ID, store.Message{Role: store.RoleUser, Content: "two"}); !errors.Is(err, errGroupClosed) {
		t.Fatalf("append after close: %v, want errGroupClosed", err)
	}
}

// A job that started runs to its end even when its caller's context ends meanwhile, also when
// its group falls back to one transaction a job: the fallback ran it on the caller's context,
// so a caller cancelled after its job started got context.Canceled for a write that then never
// landed, against the contract of writeGrouped.
func TestGroupCommitFallbackIgnoresCancelOfStartedJob(t *testing.T) {
	t.Parallel()
	db := openGroupTest(t)
	sub0 := db.group.submitted.Load()
	release := blockWriter(t, db)
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan error, 2)
	go func() {
		got <- db.writeGrouped(cctx, time.Minute, func(ctx context.Context, tx *sql.Tx) error {
			cancel() // the caller leaves while its job runs
			_, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO model_cooldowns (model, until_us, updated_at) VALUES ('kept', 1, 1)")
			return err
		})
	}()
	for db.group.submitted.Load() < sub0+2 {
		runtime.Gosched()
	}
	errBreak := errors.New("broke the transaction")
	go func() {
		got <- db.writeGrouped(context.Background(), time.Minute, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, "ROLLBACK"); err != nil { // ends the group's transaction
				return err
			}
			return errBreak
		})
	}()
	release(sub0 + 3)
	for range 2 {
		if err := <-got; err != nil && !errors.Is(err, errBreak) {
			t.Fatalf("the cancelled caller's started job: %v, want it run to its end", err)
		}
	}
	var kept int
	if err := db.r.QueryRowContext(context.Background(), "SELECT count(*) FROM model_cooldowns WHERE model = 'kept'").Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 1 {
		t.Fatalf("%d rows of the started job landed, want 1", kept)
	}
}
