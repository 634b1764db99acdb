package postgres

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/storetest"
)

// passCounter counts a handle's bounded search passes that found the whole window and those
// that did not.
type passCounter struct {
	mu             sync.Mutex
	filled, missed int
}

func (c *passCounter) see(window int) func(lo, found int64) {
	return func(lo, found int64) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if lo > 0 && found >= int64(window) {
			c.filled++
		} else if lo > 0 {
			c.missed++
		}
	}
}

// fillHarmonic writes 4,200 random messages over six sessions of three sources: a vocabulary
// with words in most rows, in some and in few (word i with weight 1/(i+1): "w0" in most rows,
// "w47" in about 4%), user, assistant and tool rows, and some exchanges undone (rows the
// filters must leave out). It returns the session ids.
func fillHarmonic(t *testing.T, db *DB) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(20261201, 15))
	vocab := make([]string, 48)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	sources := []string{"cli", "telegram", "slack"}
	var sessions []string
	for i := range 6 {
		id := fmt.Sprint("sess", i)
		if _, err := db.CreateSession(bg, store.NewSession{ID: id, Source: sources[i%3]}); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, id)
	}
	const rows = 4200
	for n := 0; n < rows; n += 100 {
		sid := sessions[rng.IntN(len(sessions))]
		var batch []store.Message
		for range 100 {
			var words []string
			for range 4 + rng.IntN(10) {
				x := rng.Float64() * 4.4
				i := 0
				for w := 1.0; x > w && i < len(vocab)-1; i++ {
					x -= w
					w = 1 / float64(i+2)
				}
				words = append(words, vocab[i])
			}
			m := store.Message{Role: store.RoleUser, Content: strings.Join(words, " ")}
			switch rng.IntN(4) {
			case 1:
				m.Role = store.RoleAssistant
			case 2:
				m.Role, m.ToolName, m.ToolCallID = store.RoleTool, "terminal", fmt.Sprint("c", n)
			}
			batch = append(batch, m)
		}
		if _, err := db.AppendBatch(bg, sid, batch); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(5) == 0 {
			if _, err := storetest.Undo(bg, db, sid); err != nil && !strings.Contains(err.Error(), "no user message") {
				t.Fatal(err)
			}
		}
	}
	return sessions
}

// windowQueries is every text with offsets and with each filter.
func windowQueries(texts, sessions []string) []store.SearchQuery {
	var queries []store.SearchQuery
	for _, text := range texts {
		for _, offset := range []int{0, 20, 985} {
			queries = append(queries, store.SearchQuery{Text: text, Offset: offset})
		}
		queries = append(queries,
			store.SearchQuery{Text: text, Roles: []string{store.RoleAssistant}},
			store.SearchQuery{Text: text, Roles: []string{store.RoleTool}, Limit: 50},
			store.SearchQuery{Text: text, Sources: []string{"telegram"}, NoContext: true},
			store.SearchQuery{Text: text, ExcludeSources: []string{"cli"}, Offset: 40},
			store.SearchQuery{Text: text, SessionIDs: []string{sessions[1], sessions[4]}},
			store.SearchQuery{Text: text, Sort: store.SortNewest},
		)
	}
	return queries
}

