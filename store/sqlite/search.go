package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

const (
	defaultSearchLimit = 20
	contextChars       = 200
)

// Search implements store.Searcher. User text never reaches the engine raw: it is sanitized, so no
// input causes a syntax error. Queries with CJK text use the trigram index (runs of three or more
// characters) or a scan of the CJK-flagged rows (shorter runs).
func (db *DB) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	if q.Limit <= 0 {
		q.Limit = defaultSearchLimit
	}
	q.Offset = max(q.Offset, 0)
	if err := db.ensureIndexed(ctx); err != nil {
		if isCorrupt(err) {
			err = db.damage(err)
		}
		return nil, fmt.Errorf("search %q: index pending messages: %w", q.Text, err)
	}
	var hits []store.SearchHit
	var err error
	if fts.HasCJK(q.Text) {
		hits, err = db.searchCJK(ctx, q)
	} else {
		plan := fts.PlanQuery(q.Text)
		if plan.Match == "" {
			return nil, nil
		}
		hits, err = db.searchWords(ctx, plan, q)
	}
	if err == nil {
		err = db.addCopies(ctx, hits)
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
// Compaction copies are left out: a search finds the original and lists its copies (addCopies).
// When the query asks for tool rows, the long ones are left to the full-body scan (scanLongTools)
// instead of being judged on the prefix the index holds.
func filters(q store.SearchQuery) (string, []any) { return searchFilters(q, wantsTools(q)) }

// searchFilters is filters, leaving the long tool rows out when skipLongTools is set.
func searchFilters(q store.SearchQuery, skipLongTools bool) (string, []any) {
	conds := []string{"(m.active = 1 OR m.compacted = 1)", "m.copy_of IS NULL"}
	if skipLongTools {
		conds = append(conds, "NOT ("+longTool+")")
	}
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

// orderBy orders hits: by the message's own timestamp for newest and oldest (an imported session's
// rows are inserted late but dated early), id breaking ties; by rank otherwise.
func orderBy(sort store.SearchSort, rank string) string {
	switch sort {
	case store.SortNewest:
		return "m.timestamp DESC, m.id DESC"
	case store.SortOldest:
		return "m.timestamp ASC, m.id ASC"
	}
	return rank
}

// wantsTools reports whether q asks for tool rows by role: then tool bodies are searched whole.
func wantsTools(q store.SearchQuery) bool {
	return slices.Contains(q.Roles, store.RoleTool)
}

// longTool is the condition (spelled as the messages_long_tool index spells it) for the tool
// rows longer than the indexed prefix (fts.IndexedToolChars).
const longTool = "m.role = 'tool' AND length(m.content) > 8192"

// The last column says whether compaction copies of the row exist (one probe of the copy index,
// so addCopies only queries for the few hits that have some).
const hitCols = `m.id, m.session_id, m.role, s.source, s.model, s.started_at, m.timestamp, m.active, m.compacted,
	coalesce(m.tool_name, ''), m.summary, m.content, coalesce(m.call_text, ''),
	EXISTS (SELECT 1 FROM messages c WHERE c.copy_of = m.id)`

// hit is a search hit with the text its snippet is cut from.
type hit struct {
	store.SearchHit
	text, toolText string
}

func scanHit(r rowScanner) (hit, error) {
	var h hit
	var started, ts int64
	var copied bool
	err := r.Scan(&h.MessageID, &h.SessionID, &h.Role, &h.Source, &h.Model, &started, &ts, &h.Active, &h.Compacted,
		&h.ToolName, &h.Summary, &h.text, &h.toolText, &copied)
	h.SessionStarted, h.Timestamp = fromMicros(started), fromMicros(ts)
	if copied {
		h.Copies = []store.SearchCopy{} // a mark for addCopies, which fills it
	}
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
//
// A plain-words query of several units (fts.Query.Ranked) is ranked by rankedAtSize when some
// of its units are common; otherwise (a small store, or only rare units) the newest
// fts.UnitsWindow matches of their OR are ranked.
func (db *DB) searchWords(ctx context.Context, plan fts.Query, q store.SearchQuery) ([]store.SearchHit, error) {
	match, expr := plan.Match, ftsExpr(plan.Match, plan.Ranked())
	window := rankWindow
	if plan.Ranked() {
		window = fts.UnitsWindow
	}
	want := q.Offset + q.Limit
	var hits []hit
	var err error
	ranked := false
	if q.Sort == store.SortRelevance && plan.Ranked() {
		if hits, ranked, err = db.rankedAtSize(ctx, plan, q); err != nil {
			return nil, err
		}
		if ranked {
			hits = hits[:min(want, len(hits))]
		}
	}
	if q.Sort == store.SortRelevance && !ranked {
		fetch := want*3 + 10
		var ids []int64
		if ids, err = readColumn[int64](ctx, db, `SELECT rowid FROM (SELECT rowid, rank FROM messages_fts
			WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?) ORDER BY rank, rowid LIMIT ?`, expr, window, fetch); err != nil {
			return nil, err
		}
		if hits, err = db.describeHits(ctx, ids, q); err != nil {
			return nil, err
		}
		// Enough survivors, or no more candidates: done. Otherwise the filters ate the
		// candidates and the filtered set is ranked instead.
		if ranked = len(hits) >= want || len(ids) < fetch; ranked {
			hits = hits[:min(want, len(hits))]
		}
	}
	if !ranked {
		fq := q
		fq.Offset, fq.Limit = 0, want
		window += q.Offset
		if hits, err = db.searchFiltered(ctx, expr, fq, window); err != nil {
			return nil, err
		}
	}
	if wantsTools(q) {
		// Both lists run to the page end; merged, they are cut to the page.
		long, err := db.scanLongTools(ctx, fts.LikeGroups(match), q, want)
		if err != nil {
			return nil, err
		}
		hits = mergeHits(hits, long, q.Sort)
	}
	hits = hits[min(q.Offset, len(hits)):min(want, len(hits))]
	for i := range hits {
		hits[i].Snippet = fts.WordSnippet(hits[i].text, hits[i].toolText, match)
		hits[i].Terms = fts.MatchedTerms(match, hits[i].text, hits[i].toolText)
	}
	return unwrap(hits), nil
}

// exactCols are the word index's columns of words as written (its fourth, stems, holds the
// stems of the row's words: fts.StemText).
const exactCols = "{content tool_name tool_calls} : "

// ftsExpr renders a sanitized expression for the word index: a bare word matches its stem
// (fts.StemOf) in any column, as written or in the stems column, so "tested" finds test, tests
// and testing, and the form as asked scores again, ranking above the other forms;
// phrases, identifiers and prefixes match the written words only. Operands in a row are joined
// by an explicit AND (FTS5 refuses the implicit one between parenthesized groups).
//
// With units (the OR of a plain-words query, fts.Query.Ranked) the form as asked is looked for
// in the tool name alone (which has no stems), so it finds the same rows without counting twice
// where the stem already counts: a rare word asked in another form than written then outweighs a
// common one matched as asked.
func ftsExpr(match string, units bool) string {
	var b strings.Builder
	operand := false
	fts.WalkMatch(match, func(t fts.Term) {
		if operand {
			b.WriteString(" AND ")
		} else if b.Len() > 0 {
			b.WriteByte(' ')
		}
		operand = true
		if t.Exact() {
			b.WriteString(exactCols + t.String())
			return
		}
		toks := fts.Tokens(t.Text)
		if len(toks) == 1 {
			if stem := fts.Stem(toks[0]); stem != "" {
				// The stem (written or in the stems column) finds every form; the form as
				// asked counts again, so it ranks above the other forms of the word.
				if units {
					b.WriteString("(" + stem + " OR {tool_name} : " + t.Text + ")")
					return
				}
				b.WriteString("(" + stem + " OR " + t.Text + ")")
				return
			}
		}
		b.WriteString(t.Text)
	}, func(op string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(op)
		operand = false
	})
	return b.String()
}

// mergeHits puts the full-body scan's hits after the ranked ones (relevance: the scan has no
// score), or merges both by timestamp.
func mergeHits(ranked, scanned []hit, sort store.SearchSort) []hit {
	out := append(ranked, scanned...)
	if sort == store.SortRelevance {
		return out
	}
	slices.SortStableFunc(out, func(a, b hit) int {
		c := cmp.Or(a.Timestamp.Compare(b.Timestamp), cmp.Compare(a.MessageID, b.MessageID))
		if sort == store.SortNewest {
			return -c
		}
		return c
	})
	return out
}

// likeExpr renders groups as SQL over m: a term occurs in the content or the tool name.
func likeExpr(groups [][]fts.LikeTerm) (string, []any) {
	var ors []string
	var args []any
	for _, g := range groups {
		var ands []string
		for _, t := range g {
			e := `(m.content LIKE ? ESCAPE '\' OR coalesce(m.tool_name, '') LIKE ? ESCAPE '\')`
			if t.Neg {
				e = "NOT " + e
			}
			pat := "%" + likeEscape(t.Text) + "%"
			ands = append(ands, e)
			args = append(args, pat, pat)
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

// scanLongTools finds matches in the tool rows longer than the indexed prefix by reading their
// whole bodies (the reference scans every tool body for a tool search; only these rows need
// it). The rows come from a partial index that holds only them, newest first (oldest first for
// SortOldest), up to limit.
func (db *DB) scanLongTools(ctx context.Context, groups [][]fts.LikeTerm, q store.SearchQuery, limit int) ([]hit, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	fq := q
	fq.Roles = nil // every long row is a tool row, and filters would leave these rows out
	cond, args := filters(fq)
	like, largs := likeExpr(groups)
	order := "m.timestamp DESC, m.id DESC"
	if q.Sort == store.SortOldest {
		order = "m.timestamp ASC, m.id ASC"
	}
	var hits []hit
	err := db.readRows(ctx, `SELECT `+hitCols+` FROM messages m INDEXED BY messages_long_tool
		JOIN sessions s ON s.id = m.session_id
		WHERE `+longTool+` AND `+cond+` AND `+like+`
		ORDER BY `+order+` LIMIT ?`, append(append(args, largs...), limit), func(r rowScanner) error {
		h, err := scanHit(r)
		hits = append(hits, h)
		return err
	})
	return hits, err
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

// searchFiltered ranks the matches that pass the filters (the newest rankWindow of them), or
// orders all of them by timestamp.
func (db *DB) searchFiltered(ctx context.Context, match string, q store.SearchQuery, window int) ([]hit, error) {
	cond, args := filters(q)
	var hits []hit
	scan := func(r rowScanner) error {
		h, err := scanHit(r)
		hits = append(hits, h)
		return err
	}
	if q.Sort != store.SortRelevance {
		// Timestamps are not in insertion order (imports), so no window by id: every match is
		// ordered.
		// The sort holds only (timestamp, id); the page's rows are read afterwards.
		err := db.readRows(ctx, `SELECT `+hitCols+` FROM (SELECT m.id AS id FROM messages_fts f
			JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id
			WHERE messages_fts MATCH ? AND `+cond+` ORDER BY `+orderBy(q.Sort, "")+` LIMIT ? OFFSET ?) w
			JOIN messages m ON m.id = w.id JOIN sessions s ON s.id = m.session_id
			ORDER BY `+orderBy(q.Sort, ""), append(append([]any{match}, args...), q.Limit, q.Offset), scan)
		return hits, err
	}
	err := db.readRows(ctx, `SELECT `+hitCols+` FROM (SELECT f.rowid AS id, f.rank AS rank
		FROM messages_fts f JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id
		WHERE messages_fts MATCH ? AND `+cond+` ORDER BY f.rowid DESC LIMIT ?) w
		JOIN messages m ON m.id = w.id JOIN sessions s ON s.id = m.session_id
		ORDER BY w.rank, m.id LIMIT ? OFFSET ?`,
		append(append([]any{match}, args...), window, q.Limit, q.Offset), scan)
	return hits, err
}

// addCopies lists, on each hit scanHit marked (a non-nil Copies), the compaction copies of its
// message that are still visible.
func (db *DB) addCopies(ctx context.Context, hits []store.SearchHit) error {
	at := map[int64]int{}
	var ids []int64
	for i, h := range hits {
		if h.Copies != nil {
			at[h.MessageID] = i
			ids = append(ids, h.MessageID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	defer func() {
		for _, i := range at {
			if len(hits[i].Copies) == 0 {
				hits[i].Copies = nil
			}
		}
	}()
	return db.readRows(ctx, `SELECT copy_of, id, active FROM messages WHERE copy_of IN `+jsonList+`
		AND (active = 1 OR compacted = 1) ORDER BY id`, []any{jsonArray(ids)}, func(r rowScanner) error {
		var orig int64
		var c store.SearchCopy
		if err := r.Scan(&orig, &c.MessageID, &c.Active); err != nil {
			return err
		}
		if i, ok := at[orig]; ok {
			hits[i].Copies = append(hits[i].Copies, c)
		}
		return nil
	})
}

// searchCJK finds substrings. A plain query (terms all required) takes the fast path: every term
// of three or more characters goes through the trigram index, shorter ones (two-character words
// are common in Chinese) are matched with LIKE over the rows flagged as containing CJK, which is a
// small share of a typical store. A query with OR or NOT, or one asking for tool rows (whose
// bodies are searched whole), takes the boolean path (searchCJKBoolean).
func (db *DB) searchCJK(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	groups := fts.CJKGroups(q.Text)
	if len(groups) == 0 {
		return nil, nil
	}
	if len(groups) > 1 || len(groups[0].Neg) > 0 || wantsTools(q) {
		return db.searchCJKBoolean(ctx, groups, q)
	}
	terms := groups[0].Pos
	var long, short []string
	for _, t := range terms {
		if utf8.RuneCountInString(t) >= 3 {
			long = append(long, trigramPhrase(t))
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
			h.Snippet = fts.SubstringSnippet(h.text, terms[0])
			hits = append(hits, h.SearchHit)
			return err
		})
	return hits, err
}

func trigramPhrase(t string) string { return `"` + strings.ReplaceAll(t, `"`, `""`) + `"` }

// searchCJKBoolean evaluates groups exactly, as the Latin path's MATCH does: a row matches when
// one group has all its positive terms and none of its negated ones. A group with CJK text is
// matched as substrings of the content (rows flagged cjk); a group of Latin words alone goes
// through the word index, since the rows it finds need not contain CJK at all. The indexes only
// propose candidates (trigram for terms of three or more characters, the CJK-flagged rows
// otherwise, the long tool rows when tool rows are asked for); the LIKE predicate decides.
// Without a score, relevance lists newest first.
func (db *DB) searchCJKBoolean(ctx context.Context, groups []fts.CJKGroup, q store.SearchQuery) ([]store.SearchHit, error) {
	var cands, preds []string
	var candArgs, predArgs []any
	var wordMatches []string
	scanCJK := false
	like := func(t string) string { return "%" + likeEscape(t) + "%" }
	for _, g := range groups {
		if !slices.ContainsFunc(g.Pos, fts.HasCJK) {
			text := strings.Join(g.Pos, " ")
			for _, n := range g.Neg {
				text += " NOT " + n
			}
			match := fts.SanitizeQuery(text)
			if match == "" {
				continue
			}
			expr := ftsExpr(match, false)
			sub := "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
			cands, candArgs = append(cands, sub), append(candArgs, expr)
			preds, predArgs = append(preds, "m.id IN ("+sub+")"), append(predArgs, expr)
			wordMatches = append(wordMatches, match)
			continue
		}
		var long []string
		pred := []string{"m.cjk = 1"}
		for _, t := range g.Pos {
			if utf8.RuneCountInString(t) >= 3 {
				long = append(long, trigramPhrase(t))
			}
			pred = append(pred, `m.content LIKE ? ESCAPE '\'`)
			predArgs = append(predArgs, like(t))
		}
		for _, t := range g.Neg {
			pred = append(pred, `m.content NOT LIKE ? ESCAPE '\'`)
			predArgs = append(predArgs, like(t))
		}
		preds = append(preds, "("+strings.Join(pred, " AND ")+")")
		if len(long) > 0 {
			cands = append(cands, "SELECT rowid FROM messages_trigram WHERE messages_trigram MATCH ?")
			candArgs = append(candArgs, strings.Join(long, " "))
		} else {
			scanCJK = true
		}
	}
	if len(preds) == 0 {
		return nil, nil
	}
	if scanCJK {
		cands = append(cands, "SELECT id FROM messages WHERE cjk = 1")
	}
	if wantsTools(q) {
		cands = append(cands, "SELECT id FROM messages WHERE role = 'tool' AND length(content) > 8192")
	}
	cond, args := searchFilters(q, false)
	var hits []store.SearchHit
	err := db.readRows(ctx, `SELECT `+hitCols+` FROM messages m JOIN sessions s ON s.id = m.session_id
		WHERE m.id IN (`+strings.Join(cands, " UNION ")+`) AND `+cond+` AND (`+strings.Join(preds, " OR ")+`)
		ORDER BY `+orderBy(q.Sort, "m.timestamp DESC, m.id DESC")+` LIMIT ? OFFSET ?`,
		append(append(append(candArgs, args...), predArgs...), q.Limit, q.Offset), func(r rowScanner) error {
			h, err := scanHit(r)
			h.Snippet = fts.CJKSnippet(h.text, groups, wordMatches)
			hits = append(hits, h.SearchHit)
			return err
		})
	return hits, err
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
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
	if fts.HasCJK(query) {
		return nil
	}
	match := fts.PlanQuery(query).Match
	if match == "" {
		return nil
	}
	if err := db.ensureIndexed(ctx); err != nil {
		return err
	}
	var n int
	return db.read().QueryRowContext(ctx, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", ftsExpr(match, false)).Scan(&n)
}
