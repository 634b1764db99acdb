package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/spoolhq/spool/store"
)

// Add queues messages for the next Flush (or End), in order. Messages added after End are never
// persisted.
func (t *Turn) Add(msgs ...store.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queue = append(t.queue, msgs...)
}

// Pending is how many added messages are not persisted yet.
func (t *Turn) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue) - t.cursor
}

// Persisted returns the store ids of the messages flushed so far, in order.
func (t *Turn) Persisted() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]int64(nil), t.ids...)
}

// Flush appends every added message not yet persisted, in one batch fenced by the lease, and
// advances the cursor only when the batch committed. The store writes a batch whole or not at
// all, so after an error the same messages are simply tried again by the next Flush or by End:
// none is lost and none is written twice. A flush refused because the lease is lost cancels the
// turn's context and returns the *LeaseLostError; nothing is written, then or later.
func (t *Turn) Flush(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	return t.flushLocked(ctx)
}

func (t *Turn) flushLocked(ctx context.Context) error {
	t.mu.Lock()
	lost, ended, session := t.lost, t.ended, t.session
	pending := append([]store.Message(nil), t.queue[t.cursor:]...)
	t.mu.Unlock()
	if lost != nil {
		return lost
	}
	if len(pending) == 0 {
		return nil
	}
	if ended {
		return fmt.Errorf("flush %d messages on %s: %w", len(pending), session, ErrEnded)
	}
	ids, err := t.st.AppendBatch(ctx, session, pending, t.Fence())
	t.failed = err != nil
	if err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			return t.lose(err, false)
		}
		return fmt.Errorf("flush %d messages on %s: %w", len(pending), session, err)
	}
	t.mu.Lock()
	t.cursor += len(pending)
	t.ids = append(t.ids, ids...)
	t.mu.Unlock()
	return nil
}
