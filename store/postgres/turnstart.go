package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

// turnStartSQL locks the session's row (first, as every fenced write does before the lease
// row, so BeginTurn and a commit never wait on each other in opposite orders) and reads what
// BeginTurn checks before it appends: the active count, whether compression closed the session,
// and its newest active message (0: none).
const turnStartSQL = `SELECT message_count, ended_at IS NOT NULL AND end_reason = 'compression',
	coalesce((SELECT max(id) FROM messages WHERE session_id = $1 AND active), 0)
	FROM sessions WHERE id = $1 FOR UPDATE`

// BeginTurn implements store.Leaser in one transaction: the session row is locked and its
// history's tail read, the lease is taken as AcquireLease takes it, and when the tail is still
// s's the messages are appended by appendRowsTx (counters, the root's activity, the rows, in one
// round trip). No fence call is needed: the lease row was taken in
// this transaction and stays locked until its commit.
func (db *DB) BeginTurn(ctx context.Context, sessionID, holder string, ttl time.Duration, s store.TurnStart) (store.Lease, []int64, error) {
	if len(s.Messages) == 0 {
		l, err := db.AcquireLease(ctx, sessionID, holder, ttl)
		return l, nil, err
	}
	if holder == "" {
		return store.Lease{}, nil, store.Invalid("holder", "empty")
	}
	holder = store.CleanIdent(holder)
	ttlUS := int64(max(ttl, 100*time.Millisecond) / time.Microsecond)
	enc, toolCalls, err := encodeMessages(s.Messages)
	if err != nil {
		return store.Lease{}, nil, fmt.Errorf("begin turn on %s: %w", sessionID, err)
	}
	var l store.Lease
	var ids []int64
	err = db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) error {
		ids = nil
		var count int
		var closed bool
		var last int64
		err := tx.QueryRow(ctx, turnStartSQL, sessionID).Scan(&count, &closed, &last)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("session", sessionID)
		}
		if err != nil {
			return err
		}
		if l, err = db.takeLease(ctx, tx, sessionID, holder, ttlUS); err != nil {
			return err
		}
		if closed || count != s.Active || last != s.LastID {
			return nil // the history moved on: the lease alone
		}
		ids, err = appendRowsTx(ctx, tx, sessionID, enc, toolCalls)
		return err
	})
	if err != nil {
		return store.Lease{}, nil, fmt.Errorf("begin turn on %s: %w", sessionID, err)
	}
	return l, ids, nil
}
