package fts

import (
	"math"
	"slices"
	"testing"
)

func TestProposers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		df   []int64
		want []bool
	}{
		{[]int64{3, 40}, []bool{true, true}},
		{[]int64{3, CandidateBudget + 1, CandidateBudget}, []bool{true, false, true}},
		{[]int64{CandidateBudget * 50, CandidateBudget * 9}, []bool{false, false}},
	}
	for _, c := range cases {
		if got := Proposers(c.df); !slices.Equal(got, c.want) {
			t.Errorf("Proposers(%v) = %v, want %v", c.df, got, c.want)
		}
	}
}

func TestDocCount(t *testing.T) {
	t.Parallel()
	d := NewDoc("Tested the retries: tests pass, see src/worker/pool.go and pool.go", "read_file", "retry src/worker/pool.go")
	cases := []struct {
		unit string
		want int
	}{
		{"testing", 2},              // tested, tests: by stem
		{"retrying", 2},             // retries, retry
		{`"src/worker/pool.go"`, 2}, // a path, in sequence, in the content and the call text
		{`"pool.go"`, 3},            // also inside the path
		{`"tests pass"`, 1},         // a phrase as written
		{`"test pass"`, 0},          // never stemmed
		{"retr*", 2},                // a prefix
		{"read_file", 1},            // the tool name
		{"missing", 0},
	}
	for _, c := range cases {
		if got := d.Count(c.unit); got != c.want {
			t.Errorf("Count(%q) = %d, want %d", c.unit, got, c.want)
		}
	}
}

func TestBM25(t *testing.T) {
	t.Parallel()
	rare, common := IDF(1e6, 40), IDF(1e6, 130000)
	if rare < 4*common {
		t.Errorf("IDF of a rare unit %.2f, of a common one %.2f: the rare one should weigh several times more", rare, common)
	}
	if IDF(10, 9) <= 0 {
		t.Error("a unit in most rows weighs nothing")
	}
	if BM25(rare, 0, 10, 10) != 0 {
		t.Error("an absent unit scores")
	}
	short, long := BM25(rare, 1, 5, 10), BM25(rare, 1, 50, 10)
	more := BM25(rare, 3, 5, 10)
	if !(short > long && more > short && more < rare*(bm25K1+1)) || math.IsNaN(short) {
		t.Errorf("BM25: short %.3f, long %.3f, three times %.3f", short, long, more)
	}
}
