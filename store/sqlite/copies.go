package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Compaction copies. A compaction re-inserts some rows verbatim (the protected head) as new
// active rows and archives the originals; without a link, the display view and search would
// show each such message once per generation, and two distinct but identical messages (the
// same text twice at the same time) could not be told from a copy. messages.copy_of links a copy
// to the original row it copies (the first row of the chain; copies of copies point at it too).

// copyKey is what a verbatim copy shares with its original.
type copyKey struct {
	role, content, callID, name, calls string
	ts                                 int64
}

func keyOfEncoded(e encodedMessage) copyKey {
	m := e.m
	return copyKey{m.Role, m.Content, m.ToolCallID, m.ToolName, e.calls.String, micros(m.Timestamp)}
}

// copySource is a row a copy may point at: its id and the root of its chain.
type copySource struct {
	id, root int64
}

// compactionSources reads the rows a compaction of sid is about to archive that could be the
// original of one of enc (same role and time), in id order: the active rows at or below
// watermark, minus those in skip (the verbatim tail, which is hidden rather than archived).
func compactionSources(ctx context.Context, tx *sql.Tx, sid string, watermark int64, skip []int64, enc []encodedMessage) (map[copyKey][]copySource, error) {
	stamps := make([]int64, len(enc))
	for i, e := range enc {
		stamps[i] = micros(e.m.Timestamp)
	}
	skipped := make(map[int64]bool, len(skip))
	for _, id := range skip {
		skipped[id] = true
	}
	out := map[copyKey][]copySource{}
	err := eachRow(ctx, tx, `SELECT id, coalesce(copy_of, id), role, content, coalesce(tool_call_id, ''),
		coalesce(tool_name, ''), coalesce(tool_calls, ''), timestamp FROM messages
		WHERE session_id = ? AND active = 1 AND id <= ? AND timestamp IN `+jsonList+` ORDER BY id`,
		[]any{sid, watermark, jsonArray(stamps)}, func(r rowScanner) error {
			var s copySource
			var k copyKey
			if err := r.Scan(&s.id, &s.root, &k.role, &k.content, &k.callID, &k.name, &k.calls, &k.ts); err != nil {
				return err
			}
			if !skipped[s.id] {
				out[k] = append(out[k], s)
			}
			return nil
		})
	return out, err
}

// linkCompactionCopies points each inserted row (ids[i] holds enc[i]) that is a verbatim copy of
// an archived source at that source's chain root. Identical messages pair up in order, so two
// distinct "ok" rows copied together stay two rows.
func linkCompactionCopies(ctx context.Context, tx *sql.Tx, sources map[copyKey][]copySource, enc []encodedMessage, ids []int64) error {
	for i, e := range enc {
		k := keyOfEncoded(e)
		srcs := sources[k]
		if len(srcs) == 0 {
			continue
		}
		sources[k] = srcs[1:]
		if _, err := tx.ExecContext(ctx, "UPDATE messages SET copy_of = ? WHERE id = ?", srcs[0].root, ids[i]); err != nil {
			return fmt.Errorf("link copy %d: %w", ids[i], err)
		}
	}
	return nil
}

// linkStoredCopies links the copies of a session stored without links (written before schema 6,
// or imported from a bundle, which carries no links). It can only infer them: a visible row is
// taken for a copy of an earlier archived row with the same role, text, tool fields and
// timestamp, unless the two are neighbours in one run of identical rows (a message said twice
// in a row is two messages, and a compaction copies a whole head, so its copies follow other
// rows). Identical rows pair up oldest first.
func linkStoredCopies(ctx context.Context, tx *sql.Tx, sid string) error {
	type row struct {
		id, root int64
		archived bool
		k        copyKey
	}
	var rows []row
	err := eachRow(ctx, tx, `SELECT id, active, compacted, role, content, coalesce(tool_call_id, ''),
		coalesce(tool_name, ''), coalesce(tool_calls, ''), timestamp FROM messages
		WHERE session_id = ? AND (active = 1 OR compacted = 1) AND copy_of IS NULL ORDER BY id`,
		[]any{sid}, func(r rowScanner) error {
			var x row
			var active, compacted bool
			if err := r.Scan(&x.id, &active, &compacted, &x.k.role, &x.k.content, &x.k.callID, &x.k.name, &x.k.calls, &x.k.ts); err != nil {
				return err
			}
			x.archived = !active && compacted
			rows = append(rows, x)
			return nil
		})
	if err != nil {
		return err
	}
	type open struct {
		pos  int
		root int64
	}
	pending := map[copyKey][]open{}
	runStart := 0
	for i := range rows {
		r := &rows[i]
		if i > 0 && rows[i-1].k != r.k {
			runStart = i
		}
		root := r.id
		if srcs := pending[r.k]; len(srcs) > 0 && srcs[0].pos < runStart {
			pending[r.k] = srcs[1:]
			root = srcs[0].root
			if _, err := tx.ExecContext(ctx, "UPDATE messages SET copy_of = ? WHERE id = ?", root, r.id); err != nil {
				return err
			}
		}
		if r.archived {
			pending[r.k] = append(pending[r.k], open{pos: i, root: root})
		}
	}
	return nil
}

// eachRow runs query inside tx and calls fn for each row.
func eachRow(ctx context.Context, tx *sql.Tx, query string, args []any, fn func(rowScanner) error) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
