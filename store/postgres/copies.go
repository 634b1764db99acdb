package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Compaction copies, as store/sqlite links them (see its copies.go): a row a compaction
// re-inserts verbatim points at the original it copies (copy_of, the first row of the chain).

type copyKey struct {
	role, content, callID, name, calls string
	ts                                 int64
}

func keyOfEncoded(e encodedMessage) copyKey {
	m := e.m
	calls := ""
	if e.calls != nil {
		calls = *e.calls
	}
	return copyKey{m.Role, m.Content, m.ToolCallID, m.ToolName, calls, micros(m.Timestamp)}
}

type copySource struct{ id, root int64 }

// compactionSources reads the rows a compaction of sid is about to archive that could be the
// original of one of enc: active rows at or below watermark with the same time, minus skip.
func compactionSources(ctx context.Context, tx pgx.Tx, sid string, watermark int64, skip []int64, enc []encodedMessage) (map[copyKey][]copySource, error) {
	stamps := make([]int64, len(enc))
	for i, e := range enc {
		stamps[i] = micros(e.m.Timestamp)
	}
	skipped := make(map[int64]bool, len(skip))
	for _, id := range skip {
		skipped[id] = true
	}
	rows, err := tx.Query(ctx, `SELECT id, coalesce(copy_of, id), role, content, coalesce(tool_call_id, ''),
		coalesce(tool_name, ''), coalesce(tool_calls, ''), timestamp FROM messages
		WHERE session_id = $1 AND active AND id <= $2 AND timestamp = ANY($3) ORDER BY id`, sid, watermark, stamps)
	if err != nil {
		return nil, err
	}
	out := map[copyKey][]copySource{}
	var s copySource
	var k copyKey
	_, err = pgx.ForEachRow(rows, []any{&s.id, &s.root, &k.role, &k.content, &k.callID, &k.name, &k.calls, &k.ts}, func() error {
		if !skipped[s.id] {
			out[k] = append(out[k], s)
		}
		return nil
	})
	return out, err
}

// linkCompactionCopies points each inserted row (ids[i] holds enc[i]) that copies an archived
// source at that source's chain root; identical messages pair up in order.
func linkCompactionCopies(ctx context.Context, tx pgx.Tx, sources map[copyKey][]copySource, enc []encodedMessage, ids []int64) error {
	for i, e := range enc {
		k := keyOfEncoded(e)
		srcs := sources[k]
		if len(srcs) == 0 {
			continue
		}
		sources[k] = srcs[1:]
		if _, err := tx.Exec(ctx, "UPDATE messages SET copy_of = $1 WHERE id = $2", srcs[0].root, ids[i]); err != nil {
			return fmt.Errorf("link copy %d: %w", ids[i], err)
		}
	}
	return nil
}

// linkStoredCopies infers the copies of an imported session (a bundle carries no links), as
// store/sqlite does: a visible row copies an earlier archived identical row unless both are in
// one run of identical rows; identical rows pair up oldest first.
func linkStoredCopies(ctx context.Context, tx pgx.Tx, sid string) error {
	type row struct {
		id       int64
		archived bool
		k        copyKey
	}
	rows, err := tx.Query(ctx, `SELECT id, active, compacted, role, content, coalesce(tool_call_id, ''),
		coalesce(tool_name, ''), coalesce(tool_calls, ''), timestamp FROM messages
		WHERE session_id = $1 AND (active OR compacted) AND copy_of IS NULL ORDER BY id`, sid)
	if err != nil {
		return err
	}
	var all []row
	var x row
	var active, compacted bool
	if _, err := pgx.ForEachRow(rows, []any{&x.id, &active, &compacted, &x.k.role, &x.k.content, &x.k.callID, &x.k.name, &x.k.calls, &x.k.ts}, func() error {
		x.archived = !active && compacted
		all = append(all, x)
		return nil
	}); err != nil {
		return err
	}
	type open struct {
		pos  int
		root int64
	}
	pending := map[copyKey][]open{}
	runStart := 0
	for i := range all {
		r := &all[i]
		if i > 0 && all[i-1].k != r.k {
			runStart = i
		}
		root := r.id
		if srcs := pending[r.k]; len(srcs) > 0 && srcs[0].pos < runStart {
			pending[r.k] = srcs[1:]
			root = srcs[0].root
			if _, err := tx.Exec(ctx, "UPDATE messages SET copy_of = $1 WHERE id = $2", root, r.id); err != nil {
				return err
			}
		}
		if r.archived {
			pending[r.k] = append(pending[r.k], open{pos: i, root: root})
		}
	}
	return nil
}

// displayWhere is the display view: live and archived rows, minus every row a newer visible
// row copies verbatim.
const displayWhere = `(m.active OR m.compacted) AND NOT EXISTS (SELECT 1 FROM messages c
	WHERE c.copy_of = coalesce(m.copy_of, m.id) AND c.id > m.id AND (c.active OR c.compacted))`
