package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/sqlite"
)

// RecallConfig sizes the recall benchmark.
type RecallConfig struct {
	Dir      string
	Seed     uint64
	Sessions int // default 40
	Turns    int // user turns per session, default 40
	// Filler is how many messages of the standard workload (WORKLOAD.md's W1 generator, 200
	// sessions) are written before the recall sessions, as older history to search through.
	Filler int
	// PostgresURL, when set, is an empty PostgreSQL database to run in instead of a scratch
	// SQLite file (the run leaves its rows there).
	PostgresURL string
	Log         io.Writer
}

func (c RecallConfig) withDefaults() RecallConfig {
	if c.Seed == 0 {
		c.Seed = 20260428
	}
	if c.Sessions <= 0 {
		c.Sessions = 40
	}
	if c.Turns <= 0 {
		c.Turns = 40
	}
	return c
}

// Query styles: the question as a person asks it, and its content words as a model searches.
const (
	StyleAsked    = "asked"
	StyleKeywords = "keywords"
)

// recallQuestion is one question with the messages that answer it.
type recallQuestion struct {
	Kind     string
	Asked    string
	Keywords string
	evidence []int64
	// evidenceText is the evidence message's text; phrasing and template index the fact's
	// evidence phrasings and questions drawn for it.
	evidenceText       string
	phrasing, template int
}

// RecallScores are one method's figures over a set of questions.
type RecallScores struct {
	N        int     `json:"n"`
	Hit1     float64 `json:"hit_at_1"`
	Hit5     float64 `json:"hit_at_5"`
	Hit10    float64 `json:"hit_at_10"`
	Recall10 float64 `json:"recall_at_10"`
	MRR      float64 `json:"mrr"`
}

// RecallMethod is one method's figures per query style and per question kind and style.
type RecallMethod struct {
	ByStyle map[string]RecallScores            `json:"by_style"`
	ByKind  map[string]map[string]RecallScores `json:"by_kind"`
}

// RecallReport is `spool bench recall`'s JSON report.
type RecallReport struct {
	Config struct {
		Seed      uint64 `json:"seed"`
		Sessions  int    `json:"sessions"`
		Turns     int    `json:"turns"`
		Messages  int    `json:"messages"`
		Filler    int    `json:"filler_messages"`
		Backend   string `json:"backend"`
		Questions int    `json:"questions"`
	} `json:"config"`
	// Spool is store.Search (what spool search and session_search run); BM25 is plain Okapi
	// BM25 (k1 1.2, b 0.75, no stemming, no stopwords) over the same messages; Control is the
	// AND-only search (every query word required, as written, BM25 order), which must score low.
	Spool   RecallMethod `json:"spool"`
	BM25    RecallMethod `json:"bm25"`
	Control RecallMethod `json:"control_and_only"`
	// Targets: spool's hit@10 at least 0.90 and at least BM25's + 0.10, for both styles.
	TargetsMet bool    `json:"targets_met"`
	SearchP50  float64 `json:"spool_search_p50_ms"`
	SearchP99  float64 `json:"spool_search_p99_ms"`
	// The latency of the questions as asked alone (the size target's figure).
	AskedP50 float64 `json:"spool_search_asked_p50_ms"`
	AskedP99 float64 `json:"spool_search_asked_p99_ms"`
}

// RunRecall runs the benchmark and prints its report as JSON.
func RunRecall(ctx context.Context, cfg RecallConfig, stdout io.Writer) error {
	rep, err := Recall(ctx, cfg)
	if err != nil {
		return err
	}
	return writeReport(stdout, rep, nil)
}

