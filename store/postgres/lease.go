package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

// leaseBudget bounds a release's retries; taking a lease retries for the whole write budget.
const leaseBudget = 5 * time.Second

// leaseChannel is the NOTIFY channel of lease releases; the payload is the conversation id.
const leaseChannel = "spool_lease"

// takeLeaseSQL takes a free or expired lease with the next generation, or extends the holder's
// own live one with the same generation, in one conditional upsert keyed by the conversation
// (the session's lineage root). No row comes back when someone else holds a live lease.
const takeLeaseSQL = `WITH now AS (SELECT ` + nowUS + ` AS us)
	INSERT INTO turn_leases AS l (conversation_id, holder, generation, acquired_at, expires_at, ttl)
	SELECT s.root_id, $2, 1, now.us, now.us + $3, $3 FROM sessions s, now WHERE s.id = $1
	ON CONFLICT (conversation_id) DO UPDATE SET
		generation = l.generation + CASE WHEN l.holder = excluded.holder AND l.expires_at > excluded.acquired_at THEN 0 ELSE 1 END,
		acquired_at = CASE WHEN l.holder = excluded.holder AND l.expires_at > excluded.acquired_at THEN l.acquired_at ELSE excluded.acquired_at END,
		holder = excluded.holder, expires_at = excluded.expires_at, ttl = excluded.ttl
	WHERE l.holder IS NULL OR l.expires_at <= excluded.acquired_at OR l.holder = excluded.holder
	RETURNING conversation_id, generation, expires_at`

// AcquireLease implements store.Leaser.
func (db *DB) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (store.Lease, error) {
	if holder == "" {
		return store.Lease{}, store.Invalid("holder", "empty")
	}
	holder = store.CleanIdent(holder)
	ttlUS := int64(max(ttl, 100*time.Millisecond) / time.Microsecond)
	var l store.Lease
	err := db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) (err error) {
		l, err = db.takeLease(ctx, tx, sessionID, holder, ttlUS)
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire turn lease for %s: %w", sessionID, err)
	}
	return l, nil
}

// takeLease is AcquireLease's work inside tx (holder already cleaned, the TTL in µs).
func (db *DB) takeLease(ctx context.Context, tx pgx.Tx, sessionID, holder string, ttlUS int64) (store.Lease, error) {
	var l store.Lease
	for attempt := 0; ; attempt++ {
		var exp int64
		err := tx.QueryRow(ctx, takeLeaseSQL, sessionID, holder, ttlUS).Scan(&l.ConversationID, &l.Generation, &exp)
		if err == nil {
			l.Holder, l.ExpiresAt = holder, fromMicros(exp)
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Lease{}, err
		}
		// Missing session, or a live foreign holder: which one, and is that holder provably dead?
		var conv string
		var cur *string
		var gen, expires *int64
		err = tx.QueryRow(ctx, `SELECT s.root_id, l.holder, l.generation, l.expires_at FROM sessions s
			LEFT JOIN turn_leases l ON l.conversation_id = s.root_id WHERE s.id = $1`, sessionID).Scan(&conv, &cur, &gen, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Lease{}, notFound("session", sessionID)
		}
		if err != nil {
			return store.Lease{}, err
		}
		if cur == nil || attempt > 3 || !store.HolderProvablyDead(*cur) {
			if cur == nil && attempt < 10 {
				continue // released meanwhile: take it
			}
			if cur == nil {
				return store.Lease{}, fmt.Errorf("lease of %s keeps changing hands: %w", conv, store.ErrBusy)
			}
			return store.Lease{}, &store.LeaseHeldError{ConversationID: conv, Holder: *cur, ExpiresAt: fromMicros(*expires)}
		}
		db.log.Info("spool: taking the turn lease of a dead holder", "conversation", conv, "holder", *cur)
		var exp2 int64
		err = tx.QueryRow(ctx, `UPDATE turn_leases SET holder = $3, generation = generation + 1,
			acquired_at = `+nowUS+`, expires_at = `+nowUS+` + $4, ttl = $4
			WHERE conversation_id = $1 AND holder = $2 AND generation = $5 RETURNING generation, expires_at`,
			conv, *cur, holder, ttlUS, *gen).Scan(&l.Generation, &exp2)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // it changed hands meanwhile: look again
		}
		if err != nil {
			return store.Lease{}, err
		}
		l.ConversationID, l.Holder, l.ExpiresAt = conv, holder, fromMicros(exp2)
		return l, nil
	}
}

// RenewLease implements store.Leaser.
func (db *DB) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	ttlUS := int64(max(ttl, 100*time.Millisecond) / time.Microsecond)
	renewed := l
	var exp int64
	err := db.pool.QueryRow(ctx, `UPDATE turn_leases SET expires_at = `+nowUS+` + $1, ttl = $1
		WHERE conversation_id = $2 AND holder = $3 AND generation = $4 RETURNING expires_at`,
		ttlUS, l.ConversationID, l.Holder, l.Generation).Scan(&exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, fmt.Errorf("renew turn lease: generation %d of %s: %w", l.Generation, l.ConversationID, store.ErrLeaseLost)
	}
	if err != nil {
		return l, fmt.Errorf("renew turn lease: %w", err)
	}
	renewed.ExpiresAt = fromMicros(exp)
	return renewed, nil
}

// ReleaseLease implements store.Leaser. A release that frees the lease is announced on
// leaseChannel in the same transaction (delivered at commit).
func (db *DB) ReleaseLease(ctx context.Context, l store.Lease) error {
	err := db.write(ctx, leaseBudget, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE turn_leases SET holder = NULL, expires_at = NULL
			WHERE conversation_id = $1 AND holder = $2 AND generation = $3`, l.ConversationID, l.Holder, l.Generation)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", leaseChannel, notifyPayload(l.ConversationID))
		return err
	})
	if err != nil {
		return fmt.Errorf("release turn lease of %s: %w", l.ConversationID, err)
	}
	return nil
}
