package turn_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/turn"
)

// faultStore is the real store with injectable renewal and append failures.
type faultStore struct {
	turn.Store
	renewErr  atomic.Pointer[error]
	renewals  atomic.Int64
	appendErr atomic.Pointer[error] // returned once, without writing
	commits   atomic.Int64
	releases  atomic.Int64
}

func (f *faultStore) ReleaseLease(ctx context.Context, l store.Lease) error {
	f.releases.Add(1)
	return f.Store.ReleaseLease(ctx, l)
}

func (f *faultStore) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	f.renewals.Add(1)
	if p := f.renewErr.Load(); p != nil {
		return l, *p
	}
	return f.Store.RenewLease(ctx, l, ttl)
}

func (f *faultStore) CommitTurn(ctx context.Context, sid string, l store.Lease, w store.TurnWrite) ([]int64, error) {
	if p := f.appendErr.Swap(nil); p != nil {
		return nil, *p
	}
	f.commits.Add(1)
	return f.Store.CommitTurn(ctx, sid, l, w)
}

func setErr(p *atomic.Pointer[error], err error) { p.Store(&err) }

func user(s string) store.Message { return store.Message{Role: store.RoleUser, Content: s} }

func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("turn context not cancelled")
	}
}

func TestRenewalFailureCancelsTheTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     error
		refresh bool
		msg     string
	}{
		{"lease taken", fmt.Errorf("renew: %w", store.ErrLeaseLost), false, "session turn lease lost; stopping to protect the transcript"},
		{"renewal error", errors.New("disk I/O error"), true, "could not be refreshed; stopping to protect the transcript"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, _ := openDB(t)
			fs := &faultStore{Store: db}
			tn, err := turn.Begin(bg, fs, "conv", turn.Options{TTL: 5 * time.Second, RenewEvery: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer tn.End(bg)
			setErr(&fs.renewErr, tc.err)
			waitDone(t, tn.Context())
			cause := context.Cause(tn.Context())
			var lost *turn.LeaseLostError
			if !errors.As(cause, &lost) || !errors.Is(cause, store.ErrLeaseLost) || !errors.Is(cause, tc.err) {
				t.Fatalf("cause %v: not a lease loss wrapping %v", cause, tc.err)
			}
			if lost.Refresh != tc.refresh || !strings.Contains(cause.Error(), tc.msg) || lost.Generation != tn.Lease().Generation {
				t.Fatalf("cause %q (refresh %v)", cause, lost.Refresh)
			}
			// Nothing more is written by a turn that lost its lease.
			tn.Add(user("late"))
			if err := tn.Flush(bg); !errors.Is(err, store.ErrLeaseLost) {
				t.Fatalf("flush after the loss: %v", err)
			}
			if ms := conversation(t, db, store.ViewAll); len(ms) != 0 {
				t.Fatalf("%d rows written after the loss", len(ms))
			}
		})
	}
}

// A busy database is not a lost lease: renewal retries and the turn goes on.
func TestBusyRenewalIsRetried(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	fs := &faultStore{Store: db}
	setErr(&fs.renewErr, fmt.Errorf("renew: %w", store.ErrBusy))
	tn, err := turn.Begin(bg, fs, "conv", turn.Options{TTL: 10 * time.Second, RenewEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for fs.renewals.Load() < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	fs.renewErr.Store(nil)
	for n := fs.renewals.Load(); fs.renewals.Load() < n+2; {
		time.Sleep(5 * time.Millisecond)
	}
	if err := context.Cause(tn.Context()); err != nil {
		t.Fatalf("a busy database cancelled the turn: %v", err)
	}
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
}

func TestPanicInRunReleasesTheLease(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	var gen int64
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the turn's own panic", p)
			}
		}()
		_ = turn.Run(bg, db, "conv", turn.Options{}, func(ctx context.Context, tn *turn.Turn) error {
			gen = tn.Lease().Generation
			tn.Add(user("before the panic"))
			panic("boom")
		})
	}()
	l, err := db.AcquireLease(bg, "conv", "next", time.Minute)
	if err != nil || l.Generation != gen+1 {
		t.Fatalf("lease not released by the panicking turn: %+v %v", l, err)
	}
	if got := contents(conversation(t, db, store.ViewAll)); strings.Join(got, "|") != "before the panic" {
		t.Fatalf("transcript %q", got)
	}
}

