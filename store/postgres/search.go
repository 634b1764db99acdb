package postgres

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

const (
	defaultSearchLimit = 20
	contextChars       = 200
	// rankWindow bounds how many matches are ranked by relevance: the newest rankWindow of
	// them, as on SQLite, so a common word costs the same on a large store as on a small one.
	rankWindow = 1000
)

// Search implements store.Searcher with store/sqlite's semantics: the same sanitizer, the same
// tokens (see index.go), the same CJK routing (substrings of three or more characters through
// the trigram index, shorter ones by a scan of the CJK rows; OR and NOT as groups), whole tool
// bodies for tool searches, compaction copies listed on their original, the same filters,
// sorts, paging, snippets and context. Relevance is ts_rank instead of bm25, so the order of
// equally good hits may differ between backends; the set of hits does not.
func (db *DB) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	if q.Limit <= 0 {
		q.Limit = defaultSearchLimit
	}
	q.Offset = max(q.Offset, 0)
	var hits []store.SearchHit
	var err error
	if fts.HasCJK(q.Text) {
		hits, err = db.searchCJK(ctx, q)
	} else {
		plan := fts.PlanQuery(q.Text)
		tsq := buildTSQuery(plan.Match)
		if tsq == "" {
			return nil, nil
		}
		hits, err = db.searchWords(ctx, plan, tsq, q)
	}
	if err == nil {
		err = db.describe(ctx, hits, !q.NoContext)
	}
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	return hits, nil
}

// longTool is the condition for the tool rows longer than the indexed prefix (the
// messages_long_tool index spells it the same way).
const longTool = "m.role = 'tool' AND length(m.content) > 8192"

// wantsTools reports whether q asks for tool rows by role: then tool bodies are searched whole.
func wantsTools(q store.SearchQuery) bool { return slices.Contains(q.Roles, store.RoleTool) }

// filters renders the visibility, copy, source, role, session and user filters; args continue
// after the caller's first len(args) parameters. skipLongTools leaves the long tool rows to
// the whole-body scan.
func filters(q store.SearchQuery, args []any, skipLongTools bool) (string, []any) {
	conds := []string{"(m.active OR m.compacted)", "m.copy_of IS NULL"}
	if skipLongTools {
		// octet_length first: it reads the stored size without decompressing the body, and
		// a text of at most 8,192 bytes has at most 8,192 characters.
		conds = append(conds, "NOT (m.role = 'tool' AND octet_length(m.content) > 8192 AND length(m.content) > 8192)")
	}
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

// sessionFilters reports whether filters reads the sessions table (s).
func sessionFilters(q store.SearchQuery) bool {
	return len(q.Sources) > 0 || len(q.ExcludeSources) > 0 || q.UserID != ""
}

// matchesFrom is the FROM clause of a query over messages (m) that filters' conditions for q
// can read: the sessions table (s) joined only when they read it.
func matchesFrom(q store.SearchQuery) string {
	if sessionFilters(q) {
		return "messages m JOIN sessions s ON s.id = m.session_id"
	}
	return "messages m"
}

// bm25IDF is the SQL of Okapi BM25's IDF of a unit found in df of total rows (both SQL
// expressions): ln(1 + (total - df + 0.5) / (df + 0.5)).
func bm25IDF(total, df string) string {
	return fmt.Sprintf("ln(1 + (%s - %s + 0.5) / (%s + 0.5))", total, df, df)
}

// orderBy orders hits: by the message's own timestamp for newest and oldest (imported rows are
// inserted late but dated early), id breaking ties; by rank otherwise.
func orderBy(sort store.SearchSort, rank string) string {
	switch sort {
	case store.SortNewest:
		return "m.timestamp DESC, m.id DESC"
	case store.SortOldest:
		return "m.timestamp ASC, m.id ASC"
	}
	return rank
}

const hitCols = `m.id, m.session_id, m.role, s.source, s.model, s.started_at, m.timestamp, m.active, m.compacted,
	coalesce(m.tool_name, ''), m.summary, m.content, coalesce(m.tool_calls, '')`

type hit struct {
	store.SearchHit
	text, toolText string
}

// scanHit reads hitCols, after the columns of lead when given.
func scanHit(r rowScanner, lead ...any) (hit, error) {
	var h hit
	var started, ts int64
	var calls string
	err := r.Scan(append(lead, &h.MessageID, &h.SessionID, &h.Role, &h.Source, &h.Model, &started, &ts, &h.Active, &h.Compacted,
		&h.ToolName, &h.Summary, &h.text, &calls)...)
	h.SessionStarted, h.Timestamp = fromMicros(started), fromMicros(ts)
	if calls != "" {
		// The word index holds the calls' names and argument values, not their JSON.
		if tc, derr := store.DecodeToolCalls(calls); derr == nil {
			h.toolText = fts.CallsText(tc)
		}
	}
	return h, err
}

// queryHits runs a search query with its parameters planned as values: an unnamed statement
// (pgx's exec mode), which PostgreSQL plans at bind time for the query's own tsquery or
// pattern. A prepared statement would switch to a generic plan after five runs, and the
// generic plan for "newest matches of $1" walks the primary key backwards testing every row's
// tsvector: right for a common word, a scan of the whole table for a rare phrase (224 ms
// instead of 16 on the benchmark's 66,000 rows).
func (db *DB) queryHits(ctx context.Context, query string, args []any) ([]hit, error) {
	rows, err := db.pool.Query(ctx, query, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hit, error) { return scanHit(r) })
}

