package postgres

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

const (
	defaultSearchLimit = 20
	contextChars       = 200
	// rankWindow bounds how many matches are ranked by relevance: the newest rankWindow of
	// them, as on SQLite, so a common word costs the same on a large store as on a small one.
	rankWindow = 1000
)

// Search implements store.Store with store/sqlite's semantics: the same sanitizer, the same
// tokens (see index.go), the same CJK routing (substrings of three or more characters through
// the trigram index, shorter ones by a scan of the CJK rows), the same filters, sorts, paging,
// snippets and context. Relevance is ts_rank instead of bm25, so the order of equally good hits
// may differ between backends; the set of hits does not.
func (db *DB) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	if q.Limit <= 0 {
		q.Limit = defaultSearchLimit
	}
	q.Offset = max(q.Offset, 0)
	var hits []store.SearchHit
	var err error
	if sqlite.HasCJK(q.Text) {
		hits, err = db.searchCJK(ctx, q)
	} else {
		match := sqlite.SanitizeQuery(q.Text)
		tsq := buildTSQuery(match)
		if tsq == "" {
			return nil, nil
		}
		hits, err = db.searchWords(ctx, match, tsq, q)
	}
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	if !q.NoContext {
		if err := db.addContext(ctx, hits); err != nil {
			return nil, fmt.Errorf("search %q: context: %w", q.Text, err)
		}
	}
	return hits, nil
}

// filters renders the visibility, source, role and session filters; args continue after the
// caller's first len(args) parameters.
func filters(q store.SearchQuery, args []any) (string, []any) {
	conds := []string{"(m.active OR m.compacted)"}
	in := func(col string, vals []string, not bool) {
		if len(vals) == 0 {
			return
		}
		args = append(args, vals)
		if not {
			conds = append(conds, fmt.Sprintf("%s <> ALL($%d)", col, len(args)))
		} else {
			conds = append(conds, fmt.Sprintf("%s = ANY($%d)", col, len(args)))
		}
	}
	in("s.source", q.Sources, false)
	in("s.source", q.ExcludeSources, true)
	in("m.role", q.Roles, false)
	in("m.session_id", q.SessionIDs, false)
	if q.UserID != "" {
		args = append(args, q.UserID)
		conds = append(conds, fmt.Sprintf("s.user_id = $%d", len(args)))
	}
	return strings.Join(conds, " AND "), args
}

func orderBy(sort store.SearchSort, rank string) string {
	switch sort {
	case store.SortNewest:
		return "m.id DESC"
	case store.SortOldest:
		return "m.id ASC"
	}
	return rank
}

func windowOrder(sort store.SearchSort) string {
	if sort == store.SortOldest {
		return "ASC"
	}
	return "DESC"
}

const hitCols = `m.id, m.session_id, m.role, s.source, s.model, s.started_at, m.timestamp, m.active, m.compacted,
	m.content, coalesce(m.tool_calls, '')`

type hit struct {
	store.SearchHit
	text, toolText string
}

func scanHit(r rowScanner) (hit, error) {
	var h hit
	var started, ts int64
	err := r.Scan(&h.MessageID, &h.SessionID, &h.Role, &h.Source, &h.Model, &started, &ts, &h.Active, &h.Compacted,
		&h.text, &h.toolText)
	h.SessionStarted, h.Timestamp = fromMicros(started), fromMicros(ts)
	return h, err
}

func (db *DB) queryHits(ctx context.Context, query string, args []any) ([]hit, error) {
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hit, error) { return scanHit(r) })
}

// searchWords ranks the newest rankWindow matches that pass the filters (GIN on the tsvector).
func (db *DB) searchWords(ctx context.Context, match, tsq string, q store.SearchQuery) ([]store.SearchHit, error) {
	cond, args := filters(q, []any{tsq})
	n := len(args)
	args = append(args, rankWindow+q.Offset, q.Limit, q.Offset)
	hits, err := db.queryHits(ctx, `SELECT `+hitCols+` FROM (SELECT m.id, ts_rank(m.tsv, $1::tsquery) AS rank
		FROM messages m JOIN sessions s ON s.id = m.session_id
		WHERE m.tsv @@ $1::tsquery AND `+cond+fmt.Sprintf(` ORDER BY m.id %s LIMIT $%d) w
		JOIN messages m ON m.id = w.id JOIN sessions s ON s.id = m.session_id
		ORDER BY %s LIMIT $%d OFFSET $%d`, windowOrder(q.Sort), n+1, orderBy(q.Sort, "w.rank DESC, m.id"), n+2, n+3), args)
	if err != nil {
		return nil, err
	}
	out := make([]store.SearchHit, len(hits))
	for i, h := range hits {
		h.Snippet = sqlite.WordSnippet(h.text, h.toolText, match)
		out[i] = h.SearchHit
	}
	return out, nil
}

