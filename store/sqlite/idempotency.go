package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

// ClaimIdempotencyKey implements store.APIState.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, c store.IdempotencyClaim) (store.IdempotencyEntry, bool, error) {
	e := c.Entry
	if e.Key == "" {
		return store.IdempotencyEntry{}, false, fmt.Errorf("claim idempotency key: %w", store.Invalid("key", "is empty"))
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	var got store.IdempotencyEntry
	claimed := false
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		claimed = false
		// Expired entries and abandoned claims of this key go first; old rows of other keys
		// are swept a few at a time, so the table does not grow without bound.
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE scope = ? AND key = ?
			AND ((status > 0 AND created_at < ?) OR (status = 0 AND created_at < ?))`,
			e.Scope, e.Key, micros(c.ExpireBefore), micros(c.StaleBefore)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN
			(SELECT rowid FROM idempotency_keys WHERE created_at < ? LIMIT 16)`, micros(c.ExpireBefore)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (scope, key, request_hash, status, response, created_at)
			VALUES (?, ?, ?, 0, NULL, ?) ON CONFLICT (scope, key) DO NOTHING`, e.Scope, e.Key, e.RequestHash, micros(e.CreatedAt))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			claimed = true
			got = store.IdempotencyEntry{Scope: e.Scope, Key: e.Key, RequestHash: e.RequestHash, CreatedAt: fromMicros(micros(e.CreatedAt))}
			return nil
		}
		var created int64
		got = store.IdempotencyEntry{Scope: e.Scope, Key: e.Key}
		err = tx.QueryRowContext(ctx, `SELECT request_hash, status, response, created_at FROM idempotency_keys
			WHERE scope = ? AND key = ?`, e.Scope, e.Key).Scan(&got.RequestHash, &got.Status, &got.Response, &created)
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
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET status = ?, response = ? WHERE scope = ? AND key = ?`,
			status, response, scope, key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("idempotency key", key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// ReleaseIdempotencyKey implements store.APIState.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND status = 0`, scope, key)
		return err
	})
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
