package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

// ListSessions implements store.Sessions. A compression chain lists once, as its root, with its
// newest activity and its live tip.
func (db *DB) ListSessions(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error) {
	if o.Trees {
		return db.listTrees(ctx, o)
	}
	var where []string
	var args []any
	if !o.IncludeChildren {
		where = append(where, "s.root_id = s.id AND s.relation <> 'delegate'")
	}
	for _, f := range []struct{ col, val string }{{"s.source", o.Source}, {"s.user_id", o.UserID},
		{"s.session_key", o.SessionKey}, {"s.model", o.Model}, {"s.cwd", o.Cwd}} {
		if f.val != "" {
			args = append(args, f.val)
			where = append(where, fmt.Sprintf("%s = $%d", f.col, len(args)))
		}
	}
	if o.Query != "" {
		// strpos is literal (no LIKE wildcards to escape); lower() as on SQLite, which folds
		// ASCII letters only (PostgreSQL's lower folds every script under C.UTF-8).
		args = append(args, cleanNUL(o.Query))
		n := len(args)
		where = append(where, fmt.Sprintf("(strpos(lower(coalesce(s.title, '')), lower($%d)) > 0 OR strpos(lower(coalesce(s.preview, '')), lower($%d)) > 0)", n, n))
	}
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	var limit *int
	if o.Limit > 0 {
		limit = &o.Limit
	}
	n := len(args)
	args = append(args, limit, max(o.Offset, 0))
	rows, err := db.pool.Query(ctx, "SELECT "+sessionCols+`, s.last_active, s.preview,
		EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id AND c.relation = 'compression')
		FROM sessions s `+cond+fmt.Sprintf(` ORDER BY s.last_active DESC, s.id DESC LIMIT $%d OFFSET $%d`, n+1, n+2), args...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []store.SessionListing
	var chained []int
	for rows.Next() {
		var l store.SessionListing
		var last int64
		var preview *string
		var hasCont bool
		s, err := scanSession(rows, &last, &preview, &hasCont)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		l.Session, l.LastActive = s, fromMicros(last)
		if preview != nil {
			l.Preview = fts.ShapePreview(*preview)
		}
		if hasCont {
			chained = append(chained, len(out))
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	for _, i := range chained {
		chain, err := chainOf(ctx, db.pool, out[i].ID)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out[i].TipID = chain[len(chain)-1].ID
	}
	return out, nil
}

// listTrees is ListSessions with Trees: one query picks the page's tree roots, a second reads
// their trees (down the branch edges of every session of each compression chain).
func (db *DB) listTrees(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error) {
	if o.IncludeChildren {
		return nil, store.ErrTreesWithChildren
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	// listed is the condition for a listed session under the alias a: a chain root that is no
	// delegate run, inside UserID and SessionKey. The values are bound once and named again.
	var hard []string
	for _, f := range []struct{ col, val string }{{"user_id", o.UserID}, {"session_key", o.SessionKey}} {
		if f.val != "" {
			hard = append(hard, f.col+" = "+arg(f.val))
		}
	}
	listed := func(a string) string {
		c := a + ".root_id = " + a + ".id AND " + a + ".relation <> 'delegate'"
		for _, h := range hard {
			c += " AND " + a + "." + h
		}
		return c
	}
	var soft []string
	for _, f := range []struct{ col, val string }{{"source", o.Source}, {"model", o.Model}, {"cwd", o.Cwd}} {
		if f.val != "" {
			soft = append(soft, "s."+f.col+" = "+arg(f.val))
		}
	}
	if o.Query != "" {
		// Literal and ASCII-folding, as ListSessions without Trees.
		q := arg(cleanNUL(o.Query))
		soft = append(soft, "(strpos(lower(coalesce(s.title, '')), lower("+q+")) > 0 OR strpos(lower(coalesce(s.preview, '')), lower("+q+")) > 0)")
	}
	matches := "true"
	if len(soft) > 0 {
		matches = "(" + strings.Join(soft, " AND ") + ")"
	}
	// A listed session s nests under the chain root of the session it branched from, when that
	// root is listed.
	nested := "(s.relation = 'branch' AND EXISTS (SELECT 1 FROM sessions p JOIN sessions pr ON pr.id = p.root_id WHERE p.id = s.parent_session_id AND " + listed("pr") + "))"
	// The page's roots: the listed sessions that match and nest under none, and, with
	// filters, the roots of the trees of matching branches (walked up from each) that do not
	// match themselves, so the two parts are disjoint. The matches are read in one scan.
	with := ""
	pick := "SELECT s.id, s.last_active FROM sessions s WHERE " + listed("s") + " AND NOT " + nested
	if len(soft) > 0 {
		with = "WITH RECURSIVE m AS MATERIALIZED (SELECT s.id, s.last_active, " + nested + " AS n FROM sessions s WHERE " +
			listed("s") + " AND " + matches + `),
			up(id) AS (SELECT id FROM m WHERE n
				UNION SELECT pr.id FROM up CROSS JOIN sessions s CROSS JOIN sessions p CROSS JOIN sessions pr
				WHERE s.id = up.id AND p.id = s.parent_session_id AND pr.id = p.root_id AND s.relation = 'branch' AND ` + listed("pr") + ") "
		pick = "SELECT id, last_active FROM m WHERE NOT n UNION ALL SELECT s.id, s.last_active FROM up CROSS JOIN sessions s WHERE s.id = up.id AND NOT " +
			matches + " AND NOT " + nested
	}
	var limit *int
	if o.Limit > 0 {
		limit = &o.Limit
	}
	q := with + "SELECT id FROM (" + pick + ") AS r ORDER BY last_active DESC, id DESC LIMIT " + arg(limit) + " OFFSET " + arg(max(o.Offset, 0))
	rs, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list session trees: %w", err)
	}
	var roots []string
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			rs.Close()
			return nil, fmt.Errorf("list session trees: %w", err)
		}
		roots = append(roots, id)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("list session trees: %w", err)
	}
	if len(roots) == 0 {
		return nil, nil
	}
	args = args[:len(args)-2] // the limit and offset; the filters keep their numbers
	q = `WITH RECURSIVE down(id) AS (SELECT unnest(` + arg(roots) + `::text[])
			UNION SELECT b.id FROM down JOIN sessions m ON m.root_id = down.id JOIN sessions b ON b.parent_session_id = m.id
			WHERE b.relation = 'branch' AND ` + listed("b") + `)
		SELECT ` + sessionCols + `, s.last_active, s.preview,
			EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id AND c.relation = 'compression'),
			coalesce((SELECT p.root_id FROM sessions p WHERE p.id = s.parent_session_id), ''), ` + matches + `
		FROM down JOIN sessions s ON s.id = down.id`
	rs, err = db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list session trees: %w", err)
	}
	defer rs.Close()
	var rows []store.SessionListing
	var chained []int
	for rs.Next() {
		var l store.SessionListing
		var last int64
		var preview *string
		var hasCont, match bool
		s, err := scanSession(rs, &last, &preview, &hasCont, &l.TreeParent, &match)
		if err != nil {
			return nil, fmt.Errorf("list session trees: %w", err)
		}
		l.Session, l.LastActive, l.Unmatched = s, fromMicros(last), !match
		if preview != nil {
			l.Preview = fts.ShapePreview(*preview)
		}
		if hasCont {
			chained = append(chained, len(rows))
		}
		rows = append(rows, l)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("list session trees: %w", err)
	}
	rs.Close()
	for _, i := range chained {
		chain, err := chainOf(ctx, db.pool, rows[i].ID)
		if err != nil {
			return nil, fmt.Errorf("list session trees: %w", err)
		}
		rows[i].TipID = chain[len(chain)-1].ID
	}
	return store.ArrangeTrees(roots, rows), nil
}
