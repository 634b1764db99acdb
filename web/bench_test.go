package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/store"
)

// Server time of the main pages, measured around ServeHTTP (no network), reported as p50 and
// p99 in milliseconds:
//
//	go test ./web -run '^$' -bench . -benchtime 200x
//
// Targets: sessions page on 10,000 sessions and the first page of a 20,000-message
// session p50 < 20 ms, p99 < 100 ms; search page on the standard workload's database p99 < 50 ms.

func benchPages(b *testing.B, h http.Handler, paths []string) {
	b.Helper()
	// One warm-up pass: statement caches and the page cache are what a running server has.
	for _, p := range paths[:min(len(paths), 5)] {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s = %d: %s", p, rec.Code, shorten(rec.Body.String(), 300))
		}
	}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("GET", paths[i%len(paths)], nil)
		rec := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(rec, req)
		times = append(times, time.Since(t0))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s = %d", paths[i%len(paths)], rec.Code)
		}
	}
	b.StopTimer()
	slices.Sort(times)
	q := func(p float64) float64 {
		return float64(times[min(int(p*float64(len(times))), len(times)-1)]) / 1e6
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

func BenchmarkSessionsPage10k(b *testing.B) {
	st := openStore(b)
	start := time.Now().Add(-30 * 24 * time.Hour)
	sources := []string{"cli", "api", "telegram", "slack"}
	models := []string{"gpt-4o", "claude-sonnet-4", "gpt-4o-mini"}
	for i := 0; i < 10_000; i++ {
		at := start.Add(time.Duration(i) * 4 * time.Minute)
		s := store.Session{ID: fmt.Sprintf("s%05d", i), Source: sources[i%4], Model: models[i%3], StartedAt: at,
			Cwd: fmt.Sprintf("/home/dev/project-%d", i%40), GitBranch: "main",
			Usage: store.Usage{InputTokens: int64(1000 * i), CacheReadTokens: int64(800 * i), OutputTokens: 50, APICalls: 3, CostUSD: 0.01}}
		if i%7 == 0 {
			s.Title = fmt.Sprintf("deploy the service #%d", i)
		}
		// One session in ten is a branch (one in a hundred a branch of a branch), so the
		// page reads trees, and its filter and query match branches under other roots.
		if i%10 == 5 || i%100 == 8 {
			s.ParentID, s.Relation = fmt.Sprintf("s%05d", i-3), store.RelationBranch
		}
		ms := []store.Message{{Role: store.RoleUser, Content: fmt.Sprintf("please fix issue %d in the deploy pipeline", i), Timestamp: at},
			{Role: store.RoleAssistant, Content: "done", Timestamp: at.Add(time.Second)}}
		if err := st.ImportSession(bg, s, "", ms); err != nil {
			b.Fatal(err)
		}
	}
	s := New(st, Options{})
	benchPages(b, s, []string{"/ui/", "/ui/?page=2", "/ui/?page=100", "/ui/?q=deploy", "/ui/?source=api&model=gpt-4o"})
}

func BenchmarkSessionPage20k(b *testing.B) {
	st := openStore(b)
	sess, err := st.CreateSession(bg, store.NewSession{Title: "a long one", Model: "gpt-4o"})
	if err != nil {
		b.Fatal(err)
	}
	ts := time.Now().Add(-24 * time.Hour)
	for chunk := 0; chunk < 20; chunk++ {
		var ms []store.Message
		for i := 0; i < 250; i++ {
			for _, m := range turn(i%20, ts) {
				m.ToolCalls = slices.Clone(m.ToolCalls)
				for j := range m.ToolCalls {
					m.ToolCalls[j].ID = fmt.Sprintf("c%d-%d", chunk, i)
				}
				if m.ToolCallID != "" {
					m.ToolCallID = fmt.Sprintf("c%d-%d", chunk, i)
				}
				ms = append(ms, m)
			}
		}
		mustAppend(b, st, sess.ID, ms...)
	}
	for i := 0; i < 300; i++ {
		if err := st.RecordRequest(bg, sess.ID, store.RequestRecord{Model: "gpt-4o", Usage: store.Usage{InputTokens: 10000, CacheReadTokens: 9000}}); err != nil {
			b.Fatal(err)
		}
	}
	if got, _ := st.GetSession(bg, sess.ID); got.MessageCount != 20_000 {
		b.Fatalf("seeded %d messages", got.MessageCount)
	}
	s := New(st, Options{})
	benchPages(b, s, []string{"/ui/sessions/" + sess.ID})
}

func BenchmarkSearchPage(b *testing.B) {
	sizes := bench.DefaultSizes()
	v, err := bench.DefaultVocab()
	if err != nil {
		b.Fatal(err)
	}
	g := bench.NewGenerator(v)
	specs, msgs, err := g.W1(sizes.Seed, sizes.Sessions, sizes.Messages)
	if err != nil {
		b.Fatal(err)
	}
	st := openStore(b)
	for _, sp := range specs {
		if _, err := st.CreateSession(bg, store.NewSession{ID: sp.ID, Source: sp.Source, Model: sp.Model}); err != nil {
			b.Fatal(err)
		}
	}
	bySession := map[string][]store.Message{}
	for _, m := range msgs {
		bySession[m.SessionID] = append(bySession[m.SessionID], m)
	}
	for id, ms := range bySession {
		for len(ms) > 0 {
			n := min(len(ms), 1000)
			mustAppend(b, st, id, ms[:n]...)
			ms = ms[n:]
		}
	}
	var paths []string
	for _, q := range g.Queries(sizes.Seed, sizes.Queries) {
		paths = append(paths, "/ui/search?q="+url.QueryEscape(q.Text))
	}
	s := New(st, Options{})
	benchPages(b, s, paths)
}
