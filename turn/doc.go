// Package turn runs one turn of a conversation at a time, across goroutines, processes and hosts.
//
// A turn holds the conversation's lease (store.Lease, with its fencing generation) for its whole
// life: Begin waits for the lease (bounded by Options.Wait, abortable by its context, woken by
// the store's LeaseWatch when another holder releases, else by a jittered poll), a goroutine owned
// by the Turn renews it every Options.RenewEvery, and End releases it. Should the lease be lost
// (another holder took it after our TTL ran out, or renewal failed), the turn's Context is
// cancelled at once with a *LeaseLostError cause, and every later write is refused by the store
// inside its own transaction, so a stale turn can never write.
//
// After Begin returns, the caller must reload the conversation's history: another process may
// have committed a whole turn while we waited.
//
// Messages reach the store through a flush cursor: Add queues them, Flush appends everything not
// yet persisted in one fenced batch and advances the cursor only when the batch committed, so a
// message is persisted incrementally and never twice, also when the turn ends through an error
// path: End flushes what is left (unless the lease was lost) before releasing. Run wraps
// Begin/End so that every exit path, panics included, releases the lease.
//
// Compact runs an in-place compaction under the turn: it takes the session's compression lock,
// calls the caller's slow summary function without holding any database transaction, and
// commits with the lease fence; messages other writers append meanwhile are carried over after
// the compacted set by the store's watermark protocol.
package turn