// Recall generates the sessions into a scratch SQLite store, asks every question in both
// styles through store.Search and the two baselines, and scores them.
func Recall(ctx context.Context, cfg RecallConfig) (*RecallReport, error) {
	cfg = cfg.withDefaults()
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	st, backend, closeStore, err := openRecallStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	idx := newBM25()
	if cfg.Filler > 0 {
		t0 := time.Now()
		if err := writeFiller(ctx, st, cfg, idx); err != nil {
			return nil, fmt.Errorf("write filler: %w", err)
		}
		logf("recall: %d filler messages written in %s", cfg.Filler, time.Since(t0).Round(time.Second))
	}
	docs, questions, err := generateRecall(ctx, st, cfg)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		idx.add(d.id, d.words)
	}
	logf("recall: %d messages, %d questions", idx.n(), len(questions))
	rep := &RecallReport{}
	rep.Config.Seed, rep.Config.Sessions, rep.Config.Turns = cfg.Seed, cfg.Sessions, cfg.Turns
	rep.Config.Messages, rep.Config.Questions = idx.n(), len(questions)
	rep.Config.Filler, rep.Config.Backend = cfg.Filler, backend
	type ranked struct {
		kind, style string
		ids         []int64
		evidence    []int64
	}
	var spool, bm, ctl []ranked
	var lat, asked []float64
	for _, q := range questions {
		for _, style := range []string{StyleAsked, StyleKeywords} {
			text := q.Asked
			if style == StyleKeywords {
				text = q.Keywords
			}
			t0 := time.Now()
			hits, err := st.Search(ctx, store.SearchQuery{Text: text, Limit: 10, NoContext: true})
			ms := float64(time.Since(t0).Microseconds()) / 1000
			lat = append(lat, ms)
			if style == StyleAsked {
				asked = append(asked, ms)
			}
			if err != nil {
				return nil, fmt.Errorf("search %q: %w", text, err)
			}
			var ids []int64
			for _, h := range hits {
				ids = append(ids, h.MessageID)
			}
			spool = append(spool, ranked{q.Kind, style, ids, q.evidence})
			bm = append(bm, ranked{q.Kind, style, idx.search(fts.Tokens(text), false), q.evidence})
			ctl = append(ctl, ranked{q.Kind, style, idx.search(controlTerms(text), true), q.evidence})
		}
	}
	score := func(rs []ranked) RecallMethod {
		m := RecallMethod{ByStyle: map[string]RecallScores{}, ByKind: map[string]map[string]RecallScores{}}
		add := func(s *RecallScores, r ranked) {
			s.N++
			first := slices.IndexFunc(r.ids, func(id int64) bool { return slices.Contains(r.evidence, id) })
			if first >= 0 {
				s.MRR += 1 / float64(first+1)
				for k, v := range map[int]*float64{1: &s.Hit1, 5: &s.Hit5, 10: &s.Hit10} {
					if first < k {
						*v++
					}
				}
			}
			found := 0
			for _, e := range r.evidence {
				if slices.Contains(r.ids[:min(10, len(r.ids))], e) {
					found++
				}
			}
			s.Recall10 += float64(found) / float64(len(r.evidence))
		}
		sums := map[string]*RecallScores{}
		kinds := map[string]map[string]*RecallScores{}
		for _, r := range rs {
			if sums[r.style] == nil {
				sums[r.style] = &RecallScores{}
			}
			add(sums[r.style], r)
			if kinds[r.kind] == nil {
				kinds[r.kind] = map[string]*RecallScores{}
			}
			if kinds[r.kind][r.style] == nil {
				kinds[r.kind][r.style] = &RecallScores{}
			}
			add(kinds[r.kind][r.style], r)
		}
		norm := func(s *RecallScores) RecallScores {
			n := float64(s.N)
			r := func(x float64) float64 { return math.Round(x/n*1000) / 1000 }
			return RecallScores{N: s.N, Hit1: r(s.Hit1), Hit5: r(s.Hit5), Hit10: r(s.Hit10), Recall10: r(s.Recall10), MRR: r(s.MRR)}
		}
		for st, s := range sums {
			m.ByStyle[st] = norm(s)
		}
		for k, byStyle := range kinds {
			m.ByKind[k] = map[string]RecallScores{}
			for st, s := range byStyle {
				m.ByKind[k][st] = norm(s)
			}
		}
		return m
	}
	rep.Spool, rep.BM25, rep.Control = score(spool), score(bm), score(ctl)
	rep.TargetsMet = true
	for _, style := range []string{StyleAsked, StyleKeywords} {
		s, b := rep.Spool.ByStyle[style].Hit10, rep.BM25.ByStyle[style].Hit10
		if s < 0.90 || s < b+0.10 {
			rep.TargetsMet = false
		}
	}
	sort.Float64s(lat)
	sort.Float64s(asked)
	rep.SearchP50, rep.SearchP99 = percentile(lat, 0.5), percentile(lat, 0.99)
	rep.AskedP50, rep.AskedP99 = percentile(asked, 0.5), percentile(asked, 0.99)
	return rep, nil
}

