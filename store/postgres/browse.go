package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

const defaultPageLimit = 200

// ConversationPage implements store.Transcript.
func (db *DB) ConversationPage(ctx context.Context, sessionID string, q store.PageQuery) ([]store.Message, error) {
	var vis string
	switch q.View {
	case store.ViewActive:
		vis = "m.active"
	case store.ViewDisplay:
		vis = "(m.active OR m.compacted)"
	case store.ViewAll:
		vis = "true"
	default:
		return nil, fmt.Errorf("conversation page %s: %w", sessionID, store.Invalid("view", "unknown view %d", q.View))
	}
	if q.Limit <= 0 {
		q.Limit = defaultPageLimit
	}
	if q.AfterID < 0 || q.BeforeID < 0 {
		return nil, fmt.Errorf("conversation page %s: %w", sessionID, store.Invalid("page", "negative message id"))
	}
	before := q.BeforeID
	if before == 0 {
		before = 1<<63 - 1
	}
	order := "ASC"
	if q.AfterID == 0 && q.BeforeID > 0 {
		order = "DESC"
	}
	rows, err := db.pool.Query(ctx, "SELECT "+messageCols+" FROM messages m WHERE m.session_id = $1 AND "+vis+
		" AND m.id > $2 AND m.id < $3 ORDER BY m.id "+order+" LIMIT $4", sessionID, q.AfterID, before, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("conversation page %s: %w", sessionID, err)
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Message, error) { return scanMessage(r, sessionID) })
	if err != nil {
		return nil, fmt.Errorf("conversation page %s: %w", sessionID, err)
	}
	if order == "DESC" {
		slices.Reverse(ms)
	}
	if len(ms) == 0 {
		if _, err := getSession(ctx, db.pool, sessionID); err != nil {
			return nil, fmt.Errorf("conversation page: %w", err)
		}
	}
	return ms, nil
}

// HeldLeases implements store.Leaser.
func (db *DB) HeldLeases(ctx context.Context) ([]store.HeldLease, error) {
	rows, err := db.pool.Query(ctx, `SELECT conversation_id, holder, generation, coalesce(acquired_at, 0), expires_at
		FROM turn_leases WHERE holder IS NOT NULL AND expires_at > `+nowUS+` ORDER BY acquired_at, conversation_id`)
	if err != nil {
		return nil, fmt.Errorf("held leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.HeldLease, error) {
		var l store.HeldLease
		var acquired, expires int64
		err := r.Scan(&l.ConversationID, &l.Holder, &l.Generation, &acquired, &expires)
		l.AcquiredAt, l.ExpiresAt = fromMicros(acquired), fromMicros(expires)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("held leases: %w", err)
	}
	return out, nil
}
