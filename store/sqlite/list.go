package sqlite

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
