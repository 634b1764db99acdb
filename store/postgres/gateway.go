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

// PutRoute implements store.PlatformState.
func (db *DB) PutRoute(ctx context.Context, r store.Route) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("put route %q: %w", r.Key, err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = time.Now()
	}
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		if err := existsOr(ctx, tx, r.SessionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO routes (session_key, session_id, suspended, resume_pending, origin, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (session_key) DO UPDATE SET session_id = excluded.session_id,
			suspended = excluded.suspended, resume_pending = excluded.resume_pending, origin = excluded.origin,
			updated_at = excluded.updated_at`,
			cleanNUL(r.Key), r.SessionID, r.Suspended, r.ResumePending, nullJSON(r.Origin), micros(r.UpdatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("put route %q: %w", r.Key, err)
	}
	return nil
}

// GetRoute implements store.PlatformState.
func (db *DB) GetRoute(ctx context.Context, key string) (store.Route, error) {
	r := store.Route{Key: key}
	var origin *string
	var updated int64
	err := db.pool.QueryRow(ctx, `SELECT session_id, suspended, resume_pending, origin, updated_at
		FROM routes WHERE session_key = $1`, cleanNUL(key)).Scan(&r.SessionID, &r.Suspended, &r.ResumePending, &origin, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Route{}, notFound("route", key)
	}
	if err != nil {
		return store.Route{}, fmt.Errorf("get route %q: %w", key, err)
	}
	if origin != nil {
		r.Origin = json.RawMessage(*origin)
	}
	r.UpdatedAt = fromMicros(updated)
	return r, nil
}

// RoutesTo implements store.PlatformState.
func (db *DB) RoutesTo(ctx context.Context, sessionID string) ([]store.Route, error) {
	rows, err := db.pool.Query(ctx, `SELECT session_key, suspended, resume_pending, origin, updated_at
		FROM routes WHERE session_id = $1 ORDER BY session_key COLLATE "C"`, cleanNUL(sessionID))
	if err != nil {
		return nil, fmt.Errorf("routes to %q: %w", sessionID, err)
	}
	defer rows.Close()
	var out []store.Route
	for rows.Next() {
		r := store.Route{SessionID: sessionID}
		var origin *string
		var updated int64
		if err := rows.Scan(&r.Key, &r.Suspended, &r.ResumePending, &origin, &updated); err != nil {
			return nil, fmt.Errorf("routes to %q: %w", sessionID, err)
		}
		if origin != nil {
			r.Origin = json.RawMessage(*origin)
		}
		r.UpdatedAt = fromMicros(updated)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("routes to %q: %w", sessionID, err)
	}
	return out, nil
}

// ClaimIdempotencyKey implements store.APIState. Concurrent claims of one key meet on its primary
// key: exactly one insert wins.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, c store.IdempotencyClaim) (store.IdempotencyEntry, bool, error) {
	e := c.Entry
	if e.Key == "" {
		return store.IdempotencyEntry{}, false, fmt.Errorf("claim idempotency key: %w", store.Invalid("key", "is empty"))
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	e.Scope, e.Key, e.RequestHash = cleanNUL(e.Scope), cleanNUL(e.Key), cleanNUL(e.RequestHash)
	var got store.IdempotencyEntry
	claimed := false
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		claimed = false
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2
			AND ((status > 0 AND created_at < $3) OR (status = 0 AND created_at < $4))`,
			e.Scope, e.Key, micros(c.ExpireBefore), micros(c.StaleBefore)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE ctid IN
			(SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT 16 FOR UPDATE SKIP LOCKED)`, micros(c.ExpireBefore)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (scope, key, request_hash, status, response, created_at)
			VALUES ($1, $2, $3, 0, NULL, $4) ON CONFLICT (scope, key) DO NOTHING`, e.Scope, e.Key, e.RequestHash, micros(e.CreatedAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			claimed = true
			got = store.IdempotencyEntry{Scope: e.Scope, Key: e.Key, RequestHash: e.RequestHash, CreatedAt: fromMicros(micros(e.CreatedAt))}
			return nil
		}
		var created int64
		got = store.IdempotencyEntry{Scope: e.Scope, Key: e.Key}
		err = tx.QueryRow(ctx, `SELECT request_hash, status, response, created_at FROM idempotency_keys
			WHERE scope = $1 AND key = $2`, e.Scope, e.Key).Scan(&got.RequestHash, &got.Status, &got.Response, &created)
		if err == nil {
			got.CreatedAt = fromMicros(created)
		}
		return err
	})
	if err != nil {
		return store.IdempotencyEntry{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	return got, claimed, nil
}

// CompleteIdempotencyKey implements store.APIState.
func (db *DB) CompleteIdempotencyKey(ctx context.Context, scope, key string, status int, response []byte) error {
	if status <= 0 {
		return fmt.Errorf("complete idempotency key: %w", store.Invalid("status", "%d is not an HTTP status", status))
	}
	if response == nil {
		response = []byte{}
	}
	tag, err := db.pool.Exec(ctx, `UPDATE idempotency_keys SET status = $1, response = $2 WHERE scope = $3 AND key = $4`,
		status, response, cleanNUL(scope), cleanNUL(key))
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("complete idempotency key: %w", notFound("idempotency key", key))
	}
	return nil
}

// ReleaseIdempotencyKey implements store.APIState.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND status = 0`,
		cleanNUL(scope), cleanNUL(key)); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