// searchWords ranks the newest rankWindow matches that pass the filters (GIN on the tsvector),
// or orders every match by timestamp; a tool search adds the long tool rows whose whole bodies
// match, after the ranked hits (relevance) or merged by time.
func (db *DB) searchWords(ctx context.Context, plan fts.Query, tsq string, q store.SearchQuery) ([]store.SearchHit, error) {
	match := plan.Match
	want := q.Offset + q.Limit
	tools := wantsTools(q)
	var hits []hit
	var err error
	switch {
	case q.Sort == store.SortRelevance && plan.Ranked():
		var ok bool
		if hits, ok, err = db.rankedAtSize(ctx, plan, q, tools); err == nil && !ok {
			hits, err = db.rankedUnits(ctx, plan, tsq, q, tools)
		}
	case q.Sort == store.SortRelevance:
		hits, err = db.rankedWindow(ctx, match, tsq, q, tools)
	default:
		cond, args := filters(q, []any{tsq}, tools)
		args = append(args, want)
		hits, err = db.queryHits(ctx, `SELECT `+hitCols+` FROM messages m JOIN sessions s ON s.id = m.session_id
			WHERE m.tsv @@ $1::tsquery AND `+cond+` ORDER BY `+orderBy(q.Sort, "")+fmt.Sprintf(` LIMIT $%d`, len(args)), args)
	}
	if err != nil {
		return nil, err
	}
	if tools {
		long, err := db.scanLongTools(ctx, fts.LikeGroups(match), q, want)
		if err != nil {
			return nil, err
		}
		hits = mergeHits(hits, long, q.Sort)
	}
	hits = hits[min(q.Offset, len(hits)):min(want, len(hits))]
	out := make([]store.SearchHit, len(hits))
	for i, h := range hits {
		h.Snippet = fts.WordSnippet(h.text, h.toolText, match)
		h.Terms = fts.MatchedTerms(match, h.text, h.toolText)
		out[i] = h.SearchHit
	}
	return out, nil
}

