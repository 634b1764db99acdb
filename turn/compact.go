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
	if err := t.Flush(ctx); err != nil {
		return 0, fmt.Errorf("compact %s: %w", t.session, err)
	}
	holder := t.o.Holder
	got, err := t.st.AcquireCompressionLock(ctx, t.session, holder, t.o.TTL)
	if err != nil {
		return 0, fmt.Errorf("compact %s: %w", t.session, err)
	}
	if !got {
		return 0, fmt.Errorf("compact %s: another compaction is running: %w", t.session, store.ErrCompressionBusy)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endBudget)
		defer cancel()
		_ = t.st.ReleaseCompressionLock(rctx, t.session, holder) // holder-qualified; a stale row expires anyway
	}()

	req, err := t.planHoldingLock(ctx, holder, plan)
	if err != nil {
		return 0, fmt.Errorf("compact %s: %w", t.session, err)
	}
	if req.SessionID == "" {
		req.SessionID = t.session
	}
	req.LockHolder = holder
	if lost := t.Lost(); lost != nil {
		return 0, fmt.Errorf("compact %s: %w", t.session, lost)
	}
	n, err := t.st.ArchiveAndCompact(ctx, req, t.Fence())
	if err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			err = t.lose(err, false)
		}
		return 0, fmt.Errorf("compact %s: %w", t.session, err)
	}
	return n, nil
}

// planHoldingLock runs plan with the turn's context while a goroutine refreshes the lock, so a
// summary call longer than the TTL does not let another compactor in.
func (t *Turn) planHoldingLock(ctx context.Context, holder string, plan func(ctx context.Context) (store.CompactRequest, error)) (store.CompactRequest, error) {
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
				_, _ = t.st.RefreshCompressionLock(pctx, t.session, holder, t.o.TTL)
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
