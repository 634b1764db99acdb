package bench

import (
	"context"
	"testing"
)

// TestRecallBenchmark runs the recall benchmark small: spool's search must find at least 90% of
// the answers in its top ten and beat plain BM25, computed in the same run, by 0.10, and the
// AND-only control must score low (most questions, asked in plain words, hold a word their
// answer lacks).
func TestRecallBenchmark(t *testing.T) {
	t.Parallel()
	rep, err := Recall(context.Background(), RecallConfig{Dir: t.TempDir(), Sessions: 12, Turns: 30})
	if err != nil {
		t.Fatal(err)
	}
	for _, style := range []string{StyleAsked, StyleKeywords} {
		s, b, c := rep.Spool.ByStyle[style], rep.BM25.ByStyle[style], rep.Control.ByStyle[style]
		t.Logf("%s: spool hit@10 %.3f mrr %.3f, bm25 %.3f, control %.3f", style, s.Hit10, s.MRR, b.Hit10, c.Hit10)
		if s.N == 0 || b.N != s.N || c.N != s.N {
			t.Fatalf("%s: questions spool %d, bm25 %d, control %d", style, s.N, b.N, c.N)
		}
		if b.Hit10 == 0 {
			t.Errorf("%s: the bm25 baseline found nothing: it was not computed over the messages", style)
		}
		if s.Hit10 < 0.9 || s.Hit10 < b.Hit10+0.1 {
			t.Errorf("%s: spool hit@10 %.3f, want >= 0.90 and at least bm25's %.3f + 0.10", style, s.Hit10, b.Hit10)
		}
		if c.Hit10 > s.Hit10-0.3 {
			t.Errorf("%s: the AND-only control's hit@10 %.3f is not well below spool's %.3f", style, c.Hit10, s.Hit10)
		}
	}
}

// TestRecallFiller writes older history before the recall sessions: it is counted, searched
// through, and indexed by the BM25 baseline (which then has more documents to rank).
func TestRecallFiller(t *testing.T) {
	t.Parallel()
	rep, err := Recall(context.Background(), RecallConfig{Dir: t.TempDir(), Sessions: 4, Turns: 20, Filler: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Config.Filler != 3000 || rep.Config.Messages < 3000+4*20*2 || rep.Config.Backend != "sqlite" {
		t.Fatalf("config %+v: want 3000 filler messages counted among the messages, on sqlite", rep.Config)
	}
	if s := rep.Spool.ByStyle[StyleAsked]; s.N == 0 || s.Hit10 < 0.9 {
		t.Errorf("asked with filler: %+v, want hit@10 >= 0.90", s)
	}
	if rep.AskedP99 <= 0 {
		t.Errorf("asked p99 %v: not measured", rep.AskedP99)
	}
}