// rankedUnits returns the ranked page (up to Offset+Limit hits) of a plain-words query of
// several units (fts.Query.Ranked): the newest fts.UnitsWindow matches of their OR that pass
// q's filters, scored as
// BM25 scores on SQLite: the sum over the units a row matches of the unit's IDF (from how many
// of the matches hold it, against the table's size as its highest id, which only appends move:
// the planner's row estimate changes with every ANALYZE, and a page would with it) times its frequency in the row (ts_rank,
// a row's stems weighing what its words weigh, normalized by the row's length).
func (db *DB) rankedUnits(ctx context.Context, plan fts.Query, tsq string, q store.SearchQuery, tools bool) ([]hit, error) {
	cond, args := filters(q, []any{tsq}, tools)
	var counts, score []string
	for i, u := range plan.Units {
		uq := buildTSQuery(u)
		if uq == "" {
			continue
		}
		args = append(args, uq, rankTSQuery(u))
		n := len(args)
		counts = append(counts, fmt.Sprintf("count(*) FILTER (WHERE tsv @@ $%d::tsquery) AS n%d", n-1, i))
		score = append(score, fmt.Sprintf(`ts_rank('{0.1, 0.1, 0.4, 1.0}', c.tsv, $%d::tsquery, 1) * %s`,
			n, bm25IDF("greatest(d.total, d.n)", fmt.Sprintf("d.n%d", i))))
	}
	args = append(args, fts.UnitsWindow+q.Offset, q.Offset+q.Limit)
	from := matchesFrom(q)
	query := `WITH c AS (SELECT m.id, m.tsv FROM ` + from + ` WHERE m.tsv @@ $1::tsquery AND ` + cond +
		fmt.Sprintf(` ORDER BY m.id DESC LIMIT $%d`, len(args)-1) + `),
		d AS (SELECT count(*) AS n, ` + strings.Join(counts, ", ") + `,
			(SELECT coalesce(max(id), 0) FROM messages) AS total FROM c),
		page AS (SELECT c.id, ` + strings.Join(score, " + ") + ` AS rank FROM c, d
			ORDER BY rank DESC, c.id LIMIT $` + fmt.Sprint(len(args)) + `)
		SELECT ` + hitCols + ` FROM page JOIN messages m ON m.id = page.id JOIN sessions s ON s.id = m.session_id
		ORDER BY page.rank DESC, m.id`
	return db.queryHits(ctx, query, args)
}

// rankedWindow returns the ranked page (up to Offset+Limit hits) of the newest rankWindow matches
// of tsq that pass q's filters. GIN finds a word's matches but cannot order them, so for a word
// in a few percent of the rows PostgreSQL reads the primary key backwards, testing every row
// until the window is full: about 1,000/f rows for a word in a fraction f of them (8,600–11,900
// buffers a query for the benchmark's words in 7–10% of its 66,000 rows, W3's most expensive
// queries). For such a word the window is first looked for among the newest ids: the query is
// bounded by m.id > lo and planned without plain index scans (queryWindow), so PostgreSQL ANDs
// the GIN bitmap with a primary-key range and reads only the matches in the range. The range is
// sized from the query's estimated frequency (matchFraction over the column's statistics,
// pg_stats.most_common_elems) to hold the window with a margin. When it does hold the whole
// window, the window is the unbounded query's (every match outside the range is older than each
// of the rankWindow in it), and so is the page ranked from it; when it does not, the unbounded
// query runs. Words in most rows (the backward scan stops soon) and rare ones (GIN's bitmap
// holds few rows) go unbounded at once, as before.
func (db *DB) rankedWindow(ctx context.Context, match, tsq string, q store.SearchQuery, tools bool) ([]hit, error) {
	want := q.Offset + q.Limit
	window := cmp.Or(db.opts.rankWindow, rankWindow) + q.Offset
	var top, span int64
	if span = db.opts.searchSpan; span == 0 {
		var err error
		if span, top, err = db.firstRange(ctx, match, window); err != nil {
			return nil, err
		}
	} else if span > 0 {
		var err error
		if top, err = db.topID(ctx); err != nil {
			return nil, err
		}
	}
	for {
		bounded := span > 0 && top-span > 0
		cond, args := filters(q, []any{tsq}, tools)
		if bounded {
			args = append(args, top-span)
			cond += fmt.Sprintf(" AND m.id > $%d", len(args))
		}
		n := len(args)
		args = append(args, window, want)
		// The window is the newest matches' ids and ranks. Under the backward primary-key scan
		// only the rows the limit keeps are ranked; under a bitmap scan every match is ranked
		// before the sort, which costs less than sorting the matches' tsvectors to rank them
		// afterwards (those sorts spilled to disk for a phrase with 2,541 matches: 17 ms of
		// server CPU against 7.8). The page is cut before the rows are joined again (joining
		// the whole window let the planner read every row of messages to keep 20). The sessions
		// table is joined only for filters that read it: every message has its session. Each
		// row also carries the window's size, which says whether a bounded pass found all of it.
		from := matchesFrom(q)
		query := `WITH w AS (SELECT m.id, ts_rank(m.tsv, $1::tsquery) AS rank FROM ` + from + `
			WHERE m.tsv @@ $1::tsquery AND ` + cond + fmt.Sprintf(` ORDER BY m.id DESC LIMIT $%d),
			page AS (SELECT id, rank FROM w ORDER BY rank DESC, id LIMIT $%d)
			SELECT (SELECT count(*) FROM w), `, n+1, n+2) + hitCols + ` FROM page JOIN messages m ON m.id = page.id
			JOIN sessions s ON s.id = m.session_id
			ORDER BY page.rank DESC, m.id`
		var found int64
		hits, err := db.queryWindow(ctx, query, args, bounded, &found)
		if err != nil {
			return nil, err
		}
		if db.opts.onPass != nil {
			lo := int64(0)
			if bounded {
				lo = top - span
			}
			db.opts.onPass(lo, found)
		}
		if !bounded || found >= int64(window) {
			return hits, nil
		}
		if db.opts.searchSpan > 0 {
			// Tests: ranges that widen step by step, so some fill and some do not.
			span *= 4
			continue
		}
		span = 0 // the range did not hold the window: the unbounded query
	}
}