// searchCJK finds substrings: terms of three or more characters through the trigram index on
// the CJK rows' indexed text, shorter ones by ILIKE over those rows' content.
func (db *DB) searchCJK(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	terms := sqlite.CJKTerms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	cond, args := filters(q, nil)
	cond = "m.cjk_text IS NOT NULL AND " + cond
	for _, t := range terms {
		col := "m.content"
		if utf8.RuneCountInString(t) >= 3 {
			col = "m.cjk_text"
		}
		args = append(args, "%"+likeEscape(cleanNUL(t))+"%")
		cond += fmt.Sprintf(" AND %s ILIKE $%d", col, len(args))
	}
	n := len(args)
	args = append(args, q.Limit, q.Offset)
	hits, err := db.queryHits(ctx, `SELECT `+hitCols+` FROM messages m JOIN sessions s ON s.id = m.session_id
		WHERE `+cond+fmt.Sprintf(` ORDER BY %s LIMIT $%d OFFSET $%d`, orderBy(q.Sort, "m.id DESC"), n+1, n+2), args)
	if err != nil {
		return nil, err
	}
	out := make([]store.SearchHit, len(hits))
	for i, h := range hits {
		h.Snippet = sqlite.SubstringSnippet(h.text, terms[0])
		out[i] = h.SearchHit
	}
	return out, nil
}

// addContext attaches the visible neighbours of each hit within its session, for the whole page
// in two queries.
func (db *DB) addContext(ctx context.Context, hits []store.SearchHit) error {
	if len(hits) == 0 {
		return nil
	}
	ids := make([]int64, len(hits))
	sids := make([]string, len(hits))
	for i, h := range hits {
		ids[i], sids[i] = h.MessageID, h.SessionID
	}
	type pair struct{ before, after int64 }
	near := map[int64]pair{}
	var want []int64
	rows, err := db.pool.Query(ctx, `SELECT h.id,
		coalesce((SELECT m.id FROM messages m WHERE m.session_id = h.sid AND (m.active OR m.compacted) AND m.id < h.id
			ORDER BY m.id DESC LIMIT 1), 0),
		coalesce((SELECT m.id FROM messages m WHERE m.session_id = h.sid AND (m.active OR m.compacted) AND m.id > h.id
			ORDER BY m.id LIMIT 1), 0)
		FROM unnest($1::bigint[], $2::text[]) AS h(id, sid)`, ids, sids)
	if err != nil {
		return err
	}
	var id int64
	var p pair
	if _, err := pgx.ForEachRow(rows, []any{&id, &p.before, &p.after}, func() error {
		near[id] = p
		for _, n := range []int64{p.before, p.after} {
			if n != 0 {
				want = append(want, n)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	lines := map[int64]*store.ContextLine{}
	if len(want) > 0 {
		rows, err := db.pool.Query(ctx, `SELECT id, role, left(content, $1) FROM messages WHERE id = ANY($2)`, contextChars, want)
		if err != nil {
			return err
		}
		var c store.ContextLine
		if _, err := pgx.ForEachRow(rows, []any{&c.MessageID, &c.Role, &c.Content}, func() error {
			line := c
			lines[c.MessageID] = &line
			return nil
		}); err != nil {
			return err
		}
	}
	for i := range hits {
		p := near[hits[i].MessageID]
		hits[i].Before, hits[i].After = lines[p.before], lines[p.after]
	}
	return nil
}

// CheckMatch reports whether the engine refuses the translated form of query (a non-nil error);
// benchmarks count these as engine rejections. CJK queries never reach the tsquery parser.
func (db *DB) CheckMatch(ctx context.Context, query string) error {
	if sqlite.HasCJK(query) {
		return nil
	}
	tsq := buildTSQuery(sqlite.SanitizeQuery(query))
	if tsq == "" {
		return nil
	}
	var n int
	return db.pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE tsv @@ $1::tsquery", tsq).Scan(&n)
}
