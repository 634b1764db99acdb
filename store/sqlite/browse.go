package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/spoolhq/spool/store"
)

// Reads the session browser needs: a window of a transcript, the leases held now, usage by day.

const defaultPageLimit = 200

// ConversationPage implements store.Transcript. Each visibility is read as its own range of the
// (session_id, active, id) index, already in id order, and the ranges are merged: one query with
// "active = 1 OR compacted = 1" would read and sort every row of the session for each page.
func (db *DB) ConversationPage(ctx context.Context, sessionID string, q store.PageQuery) ([]store.Message, error) {
	var ranges []string
	switch q.View {
	case store.ViewActive:
		ranges = []string{"m.active = 1"}
	case store.ViewDisplay:
		ranges = []string{"m.active = 1", "m.active = 0 AND m.compacted = 1"}
	case store.ViewAll:
		ranges = []string{"m.active = 1", "m.active = 0"}
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
	// The last rows before BeforeID when no AfterID is given (a window ending at a message),
	// else the first rows after AfterID; both come back in id order.
	desc := q.AfterID == 0 && q.BeforeID > 0
	order := "ASC"
	if desc {
		order = "DESC"
	}
	var ms []store.Message
	for _, vis := range ranges {
		query := "SELECT " + messageCols + " FROM messages m WHERE m.session_id = ? AND " + vis +
			" AND m.id > ? AND m.id < ? ORDER BY m.id " + order + " LIMIT ?"
		err := db.readRows(ctx, query, []any{sessionID, q.AfterID, before, q.Limit}, func(r rowScanner) error {
			var content, head string
			var calls, extra sql.NullString
			if err := r.Scan(&content, &head, &calls, &extra); err != nil {
				return err
			}
			var x *string
			if extra.Valid {
				x = &extra.String
			}
			m, err := decodeMessage(sessionID, content, head, calls.String, x)
			if err != nil {
				return err
			}
			ms = append(ms, m)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("conversation page %s: %w", sessionID, err)
		}
	}
	slices.SortFunc(ms, func(a, b store.Message) int { return cmp.Compare(a.ID, b.ID) })
	if len(ms) > q.Limit {
		if desc {
			ms = ms[len(ms)-q.Limit:]
		} else {
			ms = ms[:q.Limit]
		}
	}
	if len(ms) == 0 {
		if _, err := getSession(ctx, db.read(), sessionID); err != nil {
			return nil, fmt.Errorf("conversation page: %w", err)
		}
	}
	return ms, nil
}

// HeldLeases implements store.Leaser.
func (db *DB) HeldLeases(ctx context.Context) ([]store.HeldLease, error) {
	var out []store.HeldLease
	err := db.readRows(ctx, `SELECT conversation_id, holder, generation, coalesce(acquired_at, 0), expires_at
		FROM turn_leases WHERE holder IS NOT NULL AND expires_at > ? ORDER BY acquired_at, conversation_id`,
		[]any{micros(time.Now())}, func(r rowScanner) error {
			var l store.HeldLease
			var acquired, expires int64
			if err := r.Scan(&l.ConversationID, &l.Holder, &l.Generation, &acquired, &expires); err != nil {
				return err
			}
			l.AcquiredAt, l.ExpiresAt = fromMicros(acquired), fromMicros(expires)
			out = append(out, l)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("held leases: %w", err)
	}
	return out, nil
}