// planBitmap turns off plain index scans for the rest of the transaction, and makes a prepared
// statement planned for its own parameters (pgx prepares a batch's statements in its default
// exec mode). Both settings are transaction-local (set_config's third argument), so nothing
// outlives the batch's implicit transaction: pooler-safe.
const planBitmap = `SELECT set_config('enable_indexscan', 'off', true), set_config('plan_cache_mode', 'force_custom_plan', true)`

// queryWindow runs a ranked search query whose rows start with the window's size (read into
// found) and then hitCols. A bounded pass runs with planBitmap in the same implicit transaction
// (one round trip, pipelined): for a word in a few percent of the rows PostgreSQL keeps the
// backward primary-key scan even with the range (it expects to stop early), and that scan reads
// every row, match or not, from the newest down to the window's last match (8,606 buffers for
// "column", in 9% of the benchmark's rows); without plain index scans it ANDs the word's GIN
// bitmap with the range's primary-key bitmap and reads only the matches in the range (1,297).
func (db *DB) queryWindow(ctx context.Context, query string, args []any, bounded bool, found *int64) ([]hit, error) {
	scan := func(r pgx.CollectableRow) (hit, error) { return scanHit(r, found) }
	if !bounded {
		rows, err := db.pool.Query(ctx, query, append([]any{pgx.QueryExecModeExec}, args...)...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, scan)
	}
	b := &pgx.Batch{}
	b.Queue(planBitmap)
	b.Queue(query, args...)
	br := db.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	hits, err := pgx.CollectRows(rows, scan)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return hits, err
}

// Bounds of the frequency-sized first range: a word in at least maxBoundedFraction of the rows
// is left to the backward scan, and a range that would cover more than maxRangeShare of the ids
// is not worth a pass of its own.
const (
	maxBoundedFraction = 0.15
	maxRangeShare      = 0.5
	rangeMargin        = 1.5
)

