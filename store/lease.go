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

// Fence is what a history write carries to prove it runs under the conversation's turn lease:
// the conversation, the lease's holder and its generation. Only a Lease gives one (Lease.Fence:
// what AcquireLease and BeginTurn return, or a turn's current lease), and the history edits
// (Transcript's UndoLastExchange and HideMessage, Compactor's ArchiveAndCompact and
// RotateCompaction) take one as a required argument, so an edit made without the lease does
// not compile. A store checks the fence inside the write's own transaction: a fence that is no
// longer the conversation's current lease (another holder took it, or it was released) fails
// with ErrLeaseLost and writes nothing; the zero Fence is never current. An expired lease nobody
// took is renewed in place by the write.
type Fence struct {
	conversation string
	holder       string
	generation   int64
}

// Fence is the fence of l, for the history writes made under it.
func (l Lease) Fence() Fence {
	return Fence{conversation: l.ConversationID, holder: l.Holder, generation: l.Generation}
}

// ConversationID is the lineage root whose lease the fence names.
func (f Fence) ConversationID() string { return f.conversation }

// Holder is the lease holder the fence names.
func (f Fence) Holder() string { return f.holder }

// Generation is the lease generation the fence names.
func (f Fence) Generation() int64 { return f.generation }

// IsZero reports whether f came from no lease.
func (f Fence) IsZero() bool { return f == Fence{} }

// Check reports whether the lease a store holds for the conversation root, held by holder at
// generation gen (holder "" when nobody holds it), is the one f names; it returns nil or an
// error wrapping ErrLeaseLost. Backends call it inside the write's transaction.
func (f Fence) Check(root, holder string, gen int64) error {
	switch {
	case f.IsZero():
		return fmt.Errorf("write on %s carries no lease fence: %w", root, ErrLeaseLost)
	case root != f.conversation:
		return fmt.Errorf("lease is for conversation %s, not %s: %w", f.conversation, root, ErrLeaseLost)
	case holder == "" || holder != f.holder || gen != f.generation:
		return fmt.Errorf("generation %d of %s: %w", f.generation, root, ErrLeaseLost)
	}
	return nil
}

// WithLease fences a write that may also be made unfenced (Append, AppendBatch, SetTitle): it
// lands only while l is still the conversation's current lease (same holder and generation).
func WithLease(l Lease) WriteOption { return WithFence(l.Fence()) }

// WithFence is WithLease with the lease's fence.
func WithFence(f Fence) WriteOption {
	return func(o *WriteOptions) { o.Fence = &f }
}

// editTTL is how long UnderLease holds a lease for one edit outside a turn.
const editTTL = 30 * time.Second

// LeaseTaker is the part of Leaser an edit outside a turn uses.
type LeaseTaker interface {
	AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error)
	ReleaseLease(ctx context.Context, l Lease) error
}

// UnderLease runs edit, a history edit outside a turn (an undo, a hide, a compaction made by a
// tool), holding the turn lease of sessionID's conversation with a holder of its own: it takes
// the lease (a live holder, a running turn of this process included, returns its
// *LeaseHeldError and edit does not run), gives edit the lease's fence and releases the lease
// when edit returns. A caller that must wait for a running turn instead uses the turn package.
func UnderLease[T any](ctx context.Context, st LeaseTaker, sessionID string, edit func(Fence) (T, error)) (T, error) {
	var zero T
	l, err := st.AcquireLease(ctx, sessionID, NewHolder().String(), editTTL)
	if err != nil {
		return zero, err
	}
	defer func() { _ = st.ReleaseLease(context.WithoutCancel(ctx), l) }()
	return edit(l.Fence())
}
