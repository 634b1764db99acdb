package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

// scaler grows one store and measures it.
type scaler struct {
	cfg  ScaleConfig
	st   scaleStore
	size func(context.Context) int64
	gen  *scaleGen
	// written counts the many sessions' messages so far; sessions lists them, for appends.
	written  int
	sessions []string
	total    int
	chunk    int // how many chunks of the many sessions were generated (each its own seed)
}

// scaleGen holds the workload's generator and its W3 queries.
type scaleGen struct {
	g       *Generator
	queries []Query
}

func newScaleGen() (*scaleGen, error) {
	v, err := DefaultVocab()
	if err != nil {
		return nil, err
	}
	g := NewGenerator(v)
	return &scaleGen{g: g}, nil
}

const scaleLongID = "scale-long"

func (s *scaler) logf(format string, a ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, format+"\n", a...)
	}
}

// writeLong writes the long session in batches, compacting it every scaleCompactEvery
// messages: its earlier rows are archived (still searchable) behind a summary, as a long
// conversation's are, and the model sees the summary and the messages since.
func (s *scaler) writeLong(ctx context.Context) error {
	s.gen.queries = s.gen.g.Queries(s.cfg.Seed, s.samples(scaleSearches))
	_, msgs, err := s.gen.g.W1(s.cfg.Seed+7, 1, max(s.cfg.Long, 10))
	if err != nil {
		return err
	}
	msgs = msgs[:s.cfg.Long]
	if _, err := s.st.CreateSession(ctx, store.NewSession{ID: scaleLongID, Source: "cli", Model: "anthropic/claude-sonnet-4"}); err != nil {
		return err
	}
	for i := 0; i < len(msgs); i += scaleCompactEvery {
		batch := msgs[i:min(i+scaleCompactEvery, len(msgs))]
		for j := range batch {
			batch[j].SessionID = ""
		}
		if i > 0 {
			summary := store.Message{Role: store.RoleUser, Content: fmt.Sprintf("[summary of the first %d messages of this conversation]", i)}
			_, err := store.UnderLease(ctx, s.st, scaleLongID, func(f store.Fence) (int, error) {
				return s.st.ArchiveAndCompact(ctx, store.CompactRequest{SessionID: scaleLongID, Messages: []store.Message{summary}}, f)
			})
			if err != nil {
				return fmt.Errorf("compact at %d: %w", i, err)
			}
			s.total++
		}
		if _, err := s.st.AppendBatch(ctx, scaleLongID, batch); err != nil {
			return err
		}
		s.total += len(batch)
	}
	return nil
}

// grow writes the many sessions' messages up to n, in chunks of at most scaleChunk messages,
// each chunk the workload's W1 over its own sessions (about scaleSessionSize messages each).
func (s *scaler) grow(ctx context.Context, n int) error {
	for s.written < n {
		k := min(n-s.written, scaleChunk)
		sessions := max(1, k/scaleSessionSize)
		specs, msgs, err := s.gen.g.W1(s.cfg.Seed+uint64(s.chunk)*1000, sessions, max(k, 10*sessions))
		if err != nil {
			return err
		}
		msgs = msgs[:k]
		s.chunk++
		bySession := map[string][]store.Message{}
		for _, m := range msgs {
			bySession[m.SessionID] = append(bySession[m.SessionID], m)
		}
		for _, sp := range specs {
			id := fmt.Sprintf("scale-%03d-%s", s.chunk, sp.ID)
			ms := bySession[sp.ID]
			if len(ms) == 0 {
				continue
			}
			if _, err := s.st.CreateSession(ctx, store.NewSession{ID: id, Source: sp.Source, Model: sp.Model}); err != nil {
				return err
			}
			s.sessions = append(s.sessions, id)
			for j := range ms {
				ms[j].SessionID = ""
			}
			for len(ms) > 0 {
				b := min(fillerBatch, len(ms))
				if _, err := s.st.AppendBatch(ctx, id, ms[:b]); err != nil {
					return fmt.Errorf("session %s: %w", id, err)
				}
				ms = ms[b:]
			}
		}
		s.written += k
		s.total += k
	}
	return nil
}

