package fts

import (
	"math"
	"slices"
	"strings"
)

// A ranked query's cost at size is its common units: ranking reads every match of every unit
// it scores by (BM25 needs how many rows hold each), and a word in a tenth of a million rows has
// a hundred thousand. Both backends therefore find a ranked query's candidates through its rare
// units alone, as a search engine's MaxScore does: a row holding only common units cannot
// outrank one holding a rare unit, whose weight (IDF) is several times theirs. The common units
// still score the candidates. On a store where every unit is rare (any store of fewer than
// CandidateBudget rows), every unit proposes and the ranking is plain BM25 over their OR.

// CandidateBudget is the number of rows a unit may match and still propose candidates: at most
// this many of its matches are read to tell (the newest CandidateBudget+1, on SQLite).
const CandidateBudget = 2000

// RerankDepth is how many of the best candidates by their proposing units (or, when every unit
// is common, by the units they hold) are read and scored again with every unit.
const RerankDepth = 200

// Proposers reports, for units with the given document frequencies (df[i] for Units[i]; an
// estimate above CandidateBudget is enough), which units propose candidates: every unit within
// CandidateBudget. None does when every unit is common.
func Proposers(df []int64) []bool {
	out := make([]bool, len(df))
	for i, n := range df {
		out[i] = n <= CandidateBudget
	}
	return out
}

// BM25 parameters, as FTS5's bm25() and the recall benchmark's baseline use them.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// IDF is BM25's weight of a unit held by df of n rows (FTS5's form: never below a small positive
// value, so a unit in more than half the rows still counts a little).
func IDF(n, df float64) float64 {
	idf := math.Log((n - df + 0.5) / (df + 0.5))
	if idf <= 0 {
		return 1e-6
	}
	return idf
}

// BM25 is a unit's share of a row's score: its IDF, tf occurrences in a row of dl words, avgdl
// the rows' mean length.
func BM25(idf, tf, dl, avgdl float64) float64 {
	if tf <= 0 {
		return 0
	}
	if avgdl <= 0 {
		avgdl = 1
	}
	return idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*dl/avgdl))
}

// Doc is a row's words as a ranked query scores them: the tokens of its indexed texts (Tokens).
type Doc struct{ words []string }

// NewDoc reads the texts of a row the word index holds (its indexed content, tool name and
// tool-call text).
func NewDoc(texts ...string) Doc {
	var d Doc
	for _, s := range texts {
		d.words = append(d.words, Tokens(s)...)
	}
	return d
}

// Len is the row's length in words.
func (d Doc) Len() int { return len(d.words) }

// Count returns how often unit (one of Query.Units) occurs in d as the word index matches it: a
// bare word in any of its forms (by stem), a phrase or identifier as written and in sequence,
// a prefix as a prefix.
func (d Doc) Count(unit string) int {
	n := 0
	WalkMatch(unit, func(t Term) { n += d.termCount(t) }, func(string) {})
	return n
}

// termCount counts the occurrences of t in d (termIn's rules).
func (d Doc) termCount(t Term) int {
	toks := Tokens(t.Text)
	if len(toks) == 0 {
		return 0
	}
	n := 0
	if !t.Exact() && len(toks) == 1 {
		stem := StemOf(toks[0])
		// A word's stem is nearly always its first letters, the stem's last one perhaps turned
		// (happy: happi): only words starting with the rest of the stem are stemmed to compare
		// (a score, not the set found, depends on the rare exception).
		lead := stem[:len(stem)-1]
		for _, x := range d.words {
			if x == toks[0] || strings.HasPrefix(x, lead) && StemOf(x) == stem {
				n++
			}
		}
		return n
	}
	w, last := d.words, len(toks)-1
	for i := 0; i+len(toks) <= len(w); i++ {
		if slices.Equal(w[i:i+last], toks[:last]) &&
			(w[i+last] == toks[last] || t.Prefix && strings.HasPrefix(w[i+last], toks[last])) {
			n++
		}
	}
	return n
}
