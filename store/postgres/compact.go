package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

// ArchiveAndCompact implements store.Compactor; see store.CompactRequest for the protocol.
func (db *DB) ArchiveAndCompact(ctx context.Context, req store.CompactRequest, f store.Fence) (int, error) {
	w := store.ApplyFenced(f, nil)
	sid := req.SessionID
	if len(req.Messages) == 0 {
		return 0, fmt.Errorf("compact %s: %w", sid, store.Invalid("messages", "the compacted history is empty"))
	}
	if req.TailCount < 0 || req.TailCount > len(req.Messages) {
		return 0, fmt.Errorf("compact %s: %w", sid, store.Invalid("tail_count", "%d is outside 0..%d", req.TailCount, len(req.Messages)))
	}
	enc, _, err := encodeMessages(req.Messages)
	if err != nil {
		return 0, fmt.Errorf("compact %s: %w", sid, err)
	}
	watermark := req.Watermark
	if watermark <= 0 {
		watermark = math.MaxInt64
	}
	var active int
	err = db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) error {
		if err := checkCompressionLock(ctx, tx, sid, req.LockHolder); err != nil {
			return err
		}
		if err := checkWritable(ctx, tx, sid, w); err != nil {
			return err
		}
		if len(req.ModelConfigPatch) > 0 {
			if err := patchModelConfig(ctx, tx, sid, req.ModelConfigPatch); err != nil {
				return err
			}
		}
		tail, err := column[int64](ctx, tx, "SELECT id FROM messages WHERE session_id = $1 AND active AND id > $2 ORDER BY id", sid, watermark)
		if err != nil {
			return err
		}
		rewind, err := column[int64](ctx, tx, `SELECT id FROM messages WHERE session_id = $1 AND active AND id <= $2
			ORDER BY id DESC LIMIT $3`, sid, watermark, req.TailCount)
		if err != nil {
			return err
		}
		// The rows about to be archived that inserted messages may copy verbatim.
		sources, err := compactionSources(ctx, tx, sid, watermark, rewind, enc)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE messages SET active = false, compacted = false WHERE id = ANY($1)",
			append(rewind, tail...)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE messages SET active = false, compacted = true WHERE session_id = $1 AND active", sid); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, e := range enc {
			b.Queue(insertMessageSQL, insertArgs(sid, e, true, false)...)
		}
		br := tx.SendBatch(ctx, b)
		ids := make([]int64, len(enc))
		for i := range enc {
			if err := br.QueryRow().Scan(&ids[i]); err != nil {
				br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		if err := linkCompactionCopies(ctx, tx, sources, enc, ids); err != nil {
			return err
		}
		b = &pgx.Batch{}
		for _, id := range tail {
			b.Queue(`INSERT INTO messages (session_id, role, content, api_content,
				tool_calls, tool_call_id, tool_name, reasoning, reasoning_details, finish_reason, token_count,
				timestamp, summary, active, compacted, tsv, cjk_text)
				SELECT session_id, role, content, api_content, tool_calls, tool_call_id, tool_name, reasoning,
					reasoning_details, finish_reason, token_count, timestamp, summary, true, false, tsv, cjk_text
				FROM messages WHERE id = $1`, id)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if err := recount(ctx, tx, sid); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT message_count FROM sessions WHERE id = $1", sid).Scan(&active)
	})
	if err != nil {
		return 0, fmt.Errorf("compact %s: %w", sid, err)
	}
	return active, nil
}

