package compress

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

// numbered returns n "N. ACTION ..." lines starting at from.
func numbered(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "%d. EDITED internal/pkg%d/file.go — tests pass [tool: write_file]\n", i, i)
	}
	return strings.TrimRight(b.String(), "\n")
}

func bulleted(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "- %s %d: something worth keeping about item %d\n", prefix, i, i)
	}
	return strings.TrimRight(b.String(), "\n")
}

var markerCountRe = regexp.MustCompile(`\[(\d+) older items? trimmed`)

func TestBoundSummary(t *testing.T) {
	t.Parallel()
	snapshot := "## Historical Task Snapshot\n(deterministic: the newest user message.)\n> Ship the refund fix."
	ledger := LedgerHeading + "\nExtracted mechanically.\n\n### Identifiers\n" + bulleted("#", 150)
	cases := []struct {
		name   string
		body   string
		budget int
		// want
		trimmed     bool
		keep        []string // substrings that must survive
		gone        []string // substrings that must not
		marker      int      // total count in the Completed Actions marker (0: no marker expected)
		headings    []string // in this order
		maxTokensX2 bool     // result within 2x budget (else within 1.2x)
	}{
		{
			name:    "under twice the budget: untouched",
			body:    snapshot + "\n\n## Goal\nShip it.\n\n## Completed Actions\n" + numbered(1, 60), // ~1,200 tokens
			budget:  700,
			trimmed: false,
		},
		{
			name:     "runaway completed actions keep the newest",
			body:     snapshot + "\n\n## Goal\nShip it.\n\n## Completed Actions\n" + numbered(1, 800) + "\n\n## Relevant Files\n- a.go\n- b.go\n\n## Critical Context\nNone.",
			budget:   2000,
			trimmed:  true,
			keep:     []string{"> Ship the refund fix.", "## Goal\nShip it.", "800. EDITED internal/pkg800/file.go", "- a.go\n- b.go", "## Critical Context\nNone."},
			gone:     []string{"\n1. EDITED internal/pkg1/", "\n100. EDITED"},
			headings: []string{"## Historical Task Snapshot", "## Goal", "## Completed Actions", "## Relevant Files", "## Critical Context"},
		},
		{
			name:    "an earlier marker's count carries over",
			body:    "## Completed Actions\n[40 older items trimmed to keep the summary within its ~2000-token budget; the original turns stay searchable: session_search(query=...)]\n" + numbered(41, 800),
			budget:  2000,
			trimmed: true,
			keep:    []string{"840. EDITED"},
			marker:  -40, // 40 plus what was trimmed now
		},
		{
			name:     "every section gets a fair share",
			body:     "## Goal\nShip it.\n\n## Completed Actions\n" + numbered(1, 600) + "\n\n## Relevant Files\n" + bulleted("file", 600) + "\n\n## Key Decisions\n" + bulleted("decision", 3),
			budget:   2500,
			trimmed:  true,
			keep:     []string{"600. EDITED", "- file 599:", "- decision 0:", "- decision 2:"},
			gone:     []string{"- file 0:", "\n1. EDITED"},
			headings: []string{"## Goal", "## Completed Actions", "## Relevant Files", "## Key Decisions"},
		},
		{
			name:     "the working set and the task snapshot stay whole",
			body:     snapshot + "\n\n## Completed Actions\n" + numbered(1, 900) + "\n\n" + ledger,
			budget:   2000,
			trimmed:  true,
			keep:     []string{"> Ship the refund fix.", "- # 0: something", "- # 149: something", "900. EDITED"},
			headings: []string{"## Historical Task Snapshot", "## Completed Actions", LedgerHeading},
		},
		{
			name:        "one huge item is cut on a rune boundary",
			body:        "## Goal\nShip it.\n\n## Critical Context\n" + strings.Repeat("é日本", 20_000),
			budget:      2000,
			trimmed:     false, // nothing dropped: the only item is kept, shortened
			keep:        []string{"## Goal\nShip it.", "…"},
			headings:    []string{"## Goal", "## Critical Context"},
			maxTokensX2: true,
		},
		{
			name:    "a summary without headings keeps its newest lines",
			body:    bulleted("line", 2000),
			budget:  2000,
			trimmed: true,
			keep:    []string{"- line 1999:"},
			gone:    []string{"- line 0:"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, n := boundSummary(tc.body, tc.budget, CharEstimator{}, "sess")
			if !utf8.ValidString(got) {
				t.Fatal("result is not valid UTF-8")
			}
			if (n > 0) != tc.trimmed {
				t.Fatalf("trimmed %d items, want trimming %v", n, tc.trimmed)
			}
			before := CharEstimator{}.Message(store.Message{Content: tc.body})
			if before <= summaryTrimFactor*tc.budget {
				if got != tc.body {
					t.Fatalf("a body of %d tokens (budget %d) was changed", before, tc.budget)
				}
				return
			}
			after := CharEstimator{}.Message(store.Message{Content: got})
			limit := tc.budget * 12 / 10
			if tc.maxTokensX2 {
				limit = 2 * tc.budget
			}
			if strings.Contains(tc.body, LedgerHeading) {
				limit += CharEstimator{}.Message(store.Message{Content: ledger})
			}
			if after > limit {
				t.Errorf("%d tokens after trimming (was %d, budget %d, limit %d)", after, before, tc.budget, limit)
			}
			for _, s := range tc.keep {
				if !strings.Contains(got, s) {
					t.Errorf("lost %q", s)
				}
			}
			for _, s := range tc.gone {
				if strings.Contains(got, s) {
					t.Errorf("kept %q", s)
				}
			}
			var hs []string
			for _, line := range strings.Split(got, "\n") {
				if strings.HasPrefix(line, "## ") {
					hs = append(hs, line)
				}
			}
			if tc.headings != nil && strings.Join(hs, "|") != strings.Join(tc.headings, "|") {
				t.Errorf("headings %q, want %q", hs, tc.headings)
			}
			if tc.marker != 0 {
				m := markerCountRe.FindAllStringSubmatch(got, -1)
				if len(m) != 1 {
					t.Fatalf("%d markers, want 1:\n%s", len(m), got)
				}
				total, _ := strconv.Atoi(m[0][1])
				if want := -tc.marker + n; total != want {
					t.Errorf("marker counts %d items, want %d", total, want)
				}
			}
			if n > 0 && !strings.Contains(got, "session_search") {
				t.Error("no session_search pointer in the marker")
			}
			// Items trimmed now are counted in the markers.
			sum := 0
			for _, m := range markerCountRe.FindAllStringSubmatch(got, -1) {
				c, _ := strconv.Atoi(m[1])
				sum += c
			}
			if carried := -tc.marker; sum != n+max(carried, 0) {
				t.Errorf("markers count %d items, trimmed %d (+%d carried)", sum, n, max(carried, 0))
			}
			// A second pass has nothing left to do.
			if again, m := boundSummary(got, tc.budget, CharEstimator{}, "sess"); m != 0 || again != got {
				t.Errorf("second pass trimmed %d more items", m)
			}
		})
	}
}

