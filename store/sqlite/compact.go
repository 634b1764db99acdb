package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

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
	err = db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
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
		tail, err := column[int64](ctx, tx, "SELECT id FROM messages WHERE session_id = ? AND active = 1 AND id > ? ORDER BY id", sid, watermark)
		if err != nil {
			return err
		}
		rewind, err := column[int64](ctx, tx, `SELECT id FROM messages WHERE session_id = ? AND active = 1 AND id <= ?
			ORDER BY id DESC LIMIT ?`, sid, watermark, req.TailCount)
		if err != nil {
			return err
		}
		// The rows about to be archived that inserted messages may copy verbatim (read while
		// they are still active).
		sources, err := compactionSources(ctx, tx, sid, watermark, rewind, enc)
		if err != nil {
			return err
		}
		// Superseded rows are hidden; everything else that was active is archived (searchable).
		for _, id := range append(rewind, tail...) {
			if _, err := tx.ExecContext(ctx, "UPDATE messages SET active = 0, compacted = 0 WHERE id = ?", id); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND active = 1", sid); err != nil {
			return err
		}
		ids := make([]int64, len(enc))
		for i, e := range enc {
			if ids[i], err = db.insertMessage(ctx, tx, sid, e, true, false); err != nil {
				return err
			}
		}
		if err := linkCompactionCopies(ctx, tx, sources, enc, ids); err != nil {
			return err
		}
		// Messages appended during the summary call follow the compacted set, in order.
		for _, id := range tail {
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (session_id, role, content, api_content,
				tool_calls, tool_call_id, tool_name, reasoning, reasoning_details, finish_reason, token_count,
				timestamp, summary, active, compacted, cjk, call_text, stem_text)
				SELECT session_id, role, content, api_content, tool_calls, tool_call_id, tool_name, reasoning,
					reasoning_details, finish_reason, token_count, timestamp, summary, 1, 0, cjk, call_text, stem_text
				FROM messages WHERE id = ?`, id); err != nil {
				return err
			}
		}
		if err := recount(ctx, tx, sid); err != nil {
			return err
		}
		if err := db.indexNow(ctx, tx); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT message_count FROM sessions WHERE id = ?", sid).Scan(&active)
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
	if err := store.ValidateNewSession(&child); err != nil {
		return store.Session{}, fmt.Errorf("rotate %s: %w", pid, err)
	}
	watermark := req.Watermark
	if watermark <= 0 {
		watermark = math.MaxInt64
	}
	err = db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
		if err := checkCompressionLock(ctx, tx, pid, req.LockHolder); err != nil {
			return err
		}
		var ended sql.NullInt64
		var reason string
		if err := tx.QueryRowContext(ctx, "SELECT ended_at, end_reason FROM sessions WHERE id = ?", pid).Scan(&ended, &reason); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("session", pid)
			}
			return err
		}
		if err := continuable(pid, ended.Valid, reason, w); err != nil {
			return err
		}
		if err := checkWritable(ctx, tx, pid, w); err != nil {
			return err
		}
		if err := createChildTx(ctx, tx, &child, generated); err != nil {
			return err
		}
		for _, e := range enc {
			if _, err := db.insertMessage(ctx, tx, child.ID, e, true, false); err != nil {
				return err
			}
		}
		if watermark != math.MaxInt64 {
			if err := copyActive(ctx, tx, pid, child.ID, watermark, -1); err != nil {
				return err
			}
		} else if err := recount(ctx, tx, child.ID); err != nil {
			return err
		}
		if err := bumpRoot(ctx, tx, child.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
			micros(time.Now()), store.EndCompression, pid); err != nil {
			return err
		}
		return db.indexNow(ctx, tx)
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("rotate %s: %w", pid, err)
	}
	return db.GetSession(ctx, child.ID)
}

// continuable says whether a rotation may continue a parent with this end stamp. An automatic
// stamp (a process exit, an idle timeout) only records that a process stopped: the rotation
// replaces it with its own. A rotated parent already has its continuation, and a deliberate end
// (a reset, /new) means the conversation was left on purpose.
func continuable(pid string, ended bool, reason string, w store.WriteOptions) error {
	switch {
	case !ended || w.AllowClosed || store.AutomaticEnd(reason):
		return nil
	case reason == store.EndCompression:
		return fmt.Errorf("session %s was already continued by an earlier compaction: %w", pid, store.ErrSessionClosed)
	}
	return fmt.Errorf("session %s was ended (%s) and is not continued: %w", pid, reason, store.ErrSessionEnded)
}

// checkWritable refuses writes to a missing or rotated session and enforces the lease fence.
func checkWritable(ctx context.Context, tx *sql.Tx, sid string, w store.WriteOptions) error {
	var closed bool
	var root string
	err := tx.QueryRowContext(ctx, "SELECT ended_at IS NOT NULL AND end_reason = 'compression', root_id FROM sessions WHERE id = ?", sid).Scan(&closed, &root)
	if errors.Is(err, sql.ErrNoRows) {
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

func patchModelConfig(ctx context.Context, tx *sql.Tx, sid string, patch map[string]json.RawMessage) error {
	var raw sql.NullString
	if err := tx.QueryRowContext(ctx, "SELECT model_config FROM sessions WHERE id = ?", sid).Scan(&raw); err != nil {
		return err
	}
	cfg := map[string]json.RawMessage{}
	if raw.Valid && raw.String != "" {
		if err := json.Unmarshal([]byte(raw.String), &cfg); err != nil {
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
	_, err = tx.ExecContext(ctx, "UPDATE sessions SET model_config = ? WHERE id = ?", string(b), sid)
	return err
}

// checkCompressionLock fences a compaction commit: holder must still own an unexpired lock.
func checkCompressionLock(ctx context.Context, tx *sql.Tx, sid, holder string) error {
	if holder == "" {
		return nil
	}
	var h string
	var expires int64
	err := tx.QueryRowContext(ctx, "SELECT holder, expires_at FROM compression_locks WHERE session_id = ?", sid).Scan(&h, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("session %s: no lock row: %w", sid, store.ErrCompressionBusy)
	}
	if err != nil {
		return err
	}
	if h != holder {
		return fmt.Errorf("session %s: lock held by %s: %w", sid, h, store.ErrCompressionBusy)
	}
	if expires <= micros(time.Now()) {
		return fmt.Errorf("session %s: lock expired: %w", sid, store.ErrCompressionBusy)
	}
	return nil
}

// AcquireCompressionLock implements store.Compactor.
func (db *DB) AcquireCompressionLock(ctx context.Context, sid, holder string, ttl time.Duration) (bool, error) {
	if holder == "" {
		return false, store.Invalid("holder", "empty")
	}
	ttl = max(ttl, 100*time.Millisecond)
	var got bool
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		now := time.Now()
		var cur string
		var expires int64
		err := tx.QueryRowContext(ctx, "SELECT holder, expires_at FROM compression_locks WHERE session_id = ?", sid).Scan(&cur, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case expires < micros(now) || (cur != holder && store.HolderProvablyDead(cur)):
			db.log.Info("spool: reclaiming stale compression lock", "session", sid, "holder", cur)
			if _, err := tx.ExecContext(ctx, "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", sid, cur); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO compression_locks (session_id, holder, acquired_at, expires_at)
			VALUES (?, ?, ?, ?)`, sid, holder, micros(now), micros(now.Add(ttl))); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT holder FROM compression_locks WHERE session_id = ?", sid).Scan(&cur); err != nil {
			return err
		}
		got = cur == holder
		if got {
			// Re-acquiring our own lock extends it.
			_, err = tx.ExecContext(ctx, "UPDATE compression_locks SET expires_at = ? WHERE session_id = ?", micros(now.Add(ttl)), sid)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("acquire compression lock on %s: %w", sid, err)
	}
	return got, nil
}

// RefreshCompressionLock implements store.Compactor.
func (db *DB) RefreshCompressionLock(ctx context.Context, sid, holder string, ttl time.Duration) (bool, error) {
	ttl = max(ttl, 100*time.Millisecond)
	var ok bool
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE compression_locks SET expires_at = ? WHERE session_id = ? AND holder = ?",
			micros(time.Now().Add(ttl)), sid, holder)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("refresh compression lock on %s: %w", sid, err)
	}
	return ok, nil
}

// ReleaseCompressionLock implements store.Compactor.
func (db *DB) ReleaseCompressionLock(ctx context.Context, sid, holder string) error {
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", sid, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("release compression lock on %s: %w", sid, err)
	}
	return nil
}