// sameSearches runs every query on both handles and fails on any page that differs, hit for
// hit (ids, order, snippets, copies, context).
func sameSearches(t *testing.T, bounded, full *DB, queries []store.SearchQuery) {
	t.Helper()
	for _, q := range queries {
		got, err := bounded.Search(bg, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		want, err := full.Search(bg, q)
		if err != nil {
			t.Fatalf("%+v (unbounded): %v", q, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: bounded passes found %d hits %v, the unbounded query %d %v", q, len(got), hitIDs(got), len(want), hitIDs(want))
		}
	}
}

var windowTexts = []string{"w0", "w1", "w2", "w3", "w5", "w8", "w13", "w21", "w34", "w47", "nothere",
	"w0 w1", "w1 w4", "w2 w30", `"w0 w1"`, `"w2 w3"`, "w1*", "w0 OR w40", "w0 NOT w1", "w3 -w0", "w4 OR w9 OR w20",
	"w13 OR w21", "w21 NOT w0", "w3*"}

// TestRankedWindowMatchesUnboundedQuery runs ranked searches twice: on a handle whose searches
// look at the newest ids first with small fixed ranges (so ranges fill, widen and run out) and
// on one that always runs the unbounded query, in both exec modes (the bounded passes go as a
// pipelined batch, which uses the connection's mode). Every page must be the same; the bounded
// passes must have answered some queries alone and missed on others, or the comparison proves
// nothing.
func TestRankedWindowMatchesUnboundedQuery(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	quiet := slog.New(slog.DiscardHandler)
	full, err := Open(bg, dsn, Options{Logger: quiet, searchSpan: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	sessions := fillHarmonic(t, full)
	queries := windowQueries(windowTexts, sessions)
	for _, mode := range []string{"", "&default_query_exec_mode=exec"} {
		var passes passCounter
		bounded, err := Open(bg, dsn+mode, Options{Logger: quiet, searchSpan: 97, onPass: passes.see(rankWindow)})
		if err != nil {
			t.Fatal(err)
		}
		sameSearches(t, bounded, full, queries)
		bounded.Close()
		if passes.filled == 0 || passes.missed == 0 {
			t.Fatalf("mode %q: bounded passes that filled the window: %d, that did not: %d; both must occur", mode, passes.filled, passes.missed)
		}
	}
}

// TestFrequencySizedWindowMatchesUnboundedQuery is the same comparison for the ranges sized
// from the column's statistics (the default), with a window of 50 so that on 4,200 rows the
// words in about 4–15% of them get a bounded first pass.
func TestFrequencySizedWindowMatchesUnboundedQuery(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	quiet := slog.New(slog.DiscardHandler)
	const window = 50
	full, err := Open(bg, dsn, Options{Logger: quiet, searchSpan: -1, rankWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	// The server's autovacuum may analyze a freshly filled table on its own schedule; off for
	// this table, only the search's own ANALYZE can make the statistics row checked below.
	if _, err := full.pool.Exec(bg, "ALTER TABLE messages SET (autovacuum_enabled = false)"); err != nil {
		t.Fatal(err)
	}
	sessions := fillHarmonic(t, full)
	var passes passCounter
	sized, err := Open(bg, dsn, Options{Logger: quiet, rankWindow: window, onPass: passes.see(window)})
	if err != nil {
		t.Fatal(err)
	}
	defer sized.Close()
	// The table was never analyzed: the first ranked search analyzes it (its ids span more than
	// analyzeRows windows), so the ranges are sized from the start.
	if n := tsvStats(t, full); n != 0 {
		t.Fatalf("%d statistics rows for messages.tsv before any search, want 0", n)
	}
	sameSearches(t, sized, full, windowQueries(windowTexts, sessions))
	if n := tsvStats(t, full); n != 1 {
		t.Fatalf("%d statistics rows for messages.tsv after the first searches, want 1 (the search did not analyze)", n)
	}
	if passes.filled == 0 {
		t.Fatalf("no bounded pass held the window (%d did not): the sized ranges were not used", passes.missed)
	}
	// A handle whose statistics are gone re-reads them; ANALYZE again only after wordStatsAge.
	sized.words = wordStats{}
	passes = passCounter{}
	sameSearches(t, sized, full, windowQueries([]string{"w21"}, sessions))
	if passes.filled == 0 {
		t.Fatalf("after re-reading the statistics no bounded pass held the window (%d did not)", passes.missed)
	}
}

// tsvStats counts pg_stats rows for messages.tsv (1 once the table is analyzed).
func tsvStats(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(bg, `SELECT count(*) FROM pg_stats WHERE schemaname = current_schema()
		AND tablename = 'messages' AND attname = 'tsv'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSmallTableIsNotAnalyzed: below analyzeRows windows of ids a search leaves the table to
// autovacuum (no bounded pass could apply) and runs unbounded.
func TestSmallTableIsNotAnalyzed(t *testing.T) {
	t.Parallel()
	var passes passCounter
	db, err := Open(bg, pgtest.NewDatabase(t), Options{Logger: slog.New(slog.DiscardHandler), rankWindow: 50, onPass: passes.see(50)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	msgs := make([]store.Message, 40) // 40 ids < 20 windows of 50
	for i := range msgs {
		msgs[i] = store.Message{Role: store.RoleUser, Content: fmt.Sprintf("alpha w%d", i%7)}
	}
	if _, err := db.AppendBatch(bg, "s", msgs); err != nil {
		t.Fatal(err)
	}
	hits, err := db.Search(bg, store.SearchQuery{Text: "alpha", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != len(msgs) || passes.filled+passes.missed != 0 {
		t.Fatalf("%d hits, %d bounded passes; want %d hits and none", len(hits), passes.filled+passes.missed, len(msgs))
	}
	if n := tsvStats(t, db); n != 0 {
		t.Fatalf("%d statistics rows for messages.tsv after searching a small table, want 0", n)
	}
}

// TestBoundedSearchLeavesNoSettings checks that the planner settings of a bounded pass end with
// its transaction: on a pool of one connection, the next statement sees the server's defaults.
func TestBoundedSearchLeavesNoSettings(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", "&default_query_exec_mode=exec", "&default_query_exec_mode=simple_protocol"} {
		var passes passCounter
		db, err := Open(bg, pgtest.NewDatabase(t)+mode, Options{Logger: slog.New(slog.DiscardHandler), MaxConns: 1, searchSpan: 1,
			onPass: passes.see(rankWindow)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendBatch(bg, "s", []store.Message{{Role: store.RoleUser, Content: "alpha beta"},
			{Role: store.RoleAssistant, Content: "beta gamma"}, {Role: store.RoleUser, Content: "alpha"}}); err != nil {
			t.Fatal(err)
		}
		hits, err := db.Search(bg, store.SearchQuery{Text: "alpha"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 2 || passes.missed == 0 {
			t.Fatalf("mode %q: %d hits, %d bounded passes; want 2 hits after a bounded pass", mode, len(hits), passes.missed)
		}
		var indexscan, planCache string
		if err := db.pool.QueryRow(bg, "SELECT current_setting('enable_indexscan'), current_setting('plan_cache_mode')").Scan(&indexscan, &planCache); err != nil {
			t.Fatal(err)
		}
		if indexscan != "on" || planCache != "auto" {
			t.Errorf("mode %q: after a bounded search the connection has enable_indexscan=%s, plan_cache_mode=%s; want on, auto", mode, indexscan, planCache)
		}
		db.Close()
	}
}

func TestMatchFraction(t *testing.T) {
	t.Parallel()
	freq := map[string]float64{"column": 0.1, "config": 0.2, "rate": 0.05, "limit": 0.04, "col": 0.01}
	fraction := func(tok string, prefix bool) float64 {
		if prefix {
			sum := 0.0
			for e, f := range freq {
				if strings.HasPrefix(e, tok) {
					sum += f
				}
			}
			return sum
		}
		return freq[tok]
	}
	for _, c := range []struct {
		match string
		want  float64
	}{
		{"column", 0.1},
		{"column config", 0.02},
		{`"column config"`, 0.02},
		{`"rate limit"`, 0.002},
		{"column AND config", 0.02},
		{"column OR config", 0.3},
		{"column NOT config", 0.08},
		{"col*", 0.11},
		{`"col"*`, 0.11},
		{"column OR config OR rate", 0.35},
	} {
		if got := matchFraction(c.match, fraction); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("matchFraction(%q) = %v, want %v", c.match, got, c.want)
		}
	}
}

func hitIDs(hs []store.SearchHit) []int64 {
	ids := make([]int64, len(hs))
	for i, h := range hs {
		ids[i] = h.MessageID
	}
	return ids
}
