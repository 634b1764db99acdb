package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

// ClaimRoute implements store.PlatformState.
func (db *DB) ClaimRoute(ctx context.Context, r store.Route) (store.Route, bool, error) {
	if err := r.Validate(); err != nil {
		return store.Route{}, false, fmt.Errorf("claim route %q: %w", r.Key, err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = time.Now()
	}
	claimed := false
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		claimed = false
		if err := existsOr(ctx, tx, r.SessionID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO routes (session_key, session_id, suspended, resume_pending, origin, updated_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_key) DO NOTHING`,
			r.Key, r.SessionID, r.Suspended, r.ResumePending, nullJSON(r.Origin), micros(r.UpdatedAt))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		claimed = n == 1
		return nil
	})
	if err != nil {
		return store.Route{}, false, fmt.Errorf("claim route %q: %w", r.Key, err)
	}
	if claimed {
		r.UpdatedAt = fromMicros(micros(r.UpdatedAt))
		return r, true, nil
	}
	got, err := db.GetRoute(ctx, r.Key)
	return got, false, err
}

const inboxCols = `platform, event_id, session_key, payload, state, session_id, reply, holder, claimed_until, received_at, updated_at`

func scanInbound(sc interface{ Scan(...any) error }) (store.InboundEvent, error) {
	var e store.InboundEvent
	var payload sql.NullString
	var state string
	var claimed, received, updated int64
	if err := sc.Scan(&e.Platform, &e.EventID, &e.SessionKey, &payload, &state, &e.SessionID, &e.Reply, &e.Holder, &claimed, &received, &updated); err != nil {
		return e, err
	}
	if payload.Valid {
		e.Payload = json.RawMessage(payload.String)
	}
	e.State = store.InboundState(state)
	if claimed > 0 {
		e.ClaimedUntil = fromMicros(claimed)
	}
	e.ReceivedAt, e.UpdatedAt = fromMicros(received), fromMicros(updated)
	return e, nil
}

// RecordInbound implements store.PlatformState.
func (db *DB) RecordInbound(ctx context.Context, e store.InboundEvent) (store.InboundEvent, bool, error) {
	if err := e.Validate(); err != nil {
		return store.InboundEvent{}, false, fmt.Errorf("record inbound event: %w", err)
	}
	now := time.Now()
	if e.ReceivedAt.IsZero() {
		e.ReceivedAt = now
	}
	e.State, e.SessionID, e.Reply, e.UpdatedAt = store.InboundPending, "", "", now
	var got store.InboundEvent
	inserted := false
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		inserted = false
		cutoff := micros(now.Add(-store.InboundRetention))
		if _, err := tx.ExecContext(ctx, `DELETE FROM platform_sends WHERE rowid IN
			(SELECT rowid FROM platform_sends WHERE updated_at < ? LIMIT 32)`, cutoff); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM platform_inbox WHERE rowid IN
			(SELECT rowid FROM platform_inbox WHERE state = 'done' AND updated_at < ? LIMIT 16)`, cutoff); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO platform_inbox (`+inboxCols+`)
			VALUES (?, ?, ?, ?, ?, '', '', ?, ?, ?, ?) ON CONFLICT (platform, event_id) DO NOTHING`,
			e.Platform, e.EventID, e.SessionKey, nullJSON(e.Payload), string(e.State), e.Holder, claimMicros(e.ClaimedUntil),
			micros(e.ReceivedAt), micros(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			inserted = true
			return nil
		}
		got, err = scanInbound(tx.QueryRowContext(ctx, `SELECT `+inboxCols+` FROM platform_inbox WHERE platform = ? AND event_id = ?`,
			e.Platform, e.EventID))
		return err
	})
	if err != nil {
		return store.InboundEvent{}, false, fmt.Errorf("record inbound event %s/%s: %w", e.Platform, e.EventID, err)
	}
	if inserted {
		e.ReceivedAt, e.UpdatedAt = fromMicros(micros(e.ReceivedAt)), fromMicros(micros(now))
		if !e.ClaimedUntil.IsZero() {
			e.ClaimedUntil = fromMicros(micros(e.ClaimedUntil))
		}
		return e, true, nil
	}
	return got, false, nil
}

func claimMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

// ClaimInbound implements store.PlatformState.
func (db *DB) ClaimInbound(ctx context.Context, platform, eventID, holder string, ttl time.Duration) (store.InboundEvent, bool, error) {
	if holder == "" {
		return store.InboundEvent{}, false, fmt.Errorf("claim inbound event: %w", store.Invalid("holder", "empty"))
	}
	var got store.InboundEvent
	claimed := false
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		claimed = false
		var err error
		got, err = scanInbound(tx.QueryRowContext(ctx, `SELECT `+inboxCols+` FROM platform_inbox WHERE platform = ? AND event_id = ?`,
			platform, eventID))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("inbound event", platform+"/"+eventID)
		}
		if err != nil {
			return err
		}
		now := time.Now()
		free := got.Holder == "" || got.Holder == holder || got.ClaimedUntil.Before(now) || store.HolderProvablyDead(got.Holder)
		if got.State == store.InboundDone || !free {
			return nil
		}
		until := now.Add(ttl)
		if _, err := tx.ExecContext(ctx, `UPDATE platform_inbox SET holder = ?, claimed_until = ?, updated_at = ?
			WHERE platform = ? AND event_id = ?`, holder, micros(until), micros(now), platform, eventID); err != nil {
			return err
		}
		got.Holder, got.ClaimedUntil, got.UpdatedAt = holder, fromMicros(micros(until)), fromMicros(micros(now))
		claimed = true
		return nil
	})
	if err != nil {
		return store.InboundEvent{}, false, fmt.Errorf("claim inbound event %s/%s: %w", platform, eventID, err)
	}
	return got, claimed, nil
}

// UpdateInbound implements store.PlatformState.
func (db *DB) UpdateInbound(ctx context.Context, u store.InboundUpdate) error {
	if !u.State.Valid() && !(u.Release && u.State == "") {
		return fmt.Errorf("update inbound event: %w", store.Invalid("state", "%q is not a state", u.State))
	}
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		var holder string
		err := tx.QueryRowContext(ctx, `SELECT holder FROM platform_inbox WHERE platform = ? AND event_id = ?`, u.Platform, u.EventID).Scan(&holder)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("inbound event", u.Platform+"/"+u.EventID)
		}
		if err != nil {
			return err
		}
		if holder != u.Holder {
			return fmt.Errorf("held by %s: %w", holder, store.ErrLeaseLost)
		}
		newHolder, until := holder, "claimed_until"
		if u.State == store.InboundDone || u.Release {
			newHolder, until = "", "0"
		}
		_, err = tx.ExecContext(ctx, `UPDATE platform_inbox SET state = CASE WHEN ? = '' THEN state ELSE ? END, session_id = CASE WHEN ? = '' THEN session_id ELSE ? END,
			reply = CASE WHEN ? = '' THEN reply ELSE ? END, holder = ?, claimed_until = `+until+`, updated_at = ?
			WHERE platform = ? AND event_id = ?`,
			string(u.State), string(u.State), u.SessionID, u.SessionID, u.Reply, u.Reply, newHolder, micros(time.Now()), u.Platform, u.EventID)
		return err
	})
	if err != nil {
		return fmt.Errorf("update inbound event %s/%s: %w", u.Platform, u.EventID, err)
	}
	return nil
}

// UnfinishedInbound implements store.PlatformState.
func (db *DB) UnfinishedInbound(ctx context.Context, platform string, limit int) ([]store.InboundEvent, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.read().QueryContext(ctx, `SELECT `+inboxCols+` FROM platform_inbox
		WHERE platform = ? AND state <> 'done' ORDER BY received_at, event_id LIMIT ?`, platform, limit)
	if err != nil {
		return nil, fmt.Errorf("list unfinished inbound events: %w", err)
	}
	defer rows.Close()
	var out []store.InboundEvent
	for rows.Next() {
		e, err := scanInbound(rows)
		if err != nil {
			return nil, fmt.Errorf("list unfinished inbound events: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list unfinished inbound events: %w", err)
	}
	return out, nil
}

// PutSend implements store.PlatformState.
func (db *DB) PutSend(ctx context.Context, e store.SendEntry) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("put send entry: %w", err)
	}
	if e.UpdatedAt.IsZero() {
		e.UpdatedAt = time.Now()
	}
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO platform_sends (turn_id, chunk, message_id, text_hash, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (turn_id, chunk) DO UPDATE SET message_id = excluded.message_id, text_hash = excluded.text_hash,
			updated_at = excluded.updated_at`, e.TurnID, e.Chunk, e.MessageID, e.TextHash, micros(e.UpdatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("put send entry %s/%d: %w", e.TurnID, e.Chunk, err)
	}
	return nil
}

// Sends implements store.PlatformState.
func (db *DB) Sends(ctx context.Context, turnID string) ([]store.SendEntry, error) {
	rows, err := db.read().QueryContext(ctx, `SELECT turn_id, chunk, message_id, text_hash, updated_at FROM platform_sends
		WHERE turn_id = ? ORDER BY chunk`, turnID)
	if err != nil {
		return nil, fmt.Errorf("list sends of %s: %w", turnID, err)
	}
	defer rows.Close()
	var out []store.SendEntry
	for rows.Next() {
		var e store.SendEntry
		var updated int64
		if err := rows.Scan(&e.TurnID, &e.Chunk, &e.MessageID, &e.TextHash, &updated); err != nil {
			return nil, fmt.Errorf("list sends of %s: %w", turnID, err)
		}
		e.UpdatedAt = fromMicros(updated)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sends of %s: %w", turnID, err)
	}
	return out, nil
}

// AdvanceReadCursor implements store.PlatformState.
func (db *DB) AdvanceReadCursor(ctx context.Context, c store.ReadCursor) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("advance read cursor: %w", err)
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = time.Now()
	}
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO platform_cursors (platform, bot, channel, last_id, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (platform, bot, channel) DO UPDATE SET last_id = excluded.last_id, updated_at = excluded.updated_at
			WHERE length(excluded.last_id) > length(platform_cursors.last_id)
			   OR (length(excluded.last_id) = length(platform_cursors.last_id) AND excluded.last_id > platform_cursors.last_id)`,
			c.Platform, c.Bot, c.Channel, c.LastID, micros(c.UpdatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("advance read cursor %s/%s: %w", c.Platform, c.Channel, err)
	}
	return nil
}

// ReadCursors implements store.PlatformState.
func (db *DB) ReadCursors(ctx context.Context, platform, bot string) ([]store.ReadCursor, error) {
	rows, err := db.read().QueryContext(ctx, `SELECT platform, bot, channel, last_id, updated_at FROM platform_cursors
		WHERE platform = ? AND bot = ? ORDER BY updated_at DESC, channel`, platform, bot)
	if err != nil {
		return nil, fmt.Errorf("list read cursors of %s: %w", platform, err)
	}
	defer rows.Close()
	var out []store.ReadCursor
	for rows.Next() {
		var c store.ReadCursor
		var updated int64
		if err := rows.Scan(&c.Platform, &c.Bot, &c.Channel, &c.LastID, &updated); err != nil {
			return nil, fmt.Errorf("list read cursors of %s: %w", platform, err)
		}
		c.UpdatedAt = fromMicros(updated)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list read cursors of %s: %w", platform, err)
	}
	return out, nil
}
