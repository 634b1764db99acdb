package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spoolhq/spool/store"
)

// leaseBudget bounds a renewal's and a release's wait for a locked database (the renewer tries
// again while the lease has time left). Taking a lease waits the whole write budget: a turn that
// cannot take it in that time fails with the store's *store.WriteTimeoutError.
const leaseBudget = 5 * time.Second

// AcquireLease implements store.Leaser.
func (db *DB) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (store.Lease, error) {
	if holder == "" {
		return store.Lease{}, store.Invalid("holder", "empty")
	}
	var l store.Lease
	err := db.writeGrouped(ctx, db.opts.WriteBudget, func(ctx context.Context, tx *sql.Tx) error {
		q := cachedTx{db, tx}
		conv, err := rootOf(ctx, q, sessionID)
		if err != nil {
			return err
		}
		l, err = db.takeLease(ctx, q, conv, holder, ttl)
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire turn lease for %s: %w", sessionID, err)
	}
	return l, nil
}

// takeLease is AcquireLease's work on the conversation conv, inside a write transaction.
func (db *DB) takeLease(ctx context.Context, q cachedTx, conv, holder string, ttl time.Duration) (store.Lease, error) {
	ttl = max(ttl, 100*time.Millisecond)
	now := time.Now()
	var cur sql.NullString
	var gen int64
	var expires sql.NullInt64
	err := q.QueryRowContext(ctx, leaseGetSQL, conv).Scan(&cur, &gen, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return store.Lease{}, err
	case !cur.Valid || expires.Int64 <= micros(now):
	case cur.String == holder:
		// Our own live lease: extend it, same generation (never wait on ourselves).
		l := store.Lease{ConversationID: conv, Holder: holder, Generation: gen, ExpiresAt: fromMicros(micros(now.Add(ttl)))}
		_, err := q.ExecContext(ctx, leaseExtendSQL, micros(l.ExpiresAt), int64(ttl/time.Microsecond), conv)
		return l, err
	case store.HolderProvablyDead(cur.String):
		db.log.Info("spool: taking the turn lease of a dead holder", "conversation", conv, "holder", cur.String)
	default:
		return store.Lease{}, &store.LeaseHeldError{ConversationID: conv, Holder: cur.String, ExpiresAt: fromMicros(expires.Int64)}
	}
	l := store.Lease{ConversationID: conv, Holder: holder, Generation: gen + 1, ExpiresAt: fromMicros(micros(now.Add(ttl)))}
	_, err = q.ExecContext(ctx, leaseTakeSQL, conv, holder, l.Generation, micros(now), micros(l.ExpiresAt), int64(ttl/time.Microsecond))
	return l, err
}

// BeginTurn implements store.Leaser: one write (a job of the group writer) reads the session's
// root and the tail of its active history (turnStartSQL), takes the lease as AcquireLease does
// and, when the tail is still s's, appends s.Messages as CommitTurn does (commitMerged, whose
// fence check finds the lease just taken).
func (db *DB) BeginTurn(ctx context.Context, sessionID, holder string, ttl time.Duration, s store.TurnStart) (store.Lease, []int64, error) {
	if len(s.Messages) == 0 {
		l, err := db.AcquireLease(ctx, sessionID, holder, ttl)
		return l, nil, err
	}
	if holder == "" {
		return store.Lease{}, nil, store.Invalid("holder", "empty")
	}
	enc, toolCalls, err := encodeMessages(s.Messages)
	if err != nil {
		return store.Lease{}, nil, fmt.Errorf("begin turn on %s: %w", sessionID, err)
	}
	var l store.Lease
	var ids []int64
	err = db.writeGrouped(ctx, db.opts.WriteBudget, func(ctx context.Context, tx *sql.Tx) error {
		ids = nil
		q := cachedTx{db, tx}
		var conv string
		var count int
		var closed bool
		var last int64
		err := q.QueryRowContext(ctx, turnStartSQL, sessionID).Scan(&conv, &count, &closed, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("session", sessionID)
		}
		if err != nil {
			return err
		}
		if l, err = db.takeLease(ctx, q, conv, holder, ttl); err != nil {
			return err
		}
		if closed || count != s.Active || last != s.LastID {
			return nil // the history moved on: the lease alone
		}
		ids, err = db.commitMerged(ctx, tx, sessionID, l, enc, toolCalls, nil, nil)
		return err
	})
	if err != nil {
		return store.Lease{}, nil, fmt.Errorf("begin turn on %s: %w", sessionID, err)
	}
	return l, ids, nil
}

// RenewLease implements store.Leaser.
func (db *DB) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	ttl = max(ttl, 100*time.Millisecond)
	renewed := l
	err := db.writeGrouped(ctx, leaseBudget, func(ctx context.Context, tx *sql.Tx) error {
		renewed.ExpiresAt = fromMicros(micros(time.Now().Add(ttl)))
		res, err := cachedTx{db, tx}.ExecContext(ctx, leaseRenewSQL, micros(renewed.ExpiresAt), int64(ttl/time.Microsecond), l.ConversationID, l.Holder, l.Generation)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("generation %d of %s: %w", l.Generation, l.ConversationID, store.ErrLeaseLost)
		}
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("renew turn lease: %w", err)
	}
	return renewed, nil
}

