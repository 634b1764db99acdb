package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

// unitFreqs estimates how many rows each unit of plan matches, from the word index's
// statistics (the fraction of rows holding each of its lexemes, matchFraction) times the
// store's highest id; a unit rarer than every lexeme listed counts as rare. ok is false when there are no statistics (a store never analyzed, and too
// small for a search to analyze it: firstRange's rule), or the store is smaller than
// analyzeRows budgets of rows.
func (db *DB) unitFreqs(ctx context.Context, plan fts.Query) (dfs []int64, top int64, ok bool, err error) {
	if top, err = db.topID(ctx); err != nil || top < analyzeRows*int64(fts.CandidateBudget) {
		// A store this small ranks every match (its statistics, sampled, would say little).
		return nil, 0, false, err
	}
	stats := db.words.get(ctx, db.pool, db.opts.Logger)
	if len(stats.freq) == 0 {
		if stats = db.words.analyze(ctx, db.pool, db.opts.Logger); len(stats.freq) == 0 {
			return nil, 0, false, nil
		}
	}
	for _, u := range plan.Units {
		f := unitFraction(u, stats)
		df := int64(f * float64(top))
		if f < stats.min {
			// Rarer than every lexeme the statistics list: a rare unit (its estimate is only
			// a bound, and reading its matches to count them costs what ranking them does).
			df = min(df, fts.CandidateBudget)
		}
		dfs = append(dfs, df)
	}
	return dfs, top, true, nil
}

// unitFraction estimates the share of rows a unit matches: a bare word by its stem's share or
// its own, whichever is larger (the tsvector holds the stems of a row's words beside the words:
// latencies finds every row of latency through latenc), anything else by matchFraction.
func unitFraction(unit string, stats wordSnapshot) float64 {
	f := matchFraction(unit, stats.fraction)
	fts.WalkMatch(unit, func(t fts.Term) {
		if toks := fts.Tokens(t.Text); !t.Exact() && len(toks) == 1 {
			if st := fts.Stem(toks[0]); st != "" {
				f = max(f, stats.fraction(st, false))
			}
		}
	}, func(string) {})
	return f
}

// rankedAtSize is store/sqlite's rankedAtSize on PostgreSQL: when some of a plain-words query's
// units are common (fts.Proposers over unitFreqs), the candidates are the rare units' matches
// (the GIN bitmap of their OR: no row outside it is read), scored by every unit as rankedUnits
// scores, the common units' IDF from the statistics. When every unit is common, the candidates
// are the matches of their OR among the newest ids, as far back as each unit's newest
// fts.CandidateBudget matches reach by its frequency; the best fts.RerankDepth of them by the
// units they hold (summed IDF, newest first among equals) are ranked. ok is false when every
// unit is rare or nothing is known of their frequencies: rankedUnits ranks those.
func (db *DB) rankedAtSize(ctx context.Context, plan fts.Query, q store.SearchQuery, tools bool) (hits []hit, ok bool, err error) {
	dfs, top, known, err := db.unitFreqs(ctx, plan)
	if err != nil || !known {
		return nil, false, err
	}
	propose := fts.Proposers(dfs)
	if !slices.Contains(propose, false) {
		return nil, false, nil
	}
	var rare []string
	var span int64
	for i, u := range plan.Units {
		if propose[i] {
			rare = append(rare, u)
		} else if s := int64(float64(fts.CandidateBudget) * float64(top) / float64(dfs[i])); span == 0 || s < span {
			span = s // the ids every common unit's newest matches reach
		}
	}
	candidates := plan.Match
	if len(rare) > 0 {
		candidates, span = strings.Join(rare, " OR "), 0
	}
	cond, args := filters(q, []any{buildTSQuery(candidates)}, tools)
	if span > 0 && span < top {
		args = append(args, top-span)
		cond += fmt.Sprintf(" AND m.id > $%d", len(args))
	}
	var held, score []string
	for i, u := range plan.Units {
		uq := buildTSQuery(u)
		if uq == "" {
			continue
		}
		args = append(args, uq, rankTSQuery(u))
		n := len(args)
		// A rare unit's matches are all candidates: its frequency is counted among them.
		df := fmt.Sprintf("(SELECT count(*) FROM c WHERE tsv @@ $%d::tsquery)", n-1)
		if !propose[i] {
			args = append(args, dfs[i])
			df = fmt.Sprintf("$%d::float8", len(args))
		}
		idf := bm25IDF(fmt.Sprint(max(top, dfs[i])), df)
		held = append(held, fmt.Sprintf("(tsv @@ $%d::tsquery)::int * %s", n-1, idf))
		score = append(score, fmt.Sprintf("ts_rank('{0.1, 0.1, 0.4, 1.0}', tsv, $%d::tsquery, 1) * %s", n, idf))
	}
	want := q.Offset + q.Limit
	args = append(args, max(fts.RerankDepth, want*3+10), want)
	from := matchesFrom(q)
	query := `WITH c AS MATERIALIZED (SELECT m.id, m.tsv FROM ` + from + ` WHERE m.tsv @@ $1::tsquery AND ` + cond + `),
		best AS (SELECT id, tsv FROM c ORDER BY ` + strings.Join(held, " + ") + fmt.Sprintf(` DESC, id DESC LIMIT $%d),
		page AS (SELECT id, `, len(args)-1) + strings.Join(score, " + ") + fmt.Sprintf(` AS rank FROM best ORDER BY rank DESC, id LIMIT $%d)
		SELECT 0::bigint, `, len(args)) + hitCols + ` FROM page JOIN messages m ON m.id = page.id JOIN sessions s ON s.id = m.session_id
		ORDER BY page.rank DESC, m.id`
	var found int64
	hits, err = db.queryWindow(ctx, query, args, true, &found)
	return hits, err == nil, err
}
