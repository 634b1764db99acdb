package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

// Compact compacts the turn's session in place under the turn's lease:
//
//  1. flush this turn's pending messages, so the plan sees them;
//  2. take the session's compression lock (holder = the turn's holder, TTL = Options.TTL, kept
//     fresh every RenewEvery while plan runs); a lock held elsewhere returns
//     store.ErrCompressionBusy and compacts nothing;
//  3. call plan, the slow part (reading history and the summary model call), with no database
//     transaction open, so other writers keep appending meanwhile;
//  4. commit plan's request with ArchiveAndCompact, carrying the lock holder and the lease
//     fence. Rows appended above the request's Watermark during plan are carried over after
//     the compacted set by the store;
//  5. release the lock, on every path.
//
// plan sets Messages, Watermark (the highest active id it read) and TailCount; SessionID
// defaults to the turn's session. Compact returns the new active row count. A lost lease
// cancels the turn like a refused Flush does.
func (t *Turn) Compact(ctx context.Context, plan func(ctx context.Context) (store.CompactRequest, error)) (int, error) {
	var n int
	err := t.underCompressionLock(ctx, func(holder string) error {
		req, err := planHoldingLock(ctx, t, holder, plan)
		if err != nil {
			return err
		}
		if req.SessionID == "" {
			req.SessionID = t.SessionID()
		}
		req.LockHolder = holder
		if lost := t.Lost(); lost != nil {
			return lost
		}
		n, err = t.st.ArchiveAndCompact(ctx, req, t.Fence())
		return err
	})
	return n, err
}

// Rotate compacts by rotation: the same protocol as Compact, but the commit ends the turn's
// session with reason "compression" and continues the conversation in a new child session
// (RotateCompaction), which the turn writes to from then on. The child shares its parent's
// conversation, so the turn's lease covers it. plan sets Messages, Watermark and the Child;
// ParentID defaults to the turn's session. Rotate returns the child.
func (t *Turn) Rotate(ctx context.Context, plan func(ctx context.Context) (store.RotateRequest, error)) (store.Session, error) {
	var child store.Session
	err := t.underCompressionLock(ctx, func(holder string) error {
		req, err := planHoldingLock(ctx, t, holder, plan)
		if err != nil {
			return err
		}
		if req.ParentID == "" {
			req.ParentID = t.SessionID()
		}
		req.LockHolder = holder
		if lost := t.Lost(); lost != nil {
			return lost
		}
		if child, err = t.st.RotateCompaction(ctx, req, t.Fence()); err != nil {
			return err
		}
		t.mu.Lock()
		t.session = child.ID
		t.mu.Unlock()
		return nil
	})
	return child, err
}

// underCompressionLock flushes the turn, holds the session's compression lock around commit and
// turns a refused fence into a lost lease.
func (t *Turn) underCompressionLock(ctx context.Context, commit func(holder string) error) error {
	sid := t.SessionID()
	if err := t.Flush(ctx); err != nil {
		return fmt.Errorf("compact %s: %w", sid, err)
	}
	holder := t.o.Holder
	got, err := t.st.AcquireCompressionLock(ctx, sid, holder, t.o.TTL)
	if err != nil {
		return fmt.Errorf("compact %s: %w", sid, err)
	}
	if !got {
		return fmt.Errorf("compact %s: another compaction is running: %w", sid, store.ErrCompressionBusy)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endBudget)
		defer cancel()
		_ = t.st.ReleaseCompressionLock(rctx, sid, holder) // holder-qualified; a stale row expires anyway
	}()
	if err := commit(holder); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			err = t.lose(err, false)
		}
		return fmt.Errorf("compact %s: %w", sid, err)
	}
	return nil
}

// planHoldingLock runs plan with the turn's context while a goroutine refreshes the lock, so a
// summary call longer than the TTL does not let another compactor in.
func planHoldingLock[R any](ctx context.Context, t *Turn, holder string, plan func(ctx context.Context) (R, error)) (R, error) {
	sid := t.SessionID()
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(t.o.RenewEvery)
		defer tick.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
				// A failed refresh needs no action here: the commit's lock check refuses then.
				_, _ = t.st.RefreshCompressionLock(pctx, sid, holder, t.o.TTL)
			}
		}
	}()
	defer func() { stop(); <-done }()
	// The plan sees the turn's context too: a lost lease stops a pointless summary call.
	tctx, cancel := mergeCancel(pctx, t.ctx)
	defer cancel()
	return plan(tctx)
}

// mergeCancel returns a context of a that is also cancelled (with its cause) when b ends.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(a)
	stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}
