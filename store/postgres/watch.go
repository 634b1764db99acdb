package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

var _ store.LeaseWatcher = (*DB)(nil)

// notifyPayload names a conversation in a notification (payloads must stay under 8000 bytes).
func notifyPayload(conv string) string {
	if len(conv) <= 200 {
		return conv
	}
	sum := sha256.Sum256([]byte(conv))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// notifyHub owns one dedicated connection (not from the pool: LISTEN is session state, so it
// must not go through a transaction pooler either) that listens on leaseChannel, and fans the
// notifications out to the watchers of each conversation. It reconnects after a failure; a
// notification lost meanwhile costs a waiter one poll interval, never a wake-up.
type notifyHub struct {
	url    string
	cancel context.CancelFunc
	done   chan struct{}
	// ready is closed once the first LISTEN is in place.
	ready     chan struct{}
	readyOnce sync.Once

	mu       sync.Mutex
	watchers map[string]map[*leaseWatch]struct{}
}

func (db *DB) notifier() *notifyHub {
	db.watchOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		h := &notifyHub{url: db.url, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}), watchers: map[string]map[*leaseWatch]struct{}{}}
		db.hub = h
		go h.run(ctx, db)
	})
	return db.hub
}

func (h *notifyHub) run(ctx context.Context, db *DB) {
	defer close(h.done)
	for backoff := 50 * time.Millisecond; ctx.Err() == nil; backoff = min(2*backoff, 5*time.Second) {
		err := h.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		db.log.Warn("spool: lease notifications interrupted; waiters poll until reconnected", "err", err)
		h.wakeAll() // something may have been released while we were not listening
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

func (h *notifyHub) listen(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, h.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+leaseChannel); err != nil {
		return err
	}
	first := false
	h.readyOnce.Do(func() { close(h.ready); first = true })
	if !first {
		// A release between the lost connection's wake-up and this LISTEN taking effect was
		// heard by nobody: every watcher looks again now that notifications flow.
		h.wakeAll()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		h.wake(n.Payload)
	}
}

func (h *notifyHub) wake(payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers[payload] {
		w.ring()
	}
}

func (h *notifyHub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ws := range h.watchers {
		for w := range ws {
			w.ring()
		}
	}
}

func (h *notifyHub) close() {
	h.cancel()
	<-h.done
}

type leaseWatch struct {
	hub  *notifyHub
	key  string
	bell chan struct{}
}

func (w *leaseWatch) ring() {
	select {
	case w.bell <- struct{}{}:
	default:
	}
}

// WatchLease implements store.LeaseWatcher: a release of the conversation's lease anywhere
// wakes the watch through NOTIFY. The watch is registered before it returns, so a release
// after a failed acquire is not missed once the listener is connected; a waiter polls anyway.
func (db *DB) WatchLease(conversationID string) (store.LeaseWatch, error) {
	h := db.notifier()
	w := &leaseWatch{hub: h, key: notifyPayload(conversationID), bell: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.watchers[w.key] == nil {
		h.watchers[w.key] = map[*leaseWatch]struct{}{}
	}
	h.watchers[w.key][w] = struct{}{}
	h.mu.Unlock()
	// The first watch waits (briefly) for the listener, so its first release is heard.
	select {
	case <-h.ready:
	case <-time.After(2 * time.Second):
	}
	return w, nil
}

// Wait implements store.LeaseWatch.
func (w *leaseWatch) Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.bell:
	case <-t.C:
	}
	return nil
}

// Close implements store.LeaseWatch.
func (w *leaseWatch) Close() error {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	delete(w.hub.watchers[w.key], w)
	if len(w.hub.watchers[w.key]) == 0 {
		delete(w.hub.watchers, w.key)
	}
	return nil
}
