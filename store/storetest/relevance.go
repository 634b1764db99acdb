package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

// testSearchRelevance pins how a query in plain words is read, on every backend: its words,
// phrases and identifiers are alternatives ranked by relevance (BM25: rows matching more and
// rarer of them first), common words do not count, English word forms meet through stems,
// identifiers and quoted phrases are matched as written and rank above loose words, and
// explicit syntax (AND, OR, NOT, quotes, prefix*) keeps its meaning. Each case names the exact
// set of rows found and, where relevance decides it, the row ranked first.
func testSearchRelevance(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "work"})
	texts := []string{
		"the retry loop in the uploader backs off exponentially",                  // 0
		"we decided retries should stop after five attempts",                      // 1
		"tested the migration: the tests pass and testing is done",                // 2
		"the race was in src/worker/pool.go:88, fixed by holding a mutex",         // 3
		"the worker pool looks fine to me, the pool size is eight workers",        // 4
		"what is it that you would like me to do with this and that",              // 5
		`the migration printed: error: relation "users" does not exist`,           // 6
		"commit a3f9c1d closed issue 4512",                                        // 7
		"pool pool pool pool: a chat about swimming pools and a race in the pool", // 8
		"config files should be TOML, not YAML",                                   // 9
		"reconcile captures, reconcile refunds, then reconcile payouts again",     // 10
		"the reconciler job runs daily at 02:15 UTC",                              // 11
		"uploads keep being flaky",                                                // 12
		"flaky again on the arm runner",                                           // 13
		"reproduced it with fifty runs",                                           // 14
	}
	var ms []store.Message
	for i, s := range texts {
		if i%2 == 0 {
			ms = append(ms, user(s))
		} else {
			ms = append(ms, assistant(s))
		}
	}
	ids := mustAppend(t, st, "work", ms...)
	row := func(ns ...int) []int64 {
		var out []int64
		for _, n := range ns {
			out = append(out, ids[n])
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		q     string
		set   []int64 // the exact set found (nil: not pinned)
		first int     // the row ranked first (-1: not pinned)
	}{
		// A question: its content words are alternatives, its frame words do not count.
		{"what did we decide about retries?", row(0, 1), 1},
		{"which file had the race?", row(3, 8, 9), -1}, // files
		{"what error did the migration print?", row(2, 6), 6},
		{"what did I say about the config format?", row(9), 9},
		// Word forms meet: tested, tests, testing; retry, retries.
		{"tested", row(2), 2},
		{"testing", row(2), 2},
		{"retry", row(0, 1), -1},
		// The form as asked ranks above other forms of the word, however often they occur.
		{"reconciler", row(10, 11), 11},
		{"reconcile", row(10, 11), 10},
		// Of several units, the rarer one ranks its rows first even when it matches in another
		// form and the common one as asked: the form as asked does not count twice.
		{"reproducing flaky", row(12, 13, 14), 14},
		// More of the query's units rank higher: all three before two of them.
		{"worker pool mutex", row(3, 4, 8), 3},
		// An identifier ranks above loose words, and is matched as written.
		{"race src/worker/pool.go", row(3, 8), 3},
		{"src/worker/pool.go", row(3), 3},
		{"a3f9c1d", row(7), 7},
		{"issue 4512 race", row(3, 7, 8), 7},
		// Only common words: they are all there is to search.
		{"what is that", row(2, 4, 5), 5},
		// Explicit syntax keeps its meaning.
		{`"tests pass"`, row(2), 2},
		{`"test pass"`, row(), -1}, // a quoted phrase is never stemmed
		{"retries AND uploader", row(), -1},
		{"retry AND uploader", row(0), 0},
		{"retries NOT uploader", row(1), 1},
		{"retr*", row(0, 1), -1},
		{"pool OR mutex", row(3, 4, 8), -1},
	}
	for _, c := range cases {
		hits, err := st.Search(bg, store.SearchQuery{Text: c.q, Limit: 50, NoContext: true})
		if err != nil {
			t.Fatalf("search %q: %v", c.q, err)
		}
		var got []int64
		for _, h := range hits {
			got = append(got, h.MessageID)
		}
		if c.first >= 0 && (len(got) == 0 || got[0] != ids[c.first]) {
			t.Errorf("search %q ranked %v first, want row %d (%d)", c.q, got, c.first, ids[c.first])
		}
		slices.Sort(got)
		if c.set != nil && !slices.Equal(got, c.set) {
			t.Errorf("search %q found %v, want %v", c.q, got, c.set)
		}
	}
}

// testSearchRelevanceAtSize pins the ranking of a question on a store where one of its words is
// common (in more rows than fts.CandidateBudget): the rows holding its rare words are found
// wherever they are in history (the oldest first here, under thousands of newer rows), and the
// common word still ranks them: the row holding every word comes first.
func testSearchRelevanceAtSize(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "old"})
	mustCreate(t, st, store.NewSession{ID: "busy"})
	ids := mustAppend(t, st, "old",
		user("the rollback script failed on the replica"),    // rare words, not the common one
		assistant("the rollback of the deploy failed twice"), // every word
		user("rollback notes are in the wiki"),               // one rare word
	)
	common := make([]store.Message, 0, fts.CandidateBudget+100)
	for i := range cap(common) {
		common = append(common, assistant(fmt.Sprintf("deploy number %d went out on time", i)))
	}
	for len(common) > 0 {
		n := min(500, len(common))
		if _, err := st.AppendBatch(bg, "busy", common[:n]); err != nil {
			t.Fatal(err)
		}
		common = common[n:]
	}
	hits, err := st.Search(bg, store.SearchQuery{Text: "why did the rollback deploy fail?", Limit: 10, NoContext: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, h := range hits {
		got = append(got, h.MessageID)
	}
	if len(got) < 3 || got[0] != ids[1] {
		t.Fatalf("ranked %v, want row %d (every word) first", got, ids[1])
	}
	if !slices.Contains(got[:3], ids[0]) || !slices.Contains(got[:3], ids[2]) {
		t.Errorf("ranked %v, want the rows holding the rare words (%v) before the common word's", got, ids)
	}
}