func TestEndIsIdempotent(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	tn, err := turn.Begin(bg, db, "conv", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn.Add(user("one"))
	for i := range 3 {
		if err := tn.End(bg); err != nil {
			t.Fatalf("End #%d: %v", i+1, err)
		}
	}
	if !errors.Is(context.Cause(tn.Context()), turn.ErrEnded) {
		t.Fatalf("context after End: %v", context.Cause(tn.Context()))
	}
	// Another turn takes the lease; a further End of the old turn must not release it.
	next, err := turn.Begin(bg, db, "conv", turn.Options{Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer next.End(bg)
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(bg, "conv", user("two"), store.WithFence(next.Fence())); err != nil {
		t.Fatalf("an old turn's End freed the new turn's lease: %v", err)
	}
	tn.Add(user("after end"))
	if err := tn.Flush(bg); !errors.Is(err, turn.ErrEnded) {
		t.Fatalf("flush after End: %v", err)
	}
	if got := contents(conversation(t, db, store.ViewAll)); strings.Join(got, "|") != "one|two" {
		t.Fatalf("transcript %q", got)
	}
}

// A failed flush advances nothing; the retry (or End) writes each message exactly once.
func TestFlushNeverDuplicates(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	fs := &faultStore{Store: db}
	tn, err := turn.Begin(bg, fs, "conv", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn.Add(user("a"), user("b"))
	setErr(&fs.appendErr, fmt.Errorf("append: %w", store.ErrBusy))
	if err := tn.Flush(bg); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("flush with a busy database: %v", err)
	}
	if tn.Pending() != 2 || len(tn.Persisted()) != 0 {
		t.Fatalf("after a failed flush: %d pending, %d persisted", tn.Pending(), len(tn.Persisted()))
	}
	if err := tn.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tn.Flush(bg); err != nil { // nothing pending: no write
		t.Fatal(err)
	}
	tn.Add(user("c"))
	setErr(&fs.appendErr, errors.New("disk full"))
	if err := tn.Flush(bg); err == nil {
		t.Fatal("injected failure not reported")
	}
	if err := tn.End(bg); err != nil { // flushes "c" once
		t.Fatal(err)
	}
	ms := conversation(t, db, store.ViewAll)
	if got := contents(ms); strings.Join(got, "|") != "a|b|c" {
		t.Fatalf("transcript %q", got)
	}
	ids := tn.Persisted()
	for i, m := range ms {
		if ids[i] != m.ID {
			t.Fatalf("persisted ids %v, stored %v", ids, ms)
		}
	}
}

// A flush whose lease was taken is refused: nothing written, the turn is cancelled, and Run
// reports the loss.
func TestFlushRefusedAfterLeaseTaken(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	var sawCause error
	err := turn.Run(bg, db, "conv", turn.Options{}, func(ctx context.Context, tn *turn.Turn) error {
		tn.Add(user("mine"))
		if err := tn.Flush(ctx); err != nil {
			return err
		}
		// An operator frees the lease and another holder takes it.
		if err := db.ReleaseLease(bg, tn.Lease()); err != nil {
			return err
		}
		if _, err := db.AcquireLease(bg, "conv", "thief", time.Minute); err != nil {
			return err
		}
		tn.Add(user("stale 1"), user("stale 2"))
		if err := tn.Flush(ctx); !errors.Is(err, store.ErrLeaseLost) {
			return fmt.Errorf("flush after the lease was taken: %v", err)
		}
		<-ctx.Done()
		sawCause = context.Cause(ctx)
		return ctx.Err()
	})
	if !errors.Is(err, store.ErrLeaseLost) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "2 messages not persisted") {
		t.Fatalf("Run: %v", err)
	}
	if !errors.Is(sawCause, store.ErrLeaseLost) {
		t.Fatalf("turn context cause %v", sawCause)
	}
	if got := contents(conversation(t, db, store.ViewAll)); strings.Join(got, "|") != "mine" {
		t.Fatalf("transcript %q: a fenced-out write landed", got)
	}
}

func TestWaiting(t *testing.T) {
	t.Parallel()
	db, path := openDB(t)
	other := reopen(t, path) // a second handle, as another process would have
	first, err := turn.Begin(bg, db, "conv", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.End(bg)

	t.Run("abortable", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		_, err := turn.Begin(ctx, other, "conv", turn.Options{Poll: 10 * time.Second})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait with an ending context: %v", err)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		_, err := turn.Begin(bg, other, "conv", turn.Options{Wait: 200 * time.Millisecond, Poll: 50 * time.Millisecond})
		var te *turn.WaitTimeoutError
		if !errors.As(err, &te) || !errors.Is(err, turn.ErrWaitTimeout) || te.Holder != first.Holder() {
			t.Fatalf("bounded wait: %v", err)
		}
	})
	t.Run("told at once", func(t *testing.T) {
		// With notices an hour apart, the first still comes before the wait ends: at once.
		told := make(chan string, 1)
		ctx, cancel := context.WithCancel(bg)
		done := make(chan error, 1)
		go func() {
			_, err := turn.Begin(ctx, other, "conv", turn.Options{Poll: time.Hour, Notice: time.Hour,
				OnWait: func(_ time.Duration, holder string) { told <- holder }})
			done <- err
		}()
		h := <-told
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Begin after cancel: %v", err)
		}
		if h != first.Holder() {
			t.Fatalf("first notice named %q, want %q", h, first.Holder())
		}
	})
	t.Run("woken at release", func(t *testing.T) {
		var mu sync.Mutex
		var notices []string
		waiting := make(chan struct{})
		released := make(chan time.Time, 1)
		go func() {
			<-waiting
			_ = first.End(bg)
			released <- time.Now()
		}()
		// The poll interval is far longer than the whole test: only the wake-up can start us.
		second, err := turn.Begin(bg, other, "conv", turn.Options{Poll: 10 * time.Second, Notice: 50 * time.Millisecond,
			OnWait: func(_ time.Duration, holder string) {
				mu.Lock()
				defer mu.Unlock()
				if notices = append(notices, holder); len(notices) == 2 {
					close(waiting)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		defer second.End(bg)
		rel := <-released
		mu.Lock()
		defer mu.Unlock()
		if notices[0] != first.Holder() {
			t.Fatalf("OnWait named %q, want %q", notices[0], first.Holder())
		}
		if second.Lease().Generation != first.Lease().Generation+1 {
			t.Fatalf("generation %d after %d", second.Lease().Generation, first.Lease().Generation)
		}
		// Loose bound: a poll would take at least 8 s.
		if d := started.Sub(rel); d > 4*time.Second {
			t.Fatalf("second turn started %s after the release: not woken", d)
		}
	})
}

func TestOptionsAreValidated(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	for _, o := range []turn.Options{
		{TTL: time.Second, RenewEvery: time.Second},
		{RenewEvery: -time.Second},
		{Poll: -1},
	} {
		if _, err := turn.Begin(bg, db, "conv", o); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Begin(%+v): %v, want ErrInvalid", o, err)
		}
	}
	// A short TTL alone is valid: renewal defaults to a fifth of it.
	tn, err := turn.Begin(bg, db, "conv", turn.Options{TTL: time.Second})
	if err != nil {
		t.Fatalf("TTL without RenewEvery: %v", err)
	}
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := turn.Begin(bg, db, "missing", turn.Options{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Begin on a missing session: %v", err)
	}
}

func TestCompactLock(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	tn, err := turn.Begin(bg, db, "conv", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.End(bg)
	plan := func(context.Context) (store.CompactRequest, error) {
		return store.CompactRequest{Messages: []store.Message{user("summary")}}, nil
	}
	// Another compactor holds the lock: nothing is compacted.
	if ok, err := db.AcquireCompressionLock(bg, "conv", "other", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := tn.Compact(bg, plan); !errors.Is(err, store.ErrCompressionBusy) {
		t.Fatalf("compact while another holds the lock: %v", err)
	}
	if err := db.ReleaseCompressionLock(bg, "conv", "other"); err != nil {
		t.Fatal(err)
	}
	// A failing plan releases the lock.
	if _, err := tn.Compact(bg, func(context.Context) (store.CompactRequest, error) {
		return store.CompactRequest{}, errors.New("summary model unavailable")
	}); err == nil || !strings.Contains(err.Error(), "summary model unavailable") {
		t.Fatalf("failing plan: %v", err)
	}
	tn.Add(user("q"), user("a"))
	n, err := tn.Compact(bg, plan)
	if err != nil || n != 1 {
		t.Fatalf("compact: %d %v", n, err)
	}
	if got := contents(conversation(t, db, store.ViewActive)); strings.Join(got, "|") != "summary" {
		t.Fatalf("active after compaction %q", got)
	}
	if ok, err := db.AcquireCompressionLock(bg, "conv", "other", time.Minute); err != nil || !ok {
		t.Fatalf("lock not released after compaction: %v %v", ok, err)
	}
}

// TestRotate: a rotation ends the session with "compression", the turn goes on writing to the
// continuation under the same lease, and the parent's lock is released.
func TestRotate(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	tn, err := turn.Begin(bg, db, "conv", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn.Add(user("before"))
	child, err := tn.Rotate(bg, func(context.Context) (store.RotateRequest, error) {
		hist, err := db.Conversation(bg, "conv", store.ViewActive)
		if err != nil {
			return store.RotateRequest{}, err
		}
		return store.RotateRequest{Messages: []store.Message{user("summary of " + hist[len(hist)-1].Content)},
			Watermark: hist[len(hist)-1].ID, Child: store.NewSession{ID: "conv-2"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if child.ID != "conv-2" || child.ParentID != "conv" || tn.SessionID() != "conv-2" {
		t.Fatalf("child %+v, turn on %s", child, tn.SessionID())
	}
	tn.Add(user("after"))
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	parent, _ := db.GetSession(bg, "conv")
	if parent.EndReason != store.EndCompression {
		t.Fatalf("parent not ended by compression: %+v", parent)
	}
	ms, _ := db.Conversation(bg, "conv-2", store.ViewActive)
	if len(ms) != 2 || ms[0].Content != "summary of before" || ms[1].Content != "after" {
		t.Fatalf("continuation = %+v", ms)
	}
	if ok, err := db.AcquireCompressionLock(bg, "conv", "someone", time.Minute); err != nil || !ok {
		t.Fatalf("the parent's compression lock was not released: %v %v", ok, err)
	}
	// The next turn of the conversation, begun on the parent, takes the same lease.
	next, err := turn.Begin(bg, db, "conv-2", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	next.End(bg)
}

// The turn's last step is one write: End stores the pending messages, the queued request
// records and the session patch and gives the lease up in one CommitTurn; a failed last flush
// still releases the lease on its own, and a lost lease stores none of it.
func TestEndCommitsOnce(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	fs := &faultStore{Store: db}
	tn, err := turn.Begin(bg, fs, "conv", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn.Add(user("question"))
	if err := tn.Flush(bg); err != nil {
		t.Fatal(err)
	}
	tn.Add(store.Message{Role: store.RoleAssistant, Content: "answer"})
	tn.Record(store.RequestRecord{Model: "m", Usage: store.Usage{InputTokens: 12, OutputTokens: 4}})
	tn.Patch(store.SessionPatch{ModelConfig: []byte(`{"compression":{"x":1}}`)})
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	if c, r := fs.commits.Load(), fs.releases.Load(); c != 2 || r != 0 {
		t.Fatalf("%d commits and %d separate releases, want 2 and 0 (the release rides on the last commit)", c, r)
	}
	s, err := db.GetSession(bg, "conv")
	if err != nil || s.Usage.InputTokens != 12 || string(s.ModelConfig) != `{"compression":{"x":1}}` || s.MessageCount != 2 {
		t.Fatalf("after End: %+v %v", s, err)
	}
	if _, err := db.AcquireLease(bg, "conv", "next", time.Minute); err != nil {
		t.Fatalf("lease after End: %v", err)
	}
	if err := db.ReleaseLease(bg, store.Lease{ConversationID: "conv", Holder: "next", Generation: 2}); err != nil {
		t.Fatal(err)
	}

	// A failed last flush: the lease is released anyway, the failure reported.
	tn, err = turn.Begin(bg, fs, "conv", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn.Add(user("lost to the disk"))
	tn.Record(store.RequestRecord{Usage: store.Usage{InputTokens: 100}})
	setErr(&fs.appendErr, errors.New("disk I/O error"))
	if err := tn.End(bg); err == nil || !strings.Contains(err.Error(), "disk I/O error") {
		t.Fatalf("End after a failed last flush: %v", err)
	}
	if _, err := db.AcquireLease(bg, "conv", "after-failure", time.Minute); err != nil {
		t.Fatalf("lease after a failed last flush: %v", err)
	}
	if s, _ := db.GetSession(bg, "conv"); s.Usage.InputTokens != 12 {
		t.Fatalf("usage of a failed flush landed: %+v", s.Usage)
	}
}

// A turn's start is stored with its lease when the history is as the caller saw it: one write
// fewer, the messages persisted from the start and not written again by a flush or End. On a
// history that moved on, the lease is taken alone and nothing of the start is stored.
func TestStartStoredWithTheLease(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	fs := &faultStore{Store: db}
	seen := conversation(t, db, store.ViewActive)
	tn, err := turn.Begin(bg, fs, "conv", turn.Options{Start: store.StartOf(seen, []store.Message{user("q")})})
	if err != nil {
		t.Fatal(err)
	}
	if !tn.Started() || tn.Pending() != 0 || len(tn.Persisted()) != 1 {
		t.Fatalf("started %v, %d pending, persisted %v", tn.Started(), tn.Pending(), tn.Persisted())
	}
	if err := tn.Flush(bg); err != nil || fs.commits.Load() != 0 {
		t.Fatalf("flush after the start: %v, %d commits (want none)", err, fs.commits.Load())
	}
	tn.Add(store.Message{Role: store.RoleAssistant, Content: "a"})
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	ms := conversation(t, db, store.ViewAll)
	if got := contents(ms); strings.Join(got, "|") != "q|a" {
		t.Fatalf("transcript %q", got)
	}
	if ids := tn.Persisted(); len(ids) != 2 || ids[0] != ms[0].ID || ids[1] != ms[1].ID {
		t.Fatalf("persisted %v, stored %+v", ids, ms)
	}

	// The same view again: it is stale now (q and a came after it).
	tn, err = turn.Begin(bg, fs, "conv", turn.Options{Start: store.StartOf(seen, []store.Message{user("stale")})})
	if err != nil {
		t.Fatal(err)
	}
	if tn.Started() || tn.Pending() != 0 || len(tn.Persisted()) != 0 {
		t.Fatalf("on a stale view: started %v, %d pending, persisted %v", tn.Started(), tn.Pending(), tn.Persisted())
	}
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	if got := contents(conversation(t, db, store.ViewAll)); strings.Join(got, "|") != "q|a" {
		t.Fatalf("transcript %q: a stale start landed", got)
	}
}

// A turn whose work and whose end both fail (a database gone: the model call's flush, then the
// last flush) returns one line, the first failure's, and keeps both for errors.Is: before, the
// two were joined into one line of two sentences.
func TestRunFailureIsOneLine(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	fs := &faultStore{Store: db}
	gone := errors.New("connection refused")
	setErr(&fs.appendErr, gone)
	work := errors.New("the model call failed")
	err := turn.Run(bg, fs, "conv", turn.Options{}, func(ctx context.Context, tn *turn.Turn) error {
		tn.Add(user("unsaved"))
		return work
	})
	if !errors.Is(err, work) || !errors.Is(err, gone) {
		t.Fatalf("Run: %v, want both failures for errors.Is", err)
	}
	if err.Error() != work.Error() {
		t.Fatalf("Run's error line %q, want the first failure's alone", err.Error())
	}
}
