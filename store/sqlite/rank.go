package sqlite

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

// unitMatches are a unit's newest matches (at most fts.CandidateBudget+1, newest first) and its
// document frequency: exact when the list holds them all, else estimated from how far back the
// list reaches.
type unitMatches struct {
	ids []int64
	df  int64
}

// complete reports whether ids holds every match of the unit.
func (u unitMatches) complete() bool { return len(u.ids) <= fts.CandidateBudget }

// rankedAtSize ranks a plain-words query of several units on a store where some of them are
// common (fts.Proposers): the rare units' matches are the candidates, ranked by bm25 over the
// rare units, and the best fts.RerankDepth of them are scored again with the common units too
// (fts.BM25 over the row's words). When every unit is common the candidates are the newest
// matches of their OR, as far back as each unit's newest fts.CandidateBudget matches reach, best
// first by the units they hold, and the best fts.RerankDepth are scored with every unit. ok is
// false when every unit is rare (bm25 over the OR then costs little: the caller ranks it) or
// when q's filters leave too few of the read candidates.
func (db *DB) rankedAtSize(ctx context.Context, plan fts.Query, q store.SearchQuery) (hits []hit, ok bool, err error) {
	matches := map[string]unitMatches{}
	dfs := make([]int64, len(plan.Units))
	var top int64
	for i, u := range plan.Units {
		m, seen := matches[u]
		if !seen {
			if m, top, err = db.unitMatches(ctx, u, top); err != nil {
				return nil, false, err
			}
			matches[u] = m
		}
		dfs[i] = m.df
	}
	propose := fts.Proposers(dfs)

	if !slices.Contains(propose, false) {
		return nil, false, nil
	}
	var rare, common []string
	for i, u := range plan.Units {
		if propose[i] {
			rare = append(rare, u)
		} else {
			common = append(common, u)
		}
	}
	depth := max(fts.RerankDepth, (q.Offset+q.Limit)*3+10)
	idf := func(u string) float64 { return fts.IDF(float64(top), float64(matches[u].df)) }
	var ids []int64
	var base map[int64]float64
	if len(rare) > 0 {
		ids, base, err = db.rankRare(ctx, rare, common, idf, depth)
	} else {
		ids = commonCandidates(plan.Units, matches, idf, depth)
	}
	if err != nil {
		return nil, false, err
	}
	if hits, err = db.describeHits(ctx, ids, q); err != nil {
		return nil, false, err
	}
	if len(hits) < q.Offset+q.Limit && len(ids) == depth {
		return nil, false, nil // the filters ate the candidates: the caller ranks the filtered set
	}
	rescore(hits, base, common, idf)
	return hits, true, nil
}

// unitMatches reads the newest fts.CandidateBudget+1 matches of unit. top is the store's
// highest message id (0: not read yet, read here and returned).
func (db *DB) unitMatches(ctx context.Context, unit string, top int64) (unitMatches, int64, error) {
	ids, err := readColumn[int64](ctx, db, `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?
		ORDER BY rowid DESC LIMIT ?`, ftsExpr(unit, true), fts.CandidateBudget+1)
	if err != nil {
		return unitMatches{}, top, err
	}
	if top == 0 {
		var tops []int64
		if tops, err = readColumn[int64](ctx, db, `SELECT coalesce(max(id), 0) FROM messages`); err != nil {
			return unitMatches{}, top, err
		}
		top = tops[0]
	}
	m := unitMatches{ids: ids, df: int64(len(ids))}
	if !m.complete() {
		// The newest matches spread over (last, top]: the same density over the whole store.
		last := ids[len(ids)-1]
		m.df = int64(float64(len(ids)) * float64(top) / float64(max(top-last+1, 1)))
	}
	return m, top, nil
}

// rankRare ranks every match of the rare units' OR by their bm25 plus the IDF of each common
// unit it holds (one query a common unit: the rare matches that also match it, which FTS5 finds
// by seeking the common unit's list to each of them, not by reading it), and returns the best
// depth of them with their rare units' bm25 (higher is better).
func (db *DB) rankRare(ctx context.Context, rare, common []string, idf func(string) float64, depth int) ([]int64, map[int64]float64, error) {
	rareExpr := ftsExpr(strings.Join(rare, " OR "), true)
	base := map[int64]float64{}
	err := db.readRows(ctx, `SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ?`, []any{rareExpr}, func(r rowScanner) error {
		var id int64
		var rank float64
		err := r.Scan(&id, &rank)
		base[id] = -rank
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	score := maps.Clone(base)
	seen := map[string]bool{}
	for _, u := range common {
		if seen[u] {
			continue
		}
		seen[u] = true
		held, err := readColumn[int64](ctx, db, `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?`,
			"("+rareExpr+") AND "+ftsExpr(u, true))
		if err != nil {
			return nil, nil, err
		}
		w := idf(u) * float64(strings.Count(" "+strings.Join(common, " ")+" ", " "+u+" "))
		for _, id := range held {
			score[id] += w
		}
	}
	return best(score, depth), base, nil
}

// best returns the depth ids of the highest scores, newest first among equals.
func best(score map[int64]float64, depth int) []int64 {
	ids := make([]int64, 0, len(score))
	for id := range score {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int64) int { return cmp.Or(cmp.Compare(score[b], score[a]), cmp.Compare(b, a)) })
	return ids[:min(depth, len(ids))]
}

// commonCandidates returns the best depth of the newest matches of units' OR, every unit common:
// the rows newer than the oldest id any unit's list reaches (so each list tells for each of
// them whether it holds the unit), by the summed IDF of the units they hold, newest first
// among equals.
func commonCandidates(units []string, matches map[string]unitMatches, idf func(string) float64, depth int) []int64 {
	var cutoff int64
	for _, m := range matches {
		if len(m.ids) > 0 {
			cutoff = max(cutoff, m.ids[len(m.ids)-1])
		}
	}
	score := map[int64]float64{}
	for _, u := range units {
		w := idf(u)
		for _, id := range matches[u].ids {
			if id < cutoff {
				break
			}
			score[id] += w
		}
	}
	return best(score, depth)
}

// rescore adds to each hit's base score (its rare units' bm25; none when every unit is common)
// the BM25 of each of units over the hit's words, and sorts the hits best first.
func rescore(hits []hit, base map[int64]float64, units []string, idf func(string) float64) {
	docs := make([]fts.Doc, len(hits))
	total := 0
	for i, h := range hits {
		docs[i] = fts.NewDoc(fts.IndexedText(h.Role, h.text), h.ToolName, h.toolText)
		total += docs[i].Len()
	}
	avgdl := float64(total) / float64(max(len(hits), 1))
	score := make(map[int64]float64, len(hits))
	for i, h := range hits {
		s := base[h.MessageID]
		for _, u := range units {
			s += fts.BM25(idf(u), float64(docs[i].Count(u)), float64(docs[i].Len()), avgdl)
		}
		score[h.MessageID] = s
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(score[b.MessageID], score[a.MessageID]), cmp.Compare(a.MessageID, b.MessageID))
	})
}