// firstRange returns the first id span of a ranked search for match (0: unbounded) and, when
// it is bounded, the highest id it counts back from.
func (db *DB) firstRange(ctx context.Context, match string, window int) (span, top int64, err error) {
	stats := db.words.get(ctx, db.pool, db.opts.Logger)
	if len(stats.freq) == 0 {
		// No statistics yet: the table was never analyzed (a fresh or freshly loaded store,
		// before autovacuum's first ANALYZE, which waits for its next round: up to a minute and
		// more). Until then every search runs unbounded and the planner knows nothing of the
		// words either. When the table is large enough for a bounded pass to matter, this
		// search analyzes it (once per handle and wordStatsAge).
		if top, err = db.topID(ctx); err != nil {
			return 0, 0, err
		}
		if top < analyzeRows*int64(window) {
			return 0, 0, nil
		}
		if stats = db.words.analyze(ctx, db.pool, db.opts.Logger); len(stats.freq) == 0 {
			return 0, 0, nil
		}
	}
	f := matchFraction(match, stats.fraction)
	if f <= 0 || f >= maxBoundedFraction {
		return 0, 0, nil
	}
	if top == 0 {
		if top, err = db.topID(ctx); err != nil {
			return 0, 0, err
		}
	}
	span = int64(float64(window) * rangeMargin / f)
	if float64(span) > float64(top)*maxRangeShare {
		return 0, 0, nil
	}
	return span, top, nil
}

// wordStats caches the word index's element statistics (refreshed once a minute at most).
type wordStats struct {
	mu   sync.Mutex
	at   time.Time
	snap wordSnapshot
	// amu is held while this handle runs ANALYZE (0.3–0.7 s): a search that finds it held
	// does not wait for it, and mu is not held meanwhile, so the other searches read the
	// statistics there are (none yet: they run unbounded) instead of queueing behind it.
	amu      sync.Mutex
	analyzed time.Time // the last ANALYZE this handle ran for want of statistics (under amu)
}

// analyzeRows: a ranked search analyzes a table without statistics when its ids span at least
// analyzeRows windows. A bounded pass needs a word in under maxBoundedFraction of the rows,
// whose window (with rangeMargin) then takes more than 10 windows of ids, to fit in
// maxRangeShare of them: below 20 windows no word gets one.
const analyzeRows = 20

// analyze runs ANALYZE on messages and reads the statistics again, at most once per
// wordStatsAge (a table still without statistics afterwards is searched unbounded). ANALYZE
// samples the table (0.3–0.7 s for the benchmark's 66,000 rows, paid once by one search, which
// the handle's other searches do not wait for: they run unbounded meanwhile); it
// takes a lock that lets reads and writes through and waits only for a VACUUM or ANALYZE already
// running (autovacuum's gives way). A failure (a role without the right to analyze the table) is
// logged and the searches run unbounded, as before.
func (w *wordStats) analyze(ctx context.Context, q querier, log *slog.Logger) wordSnapshot {
	if !w.amu.TryLock() {
		return w.current() // another search of this handle is analyzing: this one does not wait
	}
	defer w.amu.Unlock()
	if !w.analyzed.IsZero() && time.Since(w.analyzed) < wordStatsAge {
		return w.current()
	}
	w.analyzed = time.Now()
	if _, err := q.Exec(ctx, "ANALYZE messages"); err != nil {
		if ctx.Err() == nil {
			log.Warn("search: analyze messages for the word index's statistics", "err", err)
		}
		return w.current()
	}
	snap, err := readWordStats(ctx, q)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("search: read the word index's statistics", "err", err)
		}
		return w.current()
	}
	w.mu.Lock()
	w.snap, w.at = snap, time.Now()
	w.mu.Unlock()
	return snap
}

// current returns the statistics held now, without reading them again.
func (w *wordStats) current() wordSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snap
}

type wordSnapshot struct {
	freq map[string]float64 // lexeme: fraction of rows holding it
	min  float64            // the least frequency kept; rarer lexemes are not listed
}

const wordStatsAge = time.Minute

// get returns the statistics, read again when they are older than wordStatsAge. They only size
// a search's first range, so a failure to read them is logged and the searches run unbounded
// until the next attempt.
func (w *wordStats) get(ctx context.Context, q querier, log *slog.Logger) wordSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.at.IsZero() && time.Since(w.at) < wordStatsAge {
		return w.snap
	}
	snap, err := readWordStats(ctx, q)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("search: read the word index's statistics", "err", err)
			w.snap, w.at = wordSnapshot{}, time.Now()
		}
		return wordSnapshot{}
	}
	w.snap, w.at = snap, time.Now()
	return snap
}