// point grows the store to n messages and measures it.
func (s *scaler) point(ctx context.Context, n int) (ScalePoint, error) {
	t0 := time.Now()
	if err := s.grow(ctx, n); err != nil {
		return ScalePoint{}, err
	}
	// A bulk load leaves work behind (the word index catches up at the next search, SQLite's
	// WAL at its next checkpoint): one untimed search and list do it, so the measures are of
	// the store at rest and not of the load.
	if _, err := s.st.Search(ctx, store.SearchQuery{Text: "retry config", Limit: SearchLimit}); err != nil {
		return ScalePoint{}, fmt.Errorf("search: %w", err)
	}
	if _, err := s.st.ListSessions(ctx, store.ListOptions{Limit: ListLimit}); err != nil {
		return ScalePoint{}, fmt.Errorf("list: %w", err)
	}
	p := ScalePoint{Messages: n, FillSeconds: round3(time.Since(t0).Seconds())}
	var err error
	if p.AppendP50, p.AppendP99, err = s.appends(ctx); err != nil {
		return p, fmt.Errorf("append: %w", err)
	}
	if p.ResumeP50, p.ResumeP99, p.ResumeMessages, err = s.resumes(ctx); err != nil {
		return p, fmt.Errorf("resume: %w", err)
	}
	if p.SearchP50, p.SearchP99, err = s.searches(ctx); err != nil {
		return p, fmt.Errorf("search: %w", err)
	}
	if p.ListP99, err = s.lists(ctx); err != nil {
		return p, fmt.Errorf("list: %w", err)
	}
	p.Total, p.Sessions = s.total, len(s.sessions)+1
	p.DBBytes, p.RSSBytes = s.size(ctx), residentBytes()
	return p, nil
}

// samples is how many times a measure is taken: n, or fewer when the configuration caps it.
func (s *scaler) samples(n int) int {
	if s.cfg.Samples > 0 {
		return min(n, s.cfg.Samples)
	}
	return n
}

// timed runs f times times and returns the p50 and p99 of its durations in milliseconds.
func timed(times int, f func(i int) error) (p50, p99 float64, err error) {
	lat := make([]time.Duration, 0, times)
	for i := range times {
		t := time.Now()
		if err := f(i); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t))
	}
	l := summarize(lat)
	return l.P50, l.P99, nil
}

// appends appends one message at a time (one transaction each) to the many sessions in turn.
func (s *scaler) appends(ctx context.Context) (float64, float64, error) {
	n := s.samples(scaleAppends)
	step := max(1, len(s.sessions)/n)
	p50, p99, err := timed(n, func(i int) error {
		sid := s.sessions[(i*step)%len(s.sessions)]
		_, err := s.st.Append(ctx, sid, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("appended at size %d: check the retry config again (%d)", s.written, i)})
		return err
	})
	s.total += n
	return p50, p99, err
}

// resumes loads what the model sees of the long session.
func (s *scaler) resumes(ctx context.Context) (p50, p99 float64, n int, err error) {
	p50, p99, err = timed(s.samples(scaleResumes), func(int) error {
		ms, err := s.st.Conversation(ctx, scaleLongID, store.ViewActive)
		n = len(ms)
		return err
	})
	return p50, p99, n, err
}

// searches runs the workload's W3 queries (a page of SearchLimit hits with context, as W3).
func (s *scaler) searches(ctx context.Context) (float64, float64, error) {
	return timed(len(s.gen.queries), func(i int) error {
		_, err := s.st.Search(ctx, store.SearchQuery{Text: s.gen.queries[i].Text, Limit: SearchLimit})
		if s.cfg.SlowSearch > 0 {
			time.Sleep(s.cfg.SlowSearch)
		}
		return err
	})
}

// lists lists the newest sessions (a page of ListLimit).
func (s *scaler) lists(ctx context.Context) (float64, error) {
	_, p99, err := timed(s.samples(scaleLists), func(int) error {
		_, err := s.st.ListSessions(ctx, store.ListOptions{Limit: ListLimit})
		return err
	})
	return p99, err
}

// postgresSize is the database's size on disk.
func postgresSize(ctx context.Context, url string) (int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}
