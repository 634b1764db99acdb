package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// indexBatch is how many appended rows may wait before the writer indexes them. FTS5 writes one
// segment per transaction, so a batch costs about what one row costs in its own transaction.
const indexBatch = 512

// indexPending adds the oldest limit rows above fts_state.upto (every pending row when limit < 0)
// to the full-text indexes and advances upto, inside tx. It is idempotent: with nothing pending
// it changes nothing. The limit bounds how long an append that completes a batch holds the write
// lock when several processes append at once (each would otherwise index everyone's rows).
func indexPending(ctx context.Context, tx *sql.Tx, limit int) error {
	var upto, top int64
	if err := tx.QueryRowContext(ctx, `SELECT upto, coalesce((SELECT max(id) FROM
		(SELECT id FROM messages WHERE id > upto ORDER BY id LIMIT ?)), 0) FROM fts_state`, limit).Scan(&upto, &top); err != nil {
		return fmt.Errorf("read index state: %w", err)
	}
	if top <= upto {
		return nil
	}
	// The content views (schema 6) hold each index's projection and end at upto: advance it,
	// then index what the views show above the old mark.
	if _, err := tx.ExecContext(ctx, "UPDATE fts_state SET upto = ?", top); err != nil {
		return fmt.Errorf("advance index state: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages_fts (rowid, content, tool_name, tool_calls, stems)
		SELECT id, content, tool_name, tool_calls, stems FROM messages_fts_src WHERE id > ? ORDER BY id`, upto); err != nil {
		return fmt.Errorf("index words: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages_trigram (rowid, content)
		SELECT id, content FROM messages_trigram_src WHERE id > ? ORDER BY id`, upto); err != nil {
		return fmt.Errorf("index substrings: %w", err)
	}
	return nil
}

// notePending counts rows this handle appended; once a batch is due it indexes everything
// pending inside tx, so the batch commits with the append that completed it.
func (db *DB) notePending(ctx context.Context, tx *sql.Tx, added int) error {
	if db.pending.Add(int64(added)) < indexBatch {
		return nil
	}
	if err := indexPending(ctx, tx, indexBatch); err != nil {
		return err
	}
	db.pending.Store(0)
	return nil
}

// bulkIndexBatch is how many imported rows may wait before the importer's write indexes them:
// importing many small sessions one transaction each would otherwise write (and merge) one
// full-text segment per session.
const bulkIndexBatch = 8192

// noteBulk is notePending for imports: once bulkIndexBatch rows are pending it indexes all of
// them inside tx, in one segment.
func (db *DB) noteBulk(ctx context.Context, tx *sql.Tx, added int) error {
	if db.pending.Add(int64(added)) < bulkIndexBatch {
		return nil
	}
	return db.indexNow(ctx, tx)
}

// indexNow indexes everything pending inside tx: bulk writers (compaction, branch, import) call
// it so their rows land in one segment with the write that made them.
func (db *DB) indexNow(ctx context.Context, tx *sql.Tx) error {
	if err := indexPending(ctx, tx, -1); err != nil {
		return err
	}
	db.pending.Store(0)
	return nil
}

// ensureIndexed indexes pending rows before a search, so results are exact. Most searches find
// nothing pending and cost one read.
func (db *DB) ensureIndexed(ctx context.Context) error {
	pending, err := readColumn[bool](ctx, db, `SELECT coalesce((SELECT max(id) FROM messages), 0) > upto FROM fts_state`)
	if err != nil || len(pending) == 0 || !pending[0] || db.readOnly {
		return err
	}
	if err := db.flushIndex(ctx); err != nil && !isFull(err) {
		return err
	}
	return nil // a full disk: search what is indexed rather than fail
}

func (db *DB) flushIndex(ctx context.Context) error {
	err := db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error { return indexPending(ctx, tx, -1) })
	if err == nil {
		db.pending.Store(0)
	}
	return err
}
