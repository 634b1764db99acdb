package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

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
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		if err := existsOr(ctx, tx, r.SessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO routes (session_key, session_id, suspended, resume_pending, origin, updated_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_key) DO UPDATE SET session_id = excluded.session_id,
			suspended = excluded.suspended, resume_pending = excluded.resume_pending, origin = excluded.origin,
			updated_at = excluded.updated_at`,
			r.Key, r.SessionID, r.Suspended, r.ResumePending, nullJSON(r.Origin), micros(r.UpdatedAt))
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
	var origin sql.NullString
	var updated int64
	found, err := db.readRow(ctx, `SELECT session_id, suspended, resume_pending, origin, updated_at
		FROM routes WHERE session_key = ?`, []any{key}, func(row rowScanner) error {
		return row.Scan(&r.SessionID, &r.Suspended, &r.ResumePending, &origin, &updated)
	})
	if err == nil && !found {
		return store.Route{}, notFound("route", key)
	}
	if err != nil {
		return store.Route{}, fmt.Errorf("get route %q: %w", key, err)
	}
	if origin.Valid {
		r.Origin = json.RawMessage(origin.String)
	}
	r.UpdatedAt = fromMicros(updated)
	return r, nil
}

// RoutesTo implements store.PlatformState.
func (db *DB) RoutesTo(ctx context.Context, sessionID string) ([]store.Route, error) {
	rows, err := db.read().QueryContext(ctx, `SELECT session_key, suspended, resume_pending, origin, updated_at
		FROM routes WHERE session_id = ? ORDER BY session_key`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("routes to %q: %w", sessionID, err)
	}
	defer rows.Close()
	var out []store.Route
	for rows.Next() {
		r := store.Route{SessionID: sessionID}
		var origin sql.NullString
		var updated int64
		if err := rows.Scan(&r.Key, &r.Suspended, &r.ResumePending, &origin, &updated); err != nil {
			return nil, fmt.Errorf("routes to %q: %w", sessionID, err)
		}
		if origin.Valid {
			r.Origin = json.RawMessage(origin.String)
		}
		r.UpdatedAt = fromMicros(updated)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("routes to %q: %w", sessionID, err)
	}
	return out, nil
}
