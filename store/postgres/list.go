package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

// ListSessions implements store.Store. A compression chain lists once, as its root, with its
// newest activity and its live tip.
func (db *DB) ListSessions(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error) {
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
