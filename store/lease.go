package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lease is the right to run one turn of a conversation. Generation is a fencing token: it grows
// every time the lease changes hands, so a write carrying an older generation is refused even if
// its holder believes it still owns the conversation.
type Lease struct {
	ConversationID string // the lineage root: compression continuations share their root's lease
	Holder         string
	Generation     int64
	ExpiresAt      time.Time
}

// Errors of the lease protocol.
var (
	// ErrLeaseHeld: another holder owns the lease and it is neither expired nor provably dead.
	ErrLeaseHeld = errors.New("turn lease held by another holder")
	// ErrLeaseLost: a renewal or fenced write found that the lease changed hands.
	ErrLeaseLost = errors.New("turn lease lost")
)

// LeaseHeldError says who holds the lease and until when.
type LeaseHeldError struct {
	ConversationID string
	// Name is the named lease held (NamedLeaser); empty for a conversation's turn lease.
	Name      string
	Holder    string
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	if e.Name != "" {
		return fmt.Sprintf("lease %s is held by %s until %s", e.Name, e.Holder, e.ExpiresAt.Format(time.RFC3339))
	}
	return fmt.Sprintf("conversation %s is busy: turn lease held by %s until %s", e.ConversationID, e.Holder,
		e.ExpiresAt.Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// LeaseWatch wakes a waiter when a conversation's lease may have changed hands. Backends that
// can notify (a file watch on one host, LISTEN/NOTIFY on PostgreSQL) implement LeaseWatcher;
// waiters fall back to polling otherwise.
type LeaseWatch interface {
	// Wait returns when the lease may have changed, after d, or when ctx ends (ctx.Err()).
	Wait(ctx context.Context, d time.Duration) error
	Close() error
}

// LeaseWatcher is implemented by backends that can wake lease waiters.
type LeaseWatcher interface {
	// WatchLease starts watching before the caller tries to acquire, so a release between a
	// failed attempt and the wait is not missed.
	WatchLease(conversationID string) (LeaseWatch, error)
}

// WithLease fences a transcript write: it lands only while lease is still the conversation's
// current lease (same holder and generation). An expired lease nobody took is renewed in place.
func WithLease(l Lease) WriteOption {
	return func(o *WriteOptions) { o.Lease = &l }
}
