package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

const (
	defaultSearchLimit = 20
	contextChars       = 200
	snippetTokens      = 40
)

// Search implements store.Store. User text never reaches the engine raw: it is sanitized, so no
// input causes a syntax error. Queries with CJK text use the trigram index (runs of three or more
// characters) or a scan of the CJK-flagged rows (shorter runs).
func (db *DB) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	if q.Limit <= 0 {
		q.Limit = defaultSearchLimit
	}
	q.Offset = max(q.Offset, 0)
	if err := db.ensureIndexed(ctx); err != nil {
		return nil, fmt.Errorf("search %q: index pending messages: %w", q.Text, err)
	}
	var hits []store.SearchHit
	var err error
	if hasCJK(q.Text) {
		hits, err = db.searchCJK(ctx, q)
	} else {
		match := sanitizeFTSQuery(q.Text)
		if match == "" {
			return nil, nil
		}
		hits, err = db.searchWords(ctx, match, q)
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

// jsonList is an IN list bound as one JSON array parameter: the statement's text then does not
// depend on how many values there are, so it is prepared once and reused (parsing a search's
// statements was a sixth of its cost).
const jsonList = "(SELECT value FROM json_each(?))"

// jsonArray encodes vals for a jsonList parameter.
func jsonArray[T any](vals []T) string {
	b, err := json.Marshal(vals)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", vals, err)) // strings and integers always encode
	}
	return string(b)
}

