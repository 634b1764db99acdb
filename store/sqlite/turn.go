package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/store"
)

// CommitTurn implements store.Store: one BEGIN IMMEDIATE transaction on the writer for the
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
	recs := make([]encodedRequest, len(w.Requests))
	for i, r := range w.Requests {
		if recs[i], err = encodeRequest(r); err != nil {
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
	err = db.writeGrouped(ctx, db.opts.WriteBudget, func(ctx context.Context, tx *sql.Tx) (err error) {
		ids, released = nil, false
		fence := &l // checked once, by the first part that writes
		if len(enc) > 0 {
			if ids, err = db.appendTx(ctx, tx, sessionID, enc, toolCalls, store.WriteOptions{Lease: fence}); err != nil {
				return err
			}
			fence = nil
		}
		for _, rec := range recs {
			if err := db.recordTx(ctx, tx, sessionID, rec, fence); err != nil {
				return err
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
				return notFound("session", sessionID)
			}
			if err != nil {
				return err
			}
			if err := db.checkLease(ctx, tx, root, fence); err != nil {
				return err
			}
			fence = nil
		}
		if fence != nil {
			// A patch with no fields: the fence is still checked, on the session's root.
			root, err := rootOf(ctx, cachedTx{db, tx}, sessionID)
			if err != nil {
				return err
			}
			if err := db.checkLease(ctx, tx, root, fence); err != nil {
				return err
			}
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