// growingSummarizer behaves like a model that never drops anything: it repeats the previous
// summary's completed actions and appends a hundred new ones every time.
type growingSummarizer struct{ calls int }

func (g *growingSummarizer) Summarize(_ context.Context, _, prompt string) (string, error) {
	var prev []string
	if _, after, ok := strings.Cut(prompt, "PREVIOUS SUMMARY:\n"); ok {
		after, _, _ = strings.Cut(after, "\n\nNEW TURNS TO INCORPORATE:")
		if _, sec, ok := cutSection(after, "## Completed Actions"); ok {
			for _, l := range strings.Split(strings.TrimSpace(sec), "\n") {
				if l != "" {
					prev = append(prev, l)
				}
			}
		}
	}
	g.calls++
	return "## Goal\nKeep going.\n\n## Completed Actions\n" + strings.Join(prev, "\n") + "\n" + numbered(g.calls*1000, 100), nil
}

// A model that ignores the budget cannot make the summary grow without end: re-compaction
// would carry it forward until the summary alone fills the window.
func TestCompressBoundsGrowingSummary(t *testing.T) {
	t.Parallel()
	sum := &growingSummarizer{}
	c, _ := newTestCompressor(sum, nil)
	s := plantedSession(20)
	st := &State{}
	var sizes []int
	trimmed := 0
	for round := 1; round <= 8; round++ {
		plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
		if err != nil {
			t.Fatalf("compaction %d: %v", round, err)
		}
		body, _, _ := strings.Cut(plan.Summary, "\n\n"+LedgerHeading)
		sizes = append(sizes, len(body))
		trimmed += plan.SummaryItemsTrimmed
		if newest := fmt.Sprintf("%d. EDITED", round*1000+99); !strings.Contains(plan.Summary, newest) {
			t.Fatalf("compaction %d lost its newest action %q", round, newest)
		}
		if !strings.Contains(plan.Summary, LedgerHeading) {
			t.Fatalf("compaction %d: no working set", round)
		}
		s.commit(plan)
		noiseTurns(s, round, 25)
	}
	// The budget here is the 2,000-token floor; a summary is cut once it passes twice that.
	for i, n := range sizes {
		if n > 4*summaryTrimFactor*2000+400 {
			t.Errorf("compaction %d: summary body %d chars; sizes %v", i+1, n, sizes)
		}
	}
	if trimmed == 0 {
		t.Fatalf("nothing was trimmed; sizes %v", sizes)
	}
}