// readWordStats reads the most common lexemes of messages.tsv with the fraction of rows holding
// each, and the least fraction listed (pg_stats: the three numbers after the elements' are the
// least, the greatest and the null fraction). Empty before the table's first ANALYZE.
func readWordStats(ctx context.Context, q querier) (wordSnapshot, error) {
	rows, err := q.Query(ctx, `SELECT e, f, s.most_common_elem_freqs[array_length(s.most_common_elem_freqs, 1) - 2]
		FROM pg_stats s, unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS u(e, f)
		WHERE s.schemaname = current_schema() AND s.tablename = 'messages' AND s.attname = 'tsv' AND e IS NOT NULL`)
	if err != nil {
		return wordSnapshot{}, err
	}
	snap := wordSnapshot{freq: map[string]float64{}}
	var e string
	var f, least float64
	if _, err := pgx.ForEachRow(rows, []any{&e, &f, &least}, func() error {
		snap.freq[e], snap.min = f, least
		return nil
	}); err != nil {
		return wordSnapshot{}, err
	}
	return snap, nil
}

// fraction estimates the share of rows holding tok (any lexeme starting with tok for a prefix).
func (s wordSnapshot) fraction(tok string, prefix bool) float64 {
	if !prefix {
		if f, ok := s.freq[tok]; ok {
			return f
		}
		return s.min / 2
	}
	sum := 0.0
	for e, f := range s.freq {
		if strings.HasPrefix(e, tok) {
			sum += f
		}
	}
	return min(1, max(sum, s.min/2))
}

// matchFraction estimates the share of rows a sanitized match expression (the one buildTSQuery
// translates) finds, as if its tokens occurred independently: a phrase or a run of terms as the
// product of its tokens' fractions, AND as the product, OR as the sum, NOT as the left side's
// share of the rows without the right side. Only the size of a search's first range depends on
// it. Too high an estimate costs a bounded pass that does not fill (the min of the tokens, used
// at first, did that for most two-word phrases); too low a one a larger range or none.
func matchFraction(match string, fraction func(tok string, prefix bool) float64) float64 {
	acc, run := -1.0, -1.0
	op := ""
	flush := func() {
		if run < 0 {
			return
		}
		switch {
		case acc < 0:
			acc = run
		case op == "|":
			acc = min(1, acc+run)
		case op == "& !":
			acc *= 1 - run
		default:
			acc *= run
		}
		run, op = -1, ""
	}
	fts.WalkMatch(match, func(t fts.Term) {
		toks := tokens(t.Text)
		for i, tok := range toks {
			f := fraction(tok, t.Prefix && i == len(toks)-1)
			if run < 0 {
				run = 1
			}
			run *= f
		}
	}, func(o string) {
		flush()
		if acc >= 0 {
			op = tsOperators[o]
		}
	})
	flush()
	return acc
}

// topID is the highest message id: the bounded passes of rankedWindow count back from it. Any
// value is correct (a stale one only makes a range hold more or fewer rows); this one is read
// from the primary key's last entry.
func (db *DB) topID(ctx context.Context) (int64, error) {
	var top *int64
	if err := db.pool.QueryRow(ctx, "SELECT max(id) FROM messages").Scan(&top); err != nil {
		return 0, err
	}
	if top == nil {
		return 0, nil
	}
	return *top, nil
}

// mergeHits puts the whole-body scan's hits after the ranked ones, or merges both by time.
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