// RotateCompaction implements store.Compactor.
func (db *DB) RotateCompaction(ctx context.Context, req store.RotateRequest, f store.Fence) (store.Session, error) {
	w := store.ApplyFenced(f, nil)
	pid := req.ParentID
	if len(req.Messages) == 0 {
		return store.Session{}, fmt.Errorf("rotate %s: %w", pid, store.Invalid("messages", "the handoff history is empty"))
	}
	enc, _, err := encodeMessages(req.Messages)
	if err != nil {
		return store.Session{}, fmt.Errorf("rotate %s: %w", pid, err)
	}
	parent, err := db.GetSession(ctx, pid)
	if err != nil {
		return store.Session{}, fmt.Errorf("rotate: %w", err)
	}
	child := req.Child
	child.ParentID, child.Relation = pid, store.RelationCompression
	if child.StartedAt.IsZero() {
		child.StartedAt = time.Now()
	}
	generated := child.ID == ""
	if generated {
		child.ID = store.NewChildSessionID(child.StartedAt, pid) // validated below; drawn again in the transaction
	}
	if child.Source == "" {
		child.Source = parent.Source
	}
	if child.UserID == "" && child.SessionKey == "" {
		child.UserID, child.SessionKey = parent.UserID, parent.SessionKey
	}
	if child.Model == "" {
		child.Model, child.ModelConfig = parent.Model, parent.ModelConfig
	}
	if child.Title == "" && parent.Title != "" {
		if child.Title, err = db.NextTitle(ctx, child.UserID, parent.Title); err != nil {
			return store.Session{}, fmt.Errorf("rotate %s: %w", pid, err)
		}
	}
	if err := validateNewSession(&child); err != nil {
		return store.Session{}, fmt.Errorf("rotate %s: %w", pid, err)
	}
	watermark := req.Watermark
	if watermark <= 0 {
		watermark = math.MaxInt64
	}
	err = db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) error {
		if err := checkCompressionLock(ctx, tx, pid, req.LockHolder); err != nil {
			return err
		}
		var ended *int64
		var reason string
		if err := tx.QueryRow(ctx, "SELECT ended_at, end_reason FROM sessions WHERE id = $1 FOR UPDATE", pid).Scan(&ended, &reason); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("session", pid)
			}
			return err
		}
		if err := continuable(pid, ended != nil, reason, w); err != nil {
			return err
		}
		if err := checkWritable(ctx, tx, pid, w); err != nil {
			return err
		}
		if err := createChildTx(ctx, tx, &child, generated); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, e := range enc {
			b.Queue(insertMessageSQL, insertArgs(child.ID, e, true, false)...)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if watermark != math.MaxInt64 {
			if err := copyActive(ctx, tx, pid, child.ID, watermark, -1); err != nil {
				return err
			}
		} else if err := recount(ctx, tx, child.ID); err != nil {
			return err
		}
		if err := bumpRootActivity(ctx, tx, child.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE sessions SET ended_at = $1, end_reason = $2 WHERE id = $3",
			micros(time.Now()), store.EndCompression, pid)
		return err
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("rotate %s: %w", pid, db.titleErr(ctx, err, child.UserID, child.Title))
	}
	return db.GetSession(ctx, child.ID)
}

// continuable says whether a rotation may continue a parent with this end stamp, as on SQLite:
// an automatic stamp (a process exit, an idle timeout) is replaced by the rotation's own; a
// rotated parent already has its continuation; a deliberate end means the conversation was left.
func continuable(pid string, ended bool, reason string, w store.WriteOptions) error {
	switch {
	case !ended || w.AllowClosed || store.AutomaticEnd(reason):
		return nil
	case reason == store.EndCompression:
		return fmt.Errorf("session %s was already continued by an earlier compaction: %w", pid, store.ErrSessionClosed)
	}
	return fmt.Errorf("session %s was ended (%s) and is not continued: %w", pid, reason, store.ErrSessionEnded)
}

// checkWritable locks the session's row, refuses writes to a missing or rotated session and
// enforces the lease fence.
func checkWritable(ctx context.Context, tx pgx.Tx, sid string, w store.WriteOptions) error {
	var closed bool
	var root string
	err := tx.QueryRow(ctx, "SELECT ended_at IS NOT NULL AND end_reason = 'compression', root_id FROM sessions WHERE id = $1 FOR UPDATE", sid).Scan(&closed, &root)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("session", sid)
	}
	if err != nil {
		return err
	}
	if closed && !w.AllowClosed {
		return fmt.Errorf("session %s: %w", sid, store.ErrSessionClosed)
	}
	return checkLease(ctx, tx, root, w.Fence)
}