// ReleaseLease implements store.Leaser.
func (db *DB) ReleaseLease(ctx context.Context, l store.Lease) error {
	var released bool
	err := db.writeGrouped(ctx, leaseBudget, func(ctx context.Context, tx *sql.Tx) error {
		res, err := cachedTx{db, tx}.ExecContext(ctx, leaseReleaseSQL, l.ConversationID, l.Holder, l.Generation)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		released = n > 0
		return nil
	})
	if err != nil {
		return fmt.Errorf("release turn lease of %s: %w", l.ConversationID, err)
	}
	if released {
		db.ringLease(l.ConversationID)
	}
	return nil
}

// checkLease fences a transcript write on sessionID (whose conversation root is root) inside tx.
func checkLease(ctx context.Context, tx *sql.Tx, root string, f *store.Fence) error {
	return checkLeaseOn(ctx, txQuerier{tx}, root, f)
}

// checkLease is checkLease with the writer's prepared statements.
func (db *DB) checkLease(ctx context.Context, tx *sql.Tx, root string, f *store.Fence) error {
	return checkLeaseOn(ctx, cachedTx{db, tx}, root, f)
}

// txQuerier is a transaction's plain statements.
type txQuerier struct{ tx *sql.Tx }

func (t txQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t txQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, query, args...)
}

type execQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// checkLeaseOn checks fence f (nil: an unfenced write) against the lease row of root.
func checkLeaseOn(ctx context.Context, tx execQuerier, root string, f *store.Fence) error {
	if f == nil {
		return nil
	}
	if err := f.Check(root, f.Holder(), f.Generation()); err != nil {
		return err // the zero fence, or another conversation's
	}
	var holder sql.NullString
	var gen, ttl int64
	var expires sql.NullInt64
	err := tx.QueryRowContext(ctx, leaseCheckSQL, root).Scan(&holder, &gen, &expires, &ttl)
	if errors.Is(err, sql.ErrNoRows) {
		return f.Check(root, "", 0)
	}
	if err != nil {
		return err
	}
	if err := f.Check(root, holder.String, gen); err != nil {
		return err
	}
	if now := micros(time.Now()); expires.Int64 <= now {
		// Ours, expired, and nobody took it: the write renews it rather than failing.
		_, err = tx.ExecContext(ctx, leaseTouchSQL, now+max(ttl, 100_000), root)
	}
	return err
}

// leaseBell is the file a release writes to, waking watchers of that conversation on this host.
func (db *DB) leaseBell(conversationID string) string {
	sum := sha256.Sum256([]byte(conversationID))
	return filepath.Join(db.path+"-leases", hex.EncodeToString(sum[:12]))
}

// ringLease wakes local waiters; best effort (waiters also poll). Touching the bell is one
// system call (its inode change is an IN_ATTRIB for the watchers). A bell that does not exist
// has nobody watching it and is left missing: a watcher creates the bell before it watches and
// then tries the lease again, so a release it might miss is one that attempt sees.
func (db *DB) ringLease(conversationID string) {
	if db.mem != nil {
		db.mem.bells.ring(conversationID)
		return
	}
	now := time.Now()
	_ = os.Chtimes(db.leaseBell(conversationID), now, now)
}
