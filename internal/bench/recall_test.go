package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store/fts"
	"github.com/spoolhq/spool/store/sqlite"
)

// TestRecallBenchmark runs the recall benchmark small and checks that it measures: the BM25
// baseline is computed over the same messages, spool's search finds at least as much as it,
// the AND-only control scores low (most questions, asked in plain words, hold a word their
// answer lacks), and the report's verdict is the targets' (hit@10 >= 0.90 and >= BM25 + 0.10,
// both styles). The targets themselves are the benchmark's figures, not this test's.
func TestRecallBenchmark(t *testing.T) {
	t.Parallel()
	rep, err := Recall(context.Background(), RecallConfig{Dir: t.TempDir(), Sessions: 12, Turns: 30})
	if err != nil {
		t.Fatal(err)
	}
	met := true
	for _, style := range []string{StyleAsked, StyleKeywords} {
		s, b, c := rep.Spool.ByStyle[style], rep.BM25.ByStyle[style], rep.Control.ByStyle[style]
		t.Logf("%s: spool hit@10 %.3f mrr %.3f, bm25 %.3f, control %.3f", style, s.Hit10, s.MRR, b.Hit10, c.Hit10)
		if s.N == 0 || b.N != s.N || c.N != s.N {
			t.Fatalf("%s: questions spool %d, bm25 %d, control %d", style, s.N, b.N, c.N)
		}
		if b.Hit10 == 0 {
			t.Errorf("%s: the bm25 baseline found nothing: it was not computed over the messages", style)
		}
		if s.Hit10 < b.Hit10 || s.MRR < b.MRR {
			t.Errorf("%s: spool hit@10 %.3f mrr %.3f, below bm25's %.3f / %.3f", style, s.Hit10, s.MRR, b.Hit10, b.MRR)
		}
		if c.Hit10 > s.Hit10-0.3 {
			t.Errorf("%s: the AND-only control's hit@10 %.3f is not well below spool's %.3f", style, c.Hit10, s.Hit10)
		}
		met = met && s.Hit10 >= 0.90 && s.Hit10 >= b.Hit10+0.10
	}
	if rep.TargetsMet != met {
		t.Errorf("targets_met %v, but the figures say %v", rep.TargetsMet, met)
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

// recallStopwords are the function words left out of a text's content words.
var recallStopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about after again all also am an and any are as at be before been but by can could did do
		does don done for from get got had has have how i if in into is it its just me my no not now of on once only or our
		out over please should so some than that the their them then there these they this those to too up us was we were
		what when where which while who why will with would you your`) {
		recallStopwords[w] = true
	}
}

// contentStems are the stems of text's content words, in order.
func contentStems(text string) []string {
	var out []string
	for _, w := range fts.Tokens(text) {
		if !recallStopwords[w] {
			out = append(out, fts.StemOf(w))
		}
	}
	return out
}

// TestRecallQuestionsAreNotCopies checks the question set: no question, asked or as keywords,
// shares a run of four consecutive content words (compared by stem) with any phrasing of its
// evidence, and each still shares a stem beyond the project's name with every phrasing (a
// question with none could be found by no word search). Each kind has several phrasings and
// several questions.
func TestRecallQuestionsAreNotCopies(t *testing.T) {
	t.Parallel()
	const project, part, number = "billing", "poller", 412
	for _, f := range recallFacts {
		if len(f.evidence) < 3 || len(f.questions) < 3 {
			t.Errorf("%s: %d phrasings and %d questions, want 3 or more of each", f.kind, len(f.evidence), len(f.questions))
		}
		for _, ev := range f.evidence {
			e := contentStems(fmt.Sprintf(ev, project, part, number))
			grams := map[string]bool{}
			for i := 0; i+4 <= len(e); i++ {
				grams[strings.Join(e[i:i+4], " ")] = true
			}
			for _, q := range f.questions {
				for _, text := range []string{fmt.Sprintf(q.asked, project), fmt.Sprintf(q.keywords, project)} {
					qs := contentStems(text)
					for i := 0; i+4 <= len(qs); i++ {
						if g := strings.Join(qs[i:i+4], " "); grams[g] {
							t.Errorf("%s: question %q copies %q from its evidence %q", f.kind, text, g, ev)
						}
					}
					shared := false
					for _, w := range qs {
						shared = shared || w != fts.StemOf(project) && slices.Contains(e, w)
					}
					if !shared {
						t.Errorf("%s: question %q shares no word but the project's with %q", f.kind, text, ev)
					}
				}
			}
		}
	}
}

// TestRecallPhrasingsVary checks the generator draws every phrasing and every question of
// every kind over a default-sized run, independently of each other.
func TestRecallPhrasingsVary(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "r.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, questions, err := generateRecall(context.Background(), db, RecallConfig{Seed: 20260428, Sessions: 40, Turns: 12})
	if err != nil {
		t.Fatal(err)
	}
	drawn := map[string]bool{}
	for _, q := range questions {
		drawn[fmt.Sprint(q.Kind, " phrasing ", q.phrasing)] = true
		drawn[fmt.Sprint(q.Kind, " question ", q.template)] = true
	}
	for _, f := range recallFacts {
		for i := range f.evidence {
			if !drawn[fmt.Sprint(f.kind, " phrasing ", i)] {
				t.Errorf("%s: phrasing %q never drawn", f.kind, f.evidence[i])
			}
		}
		for i := range f.questions {
			if !drawn[fmt.Sprint(f.kind, " question ", i)] {
				t.Errorf("%s: question %q never drawn", f.kind, f.questions[i].asked)
			}
		}
	}
}