func patchModelConfig(ctx context.Context, tx pgx.Tx, sid string, patch map[string]json.RawMessage) error {
	var raw *string
	if err := tx.QueryRow(ctx, "SELECT model_config FROM sessions WHERE id = $1", sid).Scan(&raw); err != nil {
		return err
	}
	cfg := map[string]json.RawMessage{}
	if raw != nil && *raw != "" {
		if err := json.Unmarshal([]byte(*raw), &cfg); err != nil {
			return fmt.Errorf("stored model_config of %s is not a JSON object: %w", sid, err)
		}
	}
	for k, v := range patch {
		if strings.TrimSpace(string(v)) == "null" || len(v) == 0 {
			delete(cfg, k)
			continue
		}
		if !json.Valid(v) {
			return store.Invalid("model_config."+k, "not valid JSON")
		}
		cfg[k] = v
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "UPDATE sessions SET model_config = $1 WHERE id = $2", string(b), sid)
	return err
}

// checkCompressionLock fences a compaction commit: holder must still own an unexpired lock.
func checkCompressionLock(ctx context.Context, tx pgx.Tx, sid, holder string) error {
	if holder == "" {
		return nil
	}
	var h string
	var expired bool
	err := tx.QueryRow(ctx, "SELECT holder, expires_at <= "+nowUS+" FROM compression_locks WHERE session_id = $1 FOR UPDATE", sid).Scan(&h, &expired)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("session %s: no lock row: %w", sid, store.ErrCompressionBusy)
	}
	if err != nil {
		return err
	}
	if h != holder {
		return fmt.Errorf("session %s: lock held by %s: %w", sid, h, store.ErrCompressionBusy)
	}
	if expired {
		return fmt.Errorf("session %s: lock expired: %w", sid, store.ErrCompressionBusy)
	}
	return nil
}

// AcquireCompressionLock implements store.Compactor.
func (db *DB) AcquireCompressionLock(ctx context.Context, sid, holder string, ttl time.Duration) (bool, error) {
	if holder == "" {
		return false, store.Invalid("holder", "empty")
	}
	holder = store.CleanIdent(holder)
	ttlUS := int64(max(ttl, 100*time.Millisecond) / time.Microsecond)
	var got bool
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		var cur string
		var expired bool
		err := tx.QueryRow(ctx, "SELECT holder, expires_at < "+nowUS+" FROM compression_locks WHERE session_id = $1 FOR UPDATE", sid).Scan(&cur, &expired)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case expired || (cur != holder && store.HolderProvablyDead(cur)):
			db.log.Info("spool: reclaiming stale compression lock", "session", sid, "holder", cur)
			if _, err := tx.Exec(ctx, "DELETE FROM compression_locks WHERE session_id = $1 AND holder = $2", sid, cur); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, `INSERT INTO compression_locks AS l (session_id, holder, acquired_at, expires_at)
			VALUES ($1, $2, `+nowUS+`, `+nowUS+` + $3) ON CONFLICT (session_id) DO UPDATE
			SET expires_at = CASE WHEN l.holder = excluded.holder THEN excluded.expires_at ELSE l.expires_at END
			RETURNING holder`, sid, holder, ttlUS).Scan(&cur); err != nil {
			return err
		}
		got = cur == holder
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("acquire compression lock on %s: %w", sid, err)
	}
	return got, nil
}

// RefreshCompressionLock implements store.Compactor.
func (db *DB) RefreshCompressionLock(ctx context.Context, sid, holder string, ttl time.Duration) (bool, error) {
	ttlUS := int64(max(ttl, 100*time.Millisecond) / time.Microsecond)
	tag, err := db.pool.Exec(ctx, "UPDATE compression_locks SET expires_at = "+nowUS+" + $1 WHERE session_id = $2 AND holder = $3",
		ttlUS, sid, store.CleanIdent(holder))
	if err != nil {
		return false, fmt.Errorf("refresh compression lock on %s: %w", sid, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseCompressionLock implements store.Compactor.
func (db *DB) ReleaseCompressionLock(ctx context.Context, sid, holder string) error {
	if _, err := db.pool.Exec(ctx, "DELETE FROM compression_locks WHERE session_id = $1 AND holder = $2", sid, store.CleanIdent(holder)); err != nil {
		return fmt.Errorf("release compression lock on %s: %w", sid, err)
	}
	return nil
}
