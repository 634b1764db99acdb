package postgres

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// stuckANALYZE is a querier whose ANALYZE runs until release is closed; any other call is a
// test failure (the searches under test must not query).
type stuckANALYZE struct {
	t       *testing.T
	started chan struct{}
	release chan struct{}
}

func (q *stuckANALYZE) Exec(ctx context.Context, sql string, _ ...any) (pgconn.CommandTag, error) {
	if sql != "ANALYZE messages" {
		q.t.Errorf("unexpected Exec %q", sql)
		return pgconn.CommandTag{}, context.Canceled
	}
	close(q.started)
	select {
	case <-q.release:
	case <-ctx.Done():
	}
	return pgconn.CommandTag{}, context.Canceled // the statistics stay as they were
}

func (q *stuckANALYZE) Query(context.Context, string, ...any) (pgx.Rows, error) {
	q.t.Error("unexpected Query")
	return nil, context.Canceled
}

func (q *stuckANALYZE) QueryRow(context.Context, string, ...any) pgx.Row {
	q.t.Error("unexpected QueryRow")
	return nil
}

// TestSearchesDoNotWaitForANALYZE: while one search of a handle runs ANALYZE for want of
// statistics, the handle's other searches get the statistics there are at once (none: they
// run unbounded) and start no second ANALYZE; they neither wait for the first nor query.
func TestSearchesDoNotWaitForANALYZE(t *testing.T) {
	t.Parallel()
	w := &wordStats{at: time.Now()} // read a moment ago: none yet
	q := &stuckANALYZE{t: t, started: make(chan struct{}), release: make(chan struct{})}
	log := slog.New(slog.DiscardHandler)
	first := make(chan struct{})
	go func() {
		defer close(first)
		w.analyze(context.Background(), q, log)
	}()
	<-q.started
	others := make(chan struct{})
	go func() {
		defer close(others)
		for range 3 {
			if s := w.get(context.Background(), q, log); len(s.freq) != 0 {
				t.Errorf("get during ANALYZE: %d words, want the empty statistics there are", len(s.freq))
			}
			if s := w.analyze(context.Background(), q, log); len(s.freq) != 0 {
				t.Errorf("analyze during ANALYZE: %d words", len(s.freq))
			}
		}
	}()
	select {
	case <-others:
	case <-time.After(time.Minute): // a hang guard: before, they queued behind the ANALYZE for good here
		t.Fatal("searches waited for another search's ANALYZE")
	}
	close(q.release)
	<-first
}
