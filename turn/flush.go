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

// Record queues one model call's accounting for the next flush, which stores it in the same
// transaction as the messages (store.TurnWrite.Requests): the call's answer and its usage land
// together or not at all. Records of a turn that lost its lease are never stored.
func (t *Turn) Record(r store.RequestRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.records = append(t.records, r)
}

// Patch sets the session patch the next flush applies to the turn's session (replacing one
// queued earlier and not yet flushed).
func (t *Turn) Patch(p store.SessionPatch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.patch = &p
}

// Flush stores every added message not yet persisted, with the queued request records and
// session patch, in one transaction fenced by the lease (store.CommitTurn), and advances the
// cursor only when it committed. The store writes it whole or not at all, so after an error the
// same messages are simply tried again by the next Flush or by End: none is lost and none is
// written twice. A flush refused because the lease is lost cancels the turn's context and
// returns the *LeaseLostError; nothing is written, then or later.
func (t *Turn) Flush(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	_, err := t.flushLocked(ctx, false)
	return err
}

// flushLocked is Flush; with release the same transaction gives the lease up, and released
// says it did (false when there was nothing to store: the caller releases on its own).
func (t *Turn) flushLocked(ctx context.Context, release bool) (released bool, err error) {
	t.mu.Lock()
	lost, ended, session := t.lost, t.ended, t.session
	w := store.TurnWrite{
		Messages: append([]store.Message(nil), t.queue[t.cursor:]...),
		Requests: append([]store.RequestRecord(nil), t.records...),
		Patch:    t.patch,
	}
	t.mu.Unlock()
	if lost != nil {
		return false, lost
	}
	if w.Empty() {
		return false, nil
	}
	if ended {
		return false, fmt.Errorf("flush %d messages on %s: %w", len(w.Messages), session, ErrEnded)
	}
	w.Release = release
	ids, err := t.st.CommitTurn(ctx, session, t.Lease(), w)
	t.failed = err != nil
	if err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			return false, t.lose(err, false)
		}
		return false, fmt.Errorf("flush %d messages on %s: %w", len(w.Messages), session, err)
	}
	t.mu.Lock()
	t.cursor += len(w.Messages)
	t.ids = append(t.ids, ids...)
	t.records = t.records[len(w.Requests):]
	if t.patch == w.Patch {
		t.patch = nil
	}
	t.mu.Unlock()
	return release, nil
}
