package sqlite

import (
	"context"
	"encoding/json"
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
			where = append(where, f.col+" = ?")
			args = append(args, f.val)
		}
	}
	if o.Query != "" {
		// instr is literal (no LIKE wildcards to escape); lower() folds ASCII letters.
		where = append(where, "(instr(lower(coalesce(s.title, '')), lower(?)) > 0 OR instr(lower(coalesce(s.preview, '')), lower(?)) > 0)")
		args = append(args, o.Query, o.Query)
	}
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	limit := o.Limit
	if limit <= 0 {
		limit = -1
	}
	// The page is picked on (last_active, id) alone and only its rows are read whole: sorting
	// every candidate's full row, and probing each for a continuation, cost most of a listing.
	var out []store.SessionListing
	var chained []int
	err := db.readRows(ctx, "SELECT "+sessionCols+`, s.last_active, s.preview,
		EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id AND c.relation = 'compression')
		FROM (SELECT s.id FROM sessions s `+cond+` ORDER BY s.last_active DESC, s.id DESC LIMIT ? OFFSET ?) AS page
		JOIN sessions s ON s.id = page.id
		ORDER BY s.last_active DESC, s.id DESC`, append(args, limit, max(o.Offset, 0)), func(r rowScanner) error {
		var l store.SessionListing
		var last int64
		var preview *string
		var hasCont bool
		s, err := scanSession(r, &last, &preview, &hasCont)
		if err != nil {
			return err
		}
		l.Session, l.LastActive = s, fromMicros(last)
		if preview != nil {
			l.Preview = fts.ShapePreview(*preview)
		}
		if hasCont {
			chained = append(chained, len(out))
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	q := db.read()
	for _, i := range chained {
		chain, err := chainOf(ctx, q, out[i].ID)
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
		return fmt.Sprintf("?%d", len(args))
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
		q := arg(o.Query)
		soft = append(soft, "(instr(lower(coalesce(s.title, '')), lower("+q+")) > 0 OR instr(lower(coalesce(s.preview, '')), lower("+q+")) > 0)")
	}
	matches := "1"
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
	limit := o.Limit
	if limit <= 0 {
		limit = -1
	}
	var roots []string
	q := with + "SELECT id FROM (" + pick + ") AS r ORDER BY last_active DESC, id DESC LIMIT " + arg(limit) + " OFFSET " + arg(max(o.Offset, 0))
	if err := db.readRows(ctx, q, args, func(r rowScanner) error {
		var id string
		if err := r.Scan(&id); err != nil {
			return err
		}
		roots = append(roots, id)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list session trees: %w", err)
	}
	if len(roots) == 0 {
		return nil, nil
	}
	ids, err := json.Marshal(roots)
	if err != nil {
		return nil, err
	}
	args = args[:len(args)-2] // the limit and offset; the filters keep their numbers
	var rows []store.SessionListing
	var chained []int
	// CROSS JOIN keeps the order written (SQLite's rule): the planner cannot tell the CTE is a
	// few rows and otherwise scans sessions once per query through an automatic index.
	q = `WITH RECURSIVE down(id) AS (SELECT value FROM json_each(` + arg(string(ids)) + `)
			UNION SELECT b.id FROM down CROSS JOIN sessions m CROSS JOIN sessions b
			WHERE m.root_id = down.id AND b.parent_session_id = m.id AND b.relation = 'branch' AND ` + listed("b") + `)
		SELECT ` + sessionCols + `, s.last_active, s.preview,
			EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id AND c.relation = 'compression'),
			coalesce((SELECT p.root_id FROM sessions p WHERE p.id = s.parent_session_id), ''), ` + matches + `
		FROM down CROSS JOIN sessions s WHERE s.id = down.id`
	err = db.readRows(ctx, q, args, func(r rowScanner) error {
		var l store.SessionListing
		var last int64
		var preview *string
		var hasCont, match bool
		s, err := scanSession(r, &last, &preview, &hasCont, &l.TreeParent, &match)
		if err != nil {
			return err
		}
		l.Session, l.LastActive, l.Unmatched = s, fromMicros(last), !match
		if preview != nil {
			l.Preview = fts.ShapePreview(*preview)
		}
		if hasCont {
			chained = append(chained, len(rows))
		}
		rows = append(rows, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list session trees: %w", err)
	}
	rq := db.read()
	for _, i := range chained {
		chain, err := chainOf(ctx, rq, rows[i].ID)
		if err != nil {
			return nil, fmt.Errorf("list session trees: %w", err)
		}
		rows[i].TipID = chain[len(chain)-1].ID
	}
	return store.ArrangeTrees(roots, rows), nil
}
