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

// AcquireNamedLease implements store.NamedLeaser.
func (db *DB) AcquireNamedLease(ctx context.Context, name, holder string, ttl time.Duration) (store.NamedLease, error) {
	if err := store.ValidateNamedLease(name, holder); err != nil {
		return store.NamedLease{}, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	var l store.NamedLease
	err := db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
		now := time.Now()
		var cur sql.NullString
		var gen int64
		var expires sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT holder, generation, expires_at FROM named_leases WHERE name = ?", name).Scan(&cur, &gen, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case cur.Valid && cur.String == holder:
			gen-- // our own lease: extended, same generation
		case store.LeaseLive(cur.String, fromMicros(expires.Int64), now):
			return &store.LeaseHeldError{Name: name, Holder: cur.String, ExpiresAt: fromMicros(expires.Int64)}
		}
		l = store.NamedLease{Name: name, Holder: holder, Generation: gen + 1, ExpiresAt: fromMicros(micros(now.Add(max(ttl, 100*time.Millisecond))))}
		_, err = tx.ExecContext(ctx, `INSERT INTO named_leases (name, holder, generation, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, generation = excluded.generation,
			acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`,
			name, holder, l.Generation, micros(now), micros(l.ExpiresAt))
		return err
	})
	if err != nil {
		return store.NamedLease{}, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return l, nil
}

// RenewNamedLease implements store.NamedLeaser.
func (db *DB) RenewNamedLease(ctx context.Context, l store.NamedLease, ttl time.Duration) (store.NamedLease, error) {
	l.ExpiresAt = fromMicros(micros(time.Now().Add(max(ttl, 100*time.Millisecond))))
	var n int64
	err := db.write(ctx, leaseBudget, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE named_leases SET expires_at = ? WHERE name = ? AND holder = ? AND generation = ?",
			micros(l.ExpiresAt), l.Name, l.Holder, l.Generation)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	switch {
	case err != nil:
		return store.NamedLease{}, fmt.Errorf("renew lease %s: %w", l.Name, err)
	case n == 0:
		return store.NamedLease{}, fmt.Errorf("renew lease %s: %w", l.Name, store.ErrLeaseLost)
	}
	return l, nil
}

// ReleaseNamedLease implements store.NamedLeaser.
func (db *DB) ReleaseNamedLease(ctx context.Context, l store.NamedLease) error {
	err := db.write(ctx, leaseBudget, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE named_leases SET holder = NULL, acquired_at = NULL, expires_at = NULL
			WHERE name = ? AND holder = ? AND generation = ?`, l.Name, l.Holder, l.Generation)
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
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO platform_watermarks (platform, bot, last_id, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (platform, bot) DO UPDATE SET last_id = excluded.last_id, updated_at = excluded.updated_at
			WHERE length(excluded.last_id) > length(platform_watermarks.last_id)
			   OR (length(excluded.last_id) = length(platform_watermarks.last_id) AND excluded.last_id > platform_watermarks.last_id)`,
			w.Platform, w.Bot, w.LastID, micros(w.UpdatedAt))
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
	found, err := db.readRow(ctx, "SELECT last_id, updated_at FROM platform_watermarks WHERE platform = ? AND bot = ?",
		[]any{platform, bot}, func(row rowScanner) error { return row.Scan(&w.LastID, &updated) })
	if err == nil && !found {
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
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		if err := existsOr(ctx, tx, r.SessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_responses (id, principal, session_id, status, message_id, created_at, record)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET principal = excluded.principal,
			session_id = excluded.session_id, status = excluded.status, message_id = excluded.message_id,
			created_at = excluded.created_at, record = excluded.record`,
			r.ID, r.Principal, r.SessionID, r.Status, r.MessageID, micros(r.CreatedAt), string(cmpJSON(r.Record)))
		if err != nil || !r.Latest {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO api_conversations (session_id, principal, latest_response, updated_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET latest_response = excluded.latest_response,
			updated_at = excluded.updated_at`, r.SessionID, r.Principal, r.ID, micros(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("put response %s: %w", r.ID, err)
	}
	return nil
}

// cmpJSON is raw, or an empty object when raw is empty.
func cmpJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
}

// GetResponse implements store.APIResponses.
func (db *DB) GetResponse(ctx context.Context, principal, id string) (store.Response, error) {
	var r store.Response
	var created int64
	var record string
	legacy := store.LegacyResponseKey(id)
	found, err := db.readRow(ctx, `SELECT id, principal, session_id, status, message_id, created_at, record FROM api_responses
		WHERE id IN (?, ?) AND principal = ? ORDER BY id = ? DESC LIMIT 1`, []any{id, legacy, principal, id}, func(row rowScanner) error {
		return row.Scan(&r.ID, &r.Principal, &r.SessionID, &r.Status, &r.MessageID, &created, &record)
	})
	if err == nil && !found {
		return store.Response{}, notFound("response", id)
	}
	if err != nil {
		return store.Response{}, fmt.Errorf("get response %s: %w", id, err)
	}
	if r.ID == legacy {
		// Recorded before the responses table: it takes its id now that a client named it.
		err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE api_responses SET id = ? WHERE id = ? AND NOT EXISTS (SELECT 1 FROM api_responses WHERE id = ?)", id, legacy, id)
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
	var id sql.NullString
	_, err := db.readRow(ctx, "SELECT latest_response FROM api_conversations WHERE session_id = ?", []any{sessionID},
		func(row rowScanner) error { return row.Scan(&id) })
	if err != nil {
		return "", fmt.Errorf("latest response of %s: %w", sessionID, err)
	}
	return id.String, nil
}

// PutConversationMeta implements store.APIResponses.
func (db *DB) PutConversationMeta(ctx context.Context, principal, sessionID string, meta json.RawMessage) error {
	if len(meta) > 0 && !json.Valid(meta) {
		return fmt.Errorf("put metadata of %s: %w", sessionID, store.Invalid("metadata", "not JSON"))
	}
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		if err := existsOr(ctx, tx, sessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_conversations (session_id, principal, metadata, updated_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET metadata = excluded.metadata,
			updated_at = excluded.updated_at`, sessionID, principal, nullJSON(meta), micros(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("put metadata of %s: %w", sessionID, err)
	}
	return nil
}

// ConversationMeta implements store.APIResponses.
func (db *DB) ConversationMeta(ctx context.Context, sessionID string) (json.RawMessage, error) {
	var meta sql.NullString
	_, err := db.readRow(ctx, "SELECT metadata FROM api_conversations WHERE session_id = ?", []any{sessionID},
		func(row rowScanner) error { return row.Scan(&meta) })
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", sessionID, err)
	}
	if !meta.Valid {
		return nil, nil
	}
	return json.RawMessage(meta.String), nil
}

// recoverResponseIDs gives the responses migrated with the digest of their id
// (store.LegacyResponseKey) their ids where other rows name them: a session's latest response
// and every response's previous_response_id.
func recoverResponseIDs(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT latest_response FROM api_conversations WHERE latest_response IS NOT NULL
		UNION SELECT json_extract(record, '$.previous_response_id') FROM api_responses
		WHERE json_extract(record, '$.previous_response_id') IS NOT NULL`)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `UPDATE api_responses SET id = ? WHERE id = ?
			AND NOT EXISTS (SELECT 1 FROM api_responses WHERE id = ?)`, id, store.LegacyResponseKey(id), id); err != nil {
			return err
		}
	}
	return nil
}