// openRecallStore opens the store the benchmark runs in: the PostgreSQL database of
// cfg.PostgresURL, else a SQLite file in a scratch directory removed on close.
func openRecallStore(ctx context.Context, cfg RecallConfig) (store.Backend, string, func(), error) {
	if cfg.PostgresURL != "" {
		db, err := postgres.Open(ctx, cfg.PostgresURL, postgres.Options{MaxConns: 4})
		if err != nil {
			return nil, "", nil, fmt.Errorf("open postgres: %w", err)
		}
		return db, "postgres", func() { db.Close() }, nil
	}
	dir, err := scratchDir(cfg.Dir, "spool-recall-")
	if err != nil {
		return nil, "", nil, err
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "recall.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return db, "sqlite", func() { db.Close(); os.RemoveAll(dir) }, nil
}

// fillerBatch is how many filler messages one append writes.
const fillerBatch = 1000

// writeFiller writes cfg.Filler messages of the standard workload (W1 over 200 sessions),
// session by session in batches, and adds each to the BM25 baselines' index.
func writeFiller(ctx context.Context, st store.Backend, cfg RecallConfig, idx *bm25Index) error {
	v, err := DefaultVocab()
	if err != nil {
		return err
	}
	specs, msgs, err := NewGenerator(v).W1(cfg.Seed, 200, cfg.Filler)
	if err != nil {
		return err
	}
	bySession := map[string][]store.Message{}
	for _, m := range msgs {
		bySession[m.SessionID] = append(bySession[m.SessionID], m)
	}
	msgs = nil
	base := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	for i, sp := range specs {
		at := base.Add(time.Duration(i) * time.Hour)
		if _, err := st.CreateSession(ctx, store.NewSession{ID: sp.ID, Source: sp.Source, Model: sp.Model, StartedAt: at}); err != nil {
			return err
		}
		ms := bySession[sp.ID]
		for j := range ms {
			ms[j].SessionID, ms[j].Timestamp = "", at.Add(time.Duration(j)*time.Second)
		}
		for len(ms) > 0 {
			n := min(fillerBatch, len(ms))
			ids, err := st.AppendBatch(ctx, sp.ID, ms[:n])
			if err != nil {
				return fmt.Errorf("session %s: %w", sp.ID, err)
			}
			for k, m := range ms[:n] {
				idx.add(ids[k], fts.Tokens(fts.IndexedText(m.Role, m.Content)+" "+m.ToolName+" "+fts.CallsText(m.ToolCalls)))
			}
			ms = ms[n:]
		}
		delete(bySession, sp.ID)
	}
	return nil
}

func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return math.Round(sorted[max(i, 0)]*1000) / 1000
}

// controlTerms are the words the AND-only search requires: the sanitized query's words as
// written (no stems, no stopwords dropped).
func controlTerms(text string) []string {
	var out []string
	fts.WalkMatch(fts.SanitizeQuery(text), func(t fts.Term) { out = append(out, fts.Tokens(t.Text)...) }, func(string) {})
	return out
}

// recallDoc is one indexed message: its id and the words the index holds of it.
type recallDoc struct {
	id    int64
	words []string
}

// bm25Index is plain Okapi BM25 (k1 1.2, b 0.75) over the documents' words as written, held
// as postings so it stays small and quick with a million filler messages.
type bm25Index struct {
	ids      []int64
	lens     []int32
	postings map[string][]posting
	total    int64
	// score and matched are search's scratch space, one slot a document.
	score   []float64
	matched []int32
}

type posting struct{ doc, tf int32 }

func newBM25() *bm25Index { return &bm25Index{postings: map[string][]posting{}} }

func (x *bm25Index) n() int { return len(x.ids) }

// add indexes one document.
func (x *bm25Index) add(id int64, words []string) {
	doc := int32(len(x.ids))
	x.ids, x.lens = append(x.ids, id), append(x.lens, int32(len(words)))
	x.total += int64(len(words))
	tf := map[string]int32{}
	for _, w := range words {
		tf[w]++
	}
	for w, f := range tf {
		x.postings[w] = append(x.postings[w], posting{doc, f})
	}
}

// search returns the ids of the ten best documents for terms; with all, only documents holding
// every term count (the AND-only control).
func (x *bm25Index) search(terms []string, all bool) []int64 {
	const k1, b = 1.2, 0.75
	n := float64(len(x.ids))
	avgdl := float64(x.total) / max(n, 1)
	if len(x.score) < len(x.ids) {
		x.score, x.matched = make([]float64, len(x.ids)), make([]int32, len(x.ids))
	}
	var touched []int32
	for _, t := range terms {
		ps := x.postings[t]
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			f := float64(p.tf)
			if x.matched[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			x.score[p.doc] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(x.lens[p.doc])/avgdl))
			x.matched[p.doc]++
		}
	}
	type scored struct {
		doc   int32
		score float64
	}
	var out []scored
	for _, d := range touched {
		if !all || int(x.matched[d]) >= len(terms) {
			out = append(out, scored{d, x.score[d]})
		}
		x.score[d], x.matched[d] = 0, 0
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].doc < out[j].doc
	})
	var ids []int64
	for _, s := range out[:min(10, len(out))] {
		ids = append(ids, x.ids[s.doc])
	}
	return ids
}
