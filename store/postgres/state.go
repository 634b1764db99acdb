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

// AcquireNamedLease implements store.NamedLeaser. The row is made first and then locked, so
// two replicas acquiring a new name at once are serialized on it; time is the server's.
func (db *DB) AcquireNamedLease(ctx context.Context, name, holder string, ttl time.Duration) (store.NamedLease, error) {
	if err := store.ValidateNamedLease(name, holder); err != nil {
		return store.NamedLease{}, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	name, holder = cleanNUL(name), store.CleanIdent(holder)
	ttlUS := int64(max(ttl, 100*time.Millisecond) / time.Microsecond)
	var l store.NamedLease
	err := db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO named_leases (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", name); err != nil {
			return err
		}
		var cur *string
		var gen, now int64
		var expires *int64
		err := tx.QueryRow(ctx, "SELECT holder, generation, expires_at, "+nowUS+" FROM named_leases WHERE name = $1 FOR UPDATE",
			name).Scan(&cur, &gen, &expires, &now)
		if err != nil {
			return err
		}
		switch {
		case cur != nil && *cur == holder:
			gen-- // our own lease: extended, same generation
		case cur != nil && expires != nil && store.LeaseLive(*cur, fromMicros(*expires), fromMicros(now)):
			return &store.LeaseHeldError{Name: name, Holder: *cur, ExpiresAt: fromMicros(*expires)}
		}
		l = store.NamedLease{Name: name, Holder: holder, Generation: gen + 1, ExpiresAt: fromMicros(now + ttlUS)}
		_, err = tx.Exec(ctx, "UPDATE named_leases SET holder = $2, generation = $3, acquired_at = $4, expires_at = $5 WHERE name = $1",
			name, holder, l.Generation, now, now+ttlUS)
		return err
	})
	if err != nil {
		return store.NamedLease{}, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return l, nil
}

// RenewNamedLease implements store.NamedLeaser.
func (db *DB) RenewNamedLease(ctx context.Context, l store.NamedLease, ttl time.Duration) (store.NamedLease, error) {
	ttlUS := int64(max(ttl, 100*time.Millisecond) / time.Microsecond)
	var exp int64
	err := db.write(ctx, leaseBudget, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `UPDATE named_leases SET expires_at = `+nowUS+` + $4
			WHERE name = $1 AND holder = $2 AND generation = $3 RETURNING expires_at`,
			cleanNUL(l.Name), store.CleanIdent(l.Holder), l.Generation, ttlUS).Scan(&exp)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.NamedLease{}, fmt.Errorf("renew lease %s: %w", l.Name, store.ErrLeaseLost)
	case err != nil:
		return store.NamedLease{}, fmt.Errorf("renew lease %s: %w", l.Name, err)
	}
	l.ExpiresAt = fromMicros(exp)
	return l, nil
}

