package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

// CommitTurn implements store.Leaser: one BEGIN IMMEDIATE transaction on the writer for the
// turn's messages, its request records, its session patch and the lease's release. The fence is
// checked by the first part that writes (the writer holds SQLite's write lock for the whole
// transaction, so nobody can take the lease between the check and the commit).
func (db *DB) CommitTurn(ctx context.Context, sessionID string, l store.Lease, w store.TurnWrite) ([]int64, error) {
	if w.Empty() {
		if !w.Release {
			return nil, nil
		}
		return nil, db.ReleaseLease(ctx, l)
	}
	var enc []encodedMessage
	var toolCalls int
	var err error
	if len(w.Messages) > 0 {
		if enc, toolCalls, err = encodeMessages(w.Messages); err != nil {
			return nil, fmt.Errorf("commit turn on %s: %w", sessionID, err)
		}
	}
	recs := make([]sqlq.EncodedRequest, len(w.Requests))
	for i, r := range w.Requests {
		if recs[i], err = sqlq.EncodeRequest(db.Dialect(), sessionID, r); err != nil {
			return nil, fmt.Errorf("commit turn on %s: request %d: %w", sessionID, i, err)
		}
	}
	var sets []string
	var args []any
	if w.Patch != nil {
		if sets, args, err = patchSets(*w.Patch); err != nil {
			return nil, fmt.Errorf("commit turn on %s: %w", sessionID, err)
		}
	}
	var ids []int64
	var released bool
	merged := mergeable(w)
	err = db.writeGrouped(ctx, db.opts.WriteBudget, func(ctx context.Context, tx *sql.Tx) (err error) {
		ids, released = nil, false
		if merged {
			if ids, err = db.commitMerged(ctx, tx, sessionID, l, enc, toolCalls, recs, w.Patch); err != nil {
				return err
			}
		} else if ids, err = db.commitParts(ctx, tx, sessionID, l, enc, toolCalls, recs, sets, args); err != nil {
			return err
		}
		if w.Release {
			res, err := cachedTx{db, tx}.ExecContext(ctx, leaseReleaseSQL, l.ConversationID, l.Holder, l.Generation)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			released = n > 0
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("commit turn on %s: %w", sessionID, err)
	}
	if released {
		db.ringLease(l.ConversationID)
	}
	return ids, nil
}

// mergeable reports whether w's session-row changes fit turnSessionSQL: at most one request
// record (two added in one statement could round the cost differently than two additions) and
// a patch of the compaction state alone. That is every turn's commit.
func mergeable(w store.TurnWrite) bool {
	if len(w.Requests) > 1 {
		return false
	}
	p := w.Patch
	return p == nil || (p.Model == nil && p.Cwd == nil && p.GitBranch == nil && p.Source == nil)
}

// commitMerged is commitParts for a mergeable write: the session row's counters, usage,
// last activity, preview and compaction state change in one statement (turnSessionSQL), which
// also returns what the fence and the rotation check need, where commitParts updates the row
// once for each.
func (db *DB) commitMerged(ctx context.Context, tx *sql.Tx, sessionID string, l store.Lease, enc []encodedMessage, toolCalls int, recs []sqlq.EncodedRequest, patch *store.SessionPatch) ([]int64, error) {
	var last int64 // max(last_active, 0) leaves it as it is
	var preview sql.NullString
	if len(enc) > 0 {
		last, preview = micros(enc[len(enc)-1].m.Timestamp), firstUserText(enc)
	}
	var u store.Usage
	if len(recs) == 1 {
		u = recs[0].R.Usage
	}
	var cfg sql.NullString
	if patch != nil && patch.ModelConfig != nil {
		cfg = sql.NullString{String: string(patch.ModelConfig), Valid: true}
	}
	var root string
	var closed bool
	err := cachedTx{db, tx}.QueryRowContext(ctx, turnSessionSQL, len(enc), toolCalls, last, preview,
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.APICalls, u.CostUSD,
		cfg, sessionID).Scan(&root, &closed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("session", sessionID)
	}
	if err != nil {
		return nil, err
	}
	if closed && len(enc) > 0 {
		return nil, fmt.Errorf("session %s: %w", sessionID, store.ErrSessionClosed)
	}
	if err := db.checkLease(ctx, tx, root, store.FenceOf(&l)); err != nil {
		return nil, err
	}
	var ids []int64
	if len(enc) > 0 {
		if root != sessionID {
			if _, err := tx.ExecContext(ctx, "UPDATE sessions SET last_active = max(last_active, ?) WHERE id = ?", last, root); err != nil {
				return nil, err
			}
		}
		ids = make([]int64, 0, len(enc))
		for _, e := range enc {
			id, err := db.insertMessage(ctx, tx, sessionID, e, true, false)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		if err := db.notePending(ctx, tx, len(enc)); err != nil {
			return nil, err
		}
	}
	for i := range recs {
		if err := db.InsertRequest(ctx, cachedTx{db, tx}, &recs[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// commitParts writes each part of w with its own statements: the append, each request record,
// the patch, with the fence checked once, by the first part that writes.
func (db *DB) commitParts(ctx context.Context, tx *sql.Tx, sessionID string, l store.Lease, enc []encodedMessage, toolCalls int, recs []sqlq.EncodedRequest, sets []string, args []any) (ids []int64, err error) {
	fence := &l // checked once, by the first part that writes
	if len(enc) > 0 {
		if ids, err = db.appendTx(ctx, tx, sessionID, enc, toolCalls, store.WriteOptions{Fence: store.FenceOf(fence)}); err != nil {
			return nil, err
		}
		fence = nil
	}
	for i := range recs {
		if err := db.RecordTx(ctx, cachedTx{db, tx}, &recs[i], fence); err != nil {
			return nil, err
		}
		fence = nil
	}
	if len(sets) > 0 {
		var root string
		query := "UPDATE sessions SET " + strings.Join(sets, ", ") + " WHERE id = ? RETURNING root_id"
		// The usual patch (model_config alone) is modelConfigSetSQL, prepared; cachedTx runs
		// any other as a plain statement.
		err := cachedTx{db, tx}.QueryRowContext(ctx, query, append(append([]any(nil), args...), sessionID)...).Scan(&root)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound("session", sessionID)
		}
		if err != nil {
			return nil, err
		}
		if err := db.checkLease(ctx, tx, root, store.FenceOf(fence)); err != nil {
			return nil, err
		}
		fence = nil
	}
	if fence != nil {
		// A patch with no fields: the fence is still checked, on the session's root.
		root, err := rootOf(ctx, cachedTx{db, tx}, sessionID)
		if err != nil {
			return nil, err
		}
		if err := db.checkLease(ctx, tx, root, store.FenceOf(fence)); err != nil {
			return nil, err
		}
	}
	return ids, nil
}