// likeExpr renders substring groups as SQL over m: a term occurs in the content or tool name.
func likeExpr(groups [][]fts.LikeTerm, args []any) (string, []any) {
	var ors []string
	for _, g := range groups {
		var ands []string
		for _, t := range g {
			args = append(args, "%"+likeEscape(cleanNUL(t.Text))+"%")
			e := fmt.Sprintf(`(m.content ILIKE $%d OR coalesce(m.tool_name, '') ILIKE $%d)`, len(args), len(args))
			if t.Neg {
				e = "NOT " + e
			}
			ands = append(ands, e)
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

// scanLongTools reads the whole bodies of the tool rows longer than the indexed prefix (a partial
// index lists only them), newest first (oldest first for SortOldest), up to limit.
func (db *DB) scanLongTools(ctx context.Context, groups [][]fts.LikeTerm, q store.SearchQuery, limit int) ([]hit, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	fq := q
	fq.Roles = nil // every long row is a tool row
	cond, args := filters(fq, nil, false)
	like, args := likeExpr(groups, args)
	order := "m.timestamp DESC, m.id DESC"
	if q.Sort == store.SortOldest {
		order = "m.timestamp ASC, m.id ASC"
	}
	args = append(args, limit)
	return db.queryHits(ctx, `SELECT `+hitCols+` FROM messages m JOIN sessions s ON s.id = m.session_id
		WHERE `+longTool+` AND `+cond+` AND `+like+` ORDER BY `+order+fmt.Sprintf(` LIMIT $%d`, len(args)), args)
}

// searchCJK finds substrings. A plain query (terms all required) takes the fast path: terms of
// three or more characters through the trigram index on the CJK rows' indexed text, shorter ones
// by ILIKE over those rows' content. OR, NOT or a tool search take the boolean path.
func (db *DB) searchCJK(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	groups := fts.CJKGroups(q.Text)
	if len(groups) == 0 {
		return nil, nil
	}
	if len(groups) > 1 || len(groups[0].Neg) > 0 || wantsTools(q) {
		return db.searchCJKBoolean(ctx, groups, q)
	}
	terms := groups[0].Pos
	cond, args := filters(q, nil, false)
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
		h.Snippet = fts.SubstringSnippet(h.text, terms[0])
		out[i] = h.SearchHit
	}
	return out, nil
}

// searchCJKBoolean evaluates the groups exactly: a row matches when one group has all its
// positive terms and none of its negated ones. A group with CJK text is matched as substrings
// of the content of CJK rows; a group of Latin words alone through the word index. Without a
// score, relevance lists newest first.
func (db *DB) searchCJKBoolean(ctx context.Context, groups []fts.CJKGroup, q store.SearchQuery) ([]store.SearchHit, error) {
	cond, args := filters(q, nil, false)
	var preds, wordMatches []string
	for _, g := range groups {
		if !slices.ContainsFunc(g.Pos, fts.HasCJK) {
			text := strings.Join(g.Pos, " ")
			for _, n := range g.Neg {
				text += " NOT " + n
			}
			expr := fts.SanitizeQuery(text)
			tsq := buildTSQuery(expr)
			if tsq == "" {
				continue
			}
			args = append(args, tsq)
			preds = append(preds, fmt.Sprintf("m.tsv @@ $%d::tsquery", len(args)))
			wordMatches = append(wordMatches, expr)
			continue
		}
		pred := []string{"m.cjk_text IS NOT NULL"}
		for _, t := range g.Pos {
			args = append(args, "%"+likeEscape(cleanNUL(t))+"%")
			pred = append(pred, fmt.Sprintf("m.content ILIKE $%d", len(args)))
		}
		for _, t := range g.Neg {
			args = append(args, "%"+likeEscape(cleanNUL(t))+"%")
			pred = append(pred, fmt.Sprintf("m.content NOT ILIKE $%d", len(args)))
		}
		preds = append(preds, "("+strings.Join(pred, " AND ")+")")
	}
	if len(preds) == 0 {
		return nil, nil
	}
	n := len(args)
	args = append(args, q.Limit, q.Offset)
	hits, err := db.queryHits(ctx, `SELECT `+hitCols+` FROM messages m JOIN sessions s ON s.id = m.session_id
		WHERE `+cond+` AND (`+strings.Join(preds, " OR ")+`)
		ORDER BY `+orderBy(q.Sort, "m.timestamp DESC, m.id DESC")+fmt.Sprintf(` LIMIT $%d OFFSET $%d`, n+1, n+2), args)
	if err != nil {
		return nil, err
	}
	out := make([]store.SearchHit, len(hits))
	for i, h := range hits {
		h.Snippet = fts.CJKSnippet(h.text, groups, wordMatches)
		out[i] = h.SearchHit
	}
	return out, nil
}

// describeSQL reads, for each hit of a page, the compaction copies of its message that are
// still visible and (with context) its visible neighbours within its session: one round trip
// for the page, where a query each for copies, neighbour ids and neighbour rows made three
// (each a wake-up of the server process, which costs most on a busy machine).
const (
	describeCopies = `SELECT h.id, cp.ids, cp.act%s
		FROM unnest($1::bigint[], $2::text[]) AS h(id, sid)
		LEFT JOIN LATERAL (SELECT array_agg(c.id ORDER BY c.id) AS ids, array_agg(c.active ORDER BY c.id) AS act
			FROM messages c WHERE c.copy_of = h.id AND (c.active OR c.compacted)) cp ON true%s`
	describeContextCols = `, b.id, b.role, b.content, a.id, a.role, a.content`
	describeContext     = `
		LEFT JOIN LATERAL (SELECT m.id, m.role, left(m.content, $3) AS content FROM messages m
			WHERE m.session_id = h.sid AND (m.active OR m.compacted) AND m.id < h.id ORDER BY m.id DESC LIMIT 1) b ON true
		LEFT JOIN LATERAL (SELECT m.id, m.role, left(m.content, $3) AS content FROM messages m
			WHERE m.session_id = h.sid AND (m.active OR m.compacted) AND m.id > h.id ORDER BY m.id LIMIT 1) a ON true`
)

var (
	describeSQL        = fmt.Sprintf(describeCopies, "", "")
	describeContextSQL = fmt.Sprintf(describeCopies, describeContextCols, describeContext)
)

// describe lists each hit's visible compaction copies and, with context, attaches its visible
// neighbours within its session.
func (db *DB) describe(ctx context.Context, hits []store.SearchHit, context bool) error {
	if len(hits) == 0 {
		return nil
	}
	at := make(map[int64]int, len(hits))
	ids := make([]int64, len(hits))
	sids := make([]string, len(hits))
	for i, h := range hits {
		at[h.MessageID], ids[i], sids[i] = i, h.MessageID, h.SessionID
	}
	var rows pgx.Rows
	var err error
	if context {
		rows, err = db.pool.Query(ctx, describeContextSQL, ids, sids, contextChars)
	} else {
		rows, err = db.pool.Query(ctx, describeSQL, ids, sids)
	}
	if err != nil {
		return err
	}
	var id int64
	var copyIDs []int64
	var copyActive []bool
	var bID, aID *int64
	var bRole, bText, aRole, aText *string
	dest := []any{&id, &copyIDs, &copyActive}
	if context {
		dest = append(dest, &bID, &bRole, &bText, &aID, &aRole, &aText)
	}
	line := func(id *int64, role, text *string) *store.ContextLine {
		if id == nil {
			return nil
		}
		return &store.ContextLine{MessageID: *id, Role: *role, Content: *text}
	}
	_, err = pgx.ForEachRow(rows, dest, func() error {
		i, ok := at[id]
		if !ok {
			return nil
		}
		for j, c := range copyIDs {
			hits[i].Copies = append(hits[i].Copies, store.SearchCopy{MessageID: c, Active: copyActive[j]})
		}
		if context {
			hits[i].Before, hits[i].After = line(bID, bRole, bText), line(aID, aRole, aText)
		}
		return nil
	})
	return err
}

// CheckMatch reports whether the engine refuses the translated form of query (a non-nil error);
// benchmarks count these as engine rejections. CJK queries never reach the tsquery parser.
func (db *DB) CheckMatch(ctx context.Context, query string) error {
	if fts.HasCJK(query) {
		return nil
	}
	tsq := buildTSQuery(fts.PlanQuery(query).Match)
	if tsq == "" {
		return nil
	}
	var n int
	return db.pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE tsv @@ $1::tsquery", tsq).Scan(&n)
}