// ReleaseNamedLease implements store.NamedLeaser.
func (db *DB) ReleaseNamedLease(ctx context.Context, l store.NamedLease) error {
	err := db.write(ctx, leaseBudget, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE named_leases SET holder = NULL, acquired_at = NULL, expires_at = NULL
			WHERE name = $1 AND holder = $2 AND generation = $3`, cleanNUL(l.Name), store.CleanIdent(l.Holder), l.Generation)
		return err
	})
	if err != nil {
		return fmt.Errorf("release lease %s: %w", l.Name, err)
	}
	return nil
}

// AdvanceWatermark implements store.Watermarks.
func (db *DB) AdvanceWatermark(ctx context.Context, w store.Watermark) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("advance watermark: %w", err)
	}
	if w.UpdatedAt.IsZero() {
		w.UpdatedAt = time.Now()
	}
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO platform_watermarks (platform, bot, last_id, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (platform, bot) DO UPDATE SET last_id = excluded.last_id, updated_at = excluded.updated_at
			WHERE length(excluded.last_id) > length(platform_watermarks.last_id)
			   OR (length(excluded.last_id) = length(platform_watermarks.last_id) AND excluded.last_id COLLATE "C" > platform_watermarks.last_id COLLATE "C")`,
			cleanNUL(w.Platform), cleanNUL(w.Bot), w.LastID, micros(w.UpdatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("advance watermark of %s/%s: %w", w.Platform, w.Bot, err)
	}
	return nil
}

// Watermark implements store.Watermarks.
func (db *DB) Watermark(ctx context.Context, platform, bot string) (store.Watermark, error) {
	w := store.Watermark{Platform: platform, Bot: bot}
	var updated int64
	err := db.pool.QueryRow(ctx, "SELECT last_id, updated_at FROM platform_watermarks WHERE platform = $1 AND bot = $2",
		cleanNUL(platform), cleanNUL(bot)).Scan(&w.LastID, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Watermark{}, notFound("watermark", platform+"/"+bot)
	}
	if err != nil {
		return store.Watermark{}, fmt.Errorf("watermark of %s/%s: %w", platform, bot, err)
	}
	w.UpdatedAt = fromMicros(updated)
	return w, nil
}

// PutResponse implements store.APIResponses.
func (db *DB) PutResponse(ctx context.Context, r store.Response) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("put response %s: %w", r.ID, err)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	record := "{}"
	if len(r.Record) > 0 {
		record = cleanNUL(string(r.Record))
	}
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		if err := existsOr(ctx, tx, r.SessionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO api_responses (id, principal, session_id, status, message_id, created_at, record)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET principal = excluded.principal,
			session_id = excluded.session_id, status = excluded.status, message_id = excluded.message_id,
			created_at = excluded.created_at, record = excluded.record`,
			cleanNUL(r.ID), cleanNUL(r.Principal), r.SessionID, cleanNUL(r.Status), r.MessageID, micros(r.CreatedAt), record)
		if err != nil || !r.Latest {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO api_conversations (session_id, principal, latest_response, updated_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT (session_id) DO UPDATE SET latest_response = excluded.latest_response,
			updated_at = excluded.updated_at`, r.SessionID, cleanNUL(r.Principal), cleanNUL(r.ID), micros(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("put response %s: %w", r.ID, err)
	}
	return nil
}

// GetResponse implements store.APIResponses.
func (db *DB) GetResponse(ctx context.Context, principal, id string) (store.Response, error) {
	var r store.Response
	var created int64
	var record string
	id, legacy := cleanNUL(id), store.LegacyResponseKey(id)
	err := db.pool.QueryRow(ctx, `SELECT id, principal, session_id, status, message_id, created_at, record FROM api_responses
		WHERE id IN ($1, $2) AND principal = $3 ORDER BY id = $1 DESC LIMIT 1`, id, legacy, cleanNUL(principal)).Scan(
		&r.ID, &r.Principal, &r.SessionID, &r.Status, &r.MessageID, &created, &record)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Response{}, notFound("response", id)
	}
	if err != nil {
		return store.Response{}, fmt.Errorf("get response %s: %w", id, err)
	}
	if r.ID == legacy {
		// Recorded before the responses table: it takes its id now that a client named it.
		err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE api_responses SET id = $1 WHERE id = $2
				AND NOT EXISTS (SELECT 1 FROM api_responses WHERE id = $1)`, id, legacy)
			return err
		})
		if err != nil {
			return store.Response{}, fmt.Errorf("get response %s: %w", id, err)
		}
		r.ID = id
	}
	r.CreatedAt, r.Record = fromMicros(created), json.RawMessage(record)
	return r, nil
}

// LatestResponse implements store.APIResponses.
func (db *DB) LatestResponse(ctx context.Context, sessionID string) (string, error) {
	var id *string
	err := db.pool.QueryRow(ctx, "SELECT latest_response FROM api_conversations WHERE session_id = $1", cleanNUL(sessionID)).Scan(&id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("latest response of %s: %w", sessionID, err)
	}
	if id == nil {
		return "", nil
	}
	return *id, nil
}

// PutConversationMeta implements store.APIResponses.
func (db *DB) PutConversationMeta(ctx context.Context, principal, sessionID string, meta json.RawMessage) error {
	if len(meta) > 0 && !json.Valid(meta) {
		return fmt.Errorf("put metadata of %s: %w", sessionID, store.Invalid("metadata", "not JSON"))
	}
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		if err := existsOr(ctx, tx, sessionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO api_conversations (session_id, principal, metadata, updated_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT (session_id) DO UPDATE SET metadata = excluded.metadata,
			updated_at = excluded.updated_at`, sessionID, cleanNUL(principal), nullJSON(meta), micros(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("put metadata of %s: %w", sessionID, err)
	}
	return nil
}

// ConversationMeta implements store.APIResponses.
func (db *DB) ConversationMeta(ctx context.Context, sessionID string) (json.RawMessage, error) {
	var meta *string
	err := db.pool.QueryRow(ctx, "SELECT metadata FROM api_conversations WHERE session_id = $1", cleanNUL(sessionID)).Scan(&meta)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("metadata of %s: %w", sessionID, err)
	}
	if meta == nil {
		return nil, nil
	}
	return json.RawMessage(*meta), nil
}

// recoverResponseIDs gives the responses migrated with the digest of their id
// (store.LegacyResponseKey) their ids where other rows name them: a session's latest response
// and every response's previous_response_id.
func recoverResponseIDs(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT latest_response FROM api_conversations WHERE latest_response IS NOT NULL
		UNION SELECT record::json ->> 'previous_response_id' FROM api_responses
		WHERE record::json ->> 'previous_response_id' IS NOT NULL`)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.Exec(ctx, `UPDATE api_responses SET id = $1 WHERE id = $2
			AND NOT EXISTS (SELECT 1 FROM api_responses WHERE id = $1)`, id, store.LegacyResponseKey(id)); err != nil {
			return err
		}
	}
	return nil
}
