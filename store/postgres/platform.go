package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
	r.Key = cleanNUL(r.Key)
	claimed := false
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		claimed = false
		if err := existsOr(ctx, tx, r.SessionID); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `INSERT INTO routes (session_key, session_id, suspended, resume_pending, origin, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (session_key) DO NOTHING`,
			r.Key, r.SessionID, r.Suspended, r.ResumePending, nullJSON(r.Origin), micros(r.UpdatedAt))
		if err != nil {
			return err
		}
		claimed = res.RowsAffected() == 1
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
	var payload *string
	var state string
	var claimed, received, updated int64
	if err := sc.Scan(&e.Platform, &e.EventID, &e.SessionKey, &payload, &state, &e.SessionID, &e.Reply, &e.Holder, &claimed, &received, &updated); err != nil {
		return e, err
	}
	if payload != nil {
		e.Payload = json.RawMessage(*payload)
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
	e.Platform, e.EventID, e.SessionKey = cleanNUL(e.Platform), cleanNUL(e.EventID), cleanNUL(e.SessionKey)
	now := time.Now()
	if e.ReceivedAt.IsZero() {
		e.ReceivedAt = now
	}
	e.State, e.SessionID, e.Reply, e.UpdatedAt = store.InboundPending, "", "", now
	var got store.InboundEvent
	inserted := false
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		inserted = false
		cutoff := micros(now.Add(-store.InboundRetention))
		if _, err := tx.Exec(ctx, `DELETE FROM platform_sends WHERE ctid IN
			(SELECT ctid FROM platform_sends WHERE updated_at < $1 LIMIT 32 FOR UPDATE SKIP LOCKED)`, cutoff); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM platform_inbox WHERE ctid IN
			(SELECT ctid FROM platform_inbox WHERE state = 'done' AND updated_at < $1 LIMIT 16 FOR UPDATE SKIP LOCKED)`, cutoff); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `INSERT INTO platform_inbox (`+inboxCols+`)
			VALUES ($1, $2, $3, $4, $5, '', '', $6, $7, $8, $9) ON CONFLICT (platform, event_id) DO NOTHING`,
			e.Platform, e.EventID, e.SessionKey, nullJSON(e.Payload), string(e.State), e.Holder, claimMicros(e.ClaimedUntil),
			micros(e.ReceivedAt), micros(now))
		if err != nil {
			return err
		}
		if res.RowsAffected() == 1 {
			inserted = true
			return nil
		}
		got, err = scanInbound(tx.QueryRow(ctx, `SELECT `+inboxCols+` FROM platform_inbox WHERE platform = $1 AND event_id = $2`,
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
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		claimed = false
		var err error
		got, err = scanInbound(tx.QueryRow(ctx, `SELECT `+inboxCols+` FROM platform_inbox WHERE platform = $1 AND event_id = $2 FOR UPDATE`,
			platform, eventID))
		if errors.Is(err, pgx.ErrNoRows) {
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
		if _, err := tx.Exec(ctx, `UPDATE platform_inbox SET holder = $1, claimed_until = $2, updated_at = $3
			WHERE platform = $4 AND event_id = $5`, holder, micros(until), micros(now), platform, eventID); err != nil {
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
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		var holder string
		err := tx.QueryRow(ctx, `SELECT holder FROM platform_inbox WHERE platform = $1 AND event_id = $2 FOR UPDATE`, u.Platform, u.EventID).Scan(&holder)
		if errors.Is(err, pgx.ErrNoRows) {
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
		_, err = tx.Exec(ctx, `UPDATE platform_inbox SET state = CASE WHEN $1 = '' THEN state ELSE $1 END, session_id = CASE WHEN $2 = '' THEN session_id ELSE $3 END,
			reply = CASE WHEN $4 = '' THEN reply ELSE $5 END, holder = $6, claimed_until = `+until+`, updated_at = $7
			WHERE platform = $8 AND event_id = $9`,
			string(u.State), u.SessionID, u.SessionID, cleanNUL(u.Reply), cleanNUL(u.Reply), newHolder, micros(time.Now()), u.Platform, u.EventID)
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
	rows, err := db.pool.Query(ctx, `SELECT `+inboxCols+` FROM platform_inbox
		WHERE platform = $1 AND state <> 'done' ORDER BY received_at, event_id LIMIT $2`, platform, limit)
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
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO platform_sends (turn_id, chunk, message_id, text_hash, updated_at) VALUES ($1, $2, $3, $4, $5)
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
	rows, err := db.pool.Query(ctx, `SELECT turn_id, chunk, message_id, text_hash, updated_at FROM platform_sends
		WHERE turn_id = $1 ORDER BY chunk`, turnID)
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
	c.Platform, c.Bot, c.Channel = cleanNUL(c.Platform), cleanNUL(c.Bot), cleanNUL(c.Channel)
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO platform_cursors (platform, bot, channel, last_id, updated_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (platform, bot, channel) DO UPDATE SET last_id = excluded.last_id, updated_at = excluded.updated_at
			WHERE length(excluded.last_id) > length(platform_cursors.last_id)
			   OR (length(excluded.last_id) = length(platform_cursors.last_id) AND excluded.last_id COLLATE "C" > platform_cursors.last_id COLLATE "C")`,
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
	rows, err := db.pool.Query(ctx, `SELECT platform, bot, channel, last_id, updated_at FROM platform_cursors
		WHERE platform = $1 AND bot = $2 ORDER BY updated_at DESC, channel`, cleanNUL(platform), cleanNUL(bot))
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