// filters renders the visibility, source, role and session filters on m (messages) and s (sessions).
func filters(q store.SearchQuery) (string, []any) {
	conds := []string{"(m.active = 1 OR m.compacted = 1)"}
	var args []any
	in := func(col string, vals []string, not bool) {
		if len(vals) == 0 {
			return
		}
		op := " IN "
		if not {
			op = " NOT IN "
		}
		conds = append(conds, col+op+jsonList)
		args = append(args, jsonArray(vals))
	}
	in("s.source", q.Sources, false)
	in("s.source", q.ExcludeSources, true)
	in("m.role", q.Roles, false)
	in("m.session_id", q.SessionIDs, false)
	if q.UserID != "" {
		conds = append(conds, "s.user_id = ?")
		args = append(args, q.UserID)
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

// windowOrder picks which matches enter the ranking window: the oldest when listing oldest first.
func windowOrder(sort store.SearchSort) string {
	if sort == store.SortOldest {
		return "ASC"
	}
	return "DESC"
}

const hitCols = `m.id, m.session_id, m.role, s.source, s.model, s.started_at, m.timestamp, m.active, m.compacted,
	m.content, coalesce(m.tool_calls, '')`

// hit is a search hit with the text its snippet is cut from.
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

func unwrap(hs []hit) []store.SearchHit {
	out := make([]store.SearchHit, len(hs))
	for i, h := range hs {
		out[i] = h.SearchHit
	}
	return out
}

// searchWords ranks with FTS5's bm25 over the index alone, then filters and describes only the
// few rows it needs: joining every match to its message and session row before the sort costs a
// B-tree lookup per match, which dominates for common words. When filters reject too many of the
// over-fetched candidates, it falls back to ranking the filtered join.
func (db *DB) searchWords(ctx context.Context, match string, q store.SearchQuery) ([]store.SearchHit, error) {
	want := q.Offset + q.Limit
	var hits []hit
	var err error
	ranked := false
	if q.Sort == store.SortRelevance {
		fetch := want*3 + 10
		var ids []int64
		if ids, err = readColumn[int64](ctx, db, `SELECT rowid FROM (SELECT rowid, rank FROM messages_fts
			WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?) ORDER BY rank, rowid LIMIT ?`, match, rankWindow, fetch); err != nil {
			return nil, err
		}
		if hits, err = db.describeHits(ctx, ids, q); err != nil {
			return nil, err
		}
		// Enough survivors, or no more candidates: done. Otherwise the filters ate the
		// candidates and the filtered set is ranked instead.
		if ranked = len(hits) >= want || len(ids) < fetch; ranked {
			hits = hits[min(q.Offset, len(hits)):min(want, len(hits))]
		}
	}
	if !ranked {
		if hits, err = db.searchFiltered(ctx, match, q); err != nil {
			return nil, err
		}
	}
	terms := matchTerms(match)
	for i := range hits {
		h := &hits[i]
		var ok bool
		if h.Snippet, ok = snippet(h.text, terms, snippetTokens); !ok {
			if h.Snippet, ok = snippet(h.toolText, terms, snippetTokens); !ok {
				h.Snippet = headSnippet(h.text, 120)
			}
		}
	}
	return unwrap(hits), nil
}

// rankWindow bounds how many matches are ranked by relevance: the newest rankWindow of them. A
// query matching more messages than that (a common word) is answered from recent history, and
// its cost stays bounded instead of growing with the whole store: bm25 reads every ranked
// match's position list and length.
const rankWindow = 1000

// describeHits loads the rows of ids that pass q's filters, keeping the order of ids.
func (db *DB) describeHits(ctx context.Context, ids []int64, q store.SearchQuery) ([]hit, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cond, args := filters(q)
	byID := make(map[int64]hit, len(ids))
	err := db.readRows(ctx, `SELECT `+hitCols+` FROM messages m JOIN sessions s ON s.id = m.session_id
		WHERE `+cond+` AND m.id IN `+jsonList, append(args, jsonArray(ids)), func(r rowScanner) error {
		h, err := scanHit(r)
		byID[h.MessageID] = h
		return err
	})
	if err != nil {
		return nil, err
	}
	hits := make([]hit, 0, len(byID))
	for _, id := range ids {
		if h, ok := byID[id]; ok {
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// searchFiltered ranks (or orders by id) the matches that pass the filters.
func (db *DB) searchFiltered(ctx context.Context, match string, q store.SearchQuery) ([]hit, error) {
	cond, args := filters(q)
	var hits []hit
	err := db.readRows(ctx, `SELECT `+hitCols+` FROM (SELECT f.rowid AS id, f.rank AS rank
		FROM messages_fts f JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id
		WHERE messages_fts MATCH ? AND `+cond+` ORDER BY f.rowid `+windowOrder(q.Sort)+` LIMIT ?) w
		JOIN messages m ON m.id = w.id JOIN sessions s ON s.id = m.session_id
		ORDER BY `+orderBy(q.Sort, "w.rank, m.id")+` LIMIT ? OFFSET ?`,
		append(append([]any{match}, args...), rankWindow+q.Offset, q.Limit, q.Offset), func(r rowScanner) error {
			h, err := scanHit(r)
			hits = append(hits, h)
			return err
		})
	return hits, err
}

// searchCJK finds substrings: every term of three or more characters goes through the trigram
// index; shorter terms (two-character words are common in Chinese) are matched with LIKE over the
// rows flagged as containing CJK, which is a small share of a typical store.
func (db *DB) searchCJK(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	terms := cjkTerms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	var long, short []string
	for _, t := range terms {
		if utf8.RuneCountInString(t) >= 3 {
			long = append(long, `"`+strings.ReplaceAll(t, `"`, `""`)+`"`)
		} else {
			short = append(short, t)
		}
	}
	cond, args := filters(q)
	var from string
	var pre []any
	rank := "m.id DESC"
	if len(long) > 0 {
		from = "messages_trigram f JOIN messages m ON m.id = f.rowid"
		cond = "messages_trigram MATCH ? AND " + cond
		pre = append(pre, strings.Join(long, " "))
		rank = "f.rank"
	} else {
		from = "messages m INDEXED BY messages_cjk"
		cond = "m.cjk = 1 AND " + cond
	}
	for _, t := range short {
		cond += ` AND m.content LIKE ? ESCAPE '\'`
		args = append(args, "%"+likeEscape(t)+"%")
	}
	var hits []store.SearchHit
	err := db.readRows(ctx, `SELECT `+hitCols+` FROM `+from+`
		JOIN sessions s ON s.id = m.session_id WHERE `+cond+` ORDER BY `+orderBy(q.Sort, rank)+` LIMIT ? OFFSET ?`,
		append(append(pre, args...), q.Limit, q.Offset), func(r rowScanner) error {
			h, err := scanHit(r)
			h.Snippet = substringSnippet(h.text, terms[0])
			hits = append(hits, h.SearchHit)
			return err
		})
	return hits, err
}

// cjkTerms splits a query into literal substrings to find: FTS operators and quotes are dropped.
func cjkTerms(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		f = strings.Trim(f, `"*()+-^:`)
		switch strings.ToUpper(f) {
		case "", "AND", "OR", "NOT", "NEAR":
			continue
		}
		out = append(out, f)
	}
	return out
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// substringSnippet shows 120 characters from 40 before the first occurrence of term, marked.
func substringSnippet(content, term string) string {
	i := strings.Index(content, term)
	if i < 0 {
		return truncateRunes(content, 120)
	}
	r := []rune(content)
	at := utf8.RuneCountInString(content[:i])
	n := utf8.RuneCountInString(term)
	start := max(0, at-40)
	end := min(len(r), start+120)
	var b strings.Builder
	if start > 0 {
		b.WriteString("...")
	}
	b.WriteString(string(r[start:at]))
	b.WriteString(">>>" + string(r[at:min(at+n, len(r))]) + "<<<")
	if at+n < end {
		b.WriteString(string(r[at+n : end]))
	}
	if end < len(r) {
		b.WriteString("...")
	}
	return b.String()
}

// addContext attaches the visible neighbours of each hit within its session: one query finds the
// neighbour ids of the whole page (live and archived rows are separate ranges of the session
// index, so each side is the nearer of two index seeks), a second loads them.
func (db *DB) addContext(ctx context.Context, hits []store.SearchHit) error {
	if len(hits) == 0 {
		return nil
	}
	pairs := make([][2]any, len(hits))
	for i, h := range hits {
		pairs[i] = [2]any{h.MessageID, h.SessionID}
	}
	type pair struct{ before, after int64 }
	near := map[int64]pair{}
	var ids []int64
	err := db.readRows(ctx, `WITH h(id, sid) AS (SELECT value ->> 0, value ->> 1 FROM json_each(?))
		SELECT id, coalesce(max(b1, b2), b1, b2, 0), coalesce(min(a1, a2), a1, a2, 0) FROM (SELECT h.id AS id,
			(SELECT max(m.id) FROM messages m WHERE m.session_id = h.sid AND m.active = 1 AND m.id < h.id) AS b1,
			(SELECT max(m.id) FROM messages m WHERE m.session_id = h.sid AND m.active = 0 AND m.compacted = 1 AND m.id < h.id) AS b2,
			(SELECT min(m.id) FROM messages m WHERE m.session_id = h.sid AND m.active = 1 AND m.id > h.id) AS a1,
			(SELECT min(m.id) FROM messages m WHERE m.session_id = h.sid AND m.active = 0 AND m.compacted = 1 AND m.id > h.id) AS a2
		FROM h)`, []any{jsonArray(pairs)}, func(r rowScanner) error {
		var id int64
		var p pair
		if err := r.Scan(&id, &p.before, &p.after); err != nil {
			return err
		}
		near[id] = p
		for _, n := range []int64{p.before, p.after} {
			if n != 0 {
				ids = append(ids, n)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	lines := map[int64]*store.ContextLine{}
	if len(ids) > 0 {
		err := db.readRows(ctx, `SELECT id, role, substr(content, 1, ?) FROM messages WHERE id IN `+jsonList,
			[]any{contextChars, jsonArray(ids)}, func(r rowScanner) error {
				var c store.ContextLine
				if err := r.Scan(&c.MessageID, &c.Role, &c.Content); err != nil {
					return err
				}
				lines[c.MessageID] = &c
				return nil
			})
		if err != nil {
			return err
		}
	}
	for i := range hits {
		p := near[hits[i].MessageID]
		hits[i].Before, hits[i].After = lines[p.before], lines[p.after]
	}
	return nil
}

// CheckMatch reports whether the FTS engine refuses the sanitized form of query (a non-nil
// error); benchmarks count these as engine rejections. CJK queries never reach MATCH unquoted.
func (db *DB) CheckMatch(ctx context.Context, query string) error {
	if hasCJK(query) {
		return nil
	}
	match := sanitizeFTSQuery(query)
	if match == "" {
		return nil
	}
	if err := db.ensureIndexed(ctx); err != nil {
		return err
	}
	var n int
	return db.read().QueryRowContext(ctx, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", match).Scan(&n)
}
