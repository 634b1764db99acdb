package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/bench"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// BenchmarkAppendWAL appends the standard workload's messages (bench.Generator's W1: 60 sessions,
// 6,000 messages), one per transaction, and reports the WAL each append writes (WAL-B/op),
// which does not depend on the disk's moment the way a commit rate does. -benchtime 3000x
// measures the first half of the messages on a fresh index.
func BenchmarkAppendWAL(b *testing.B) {
	ctx := context.Background()
	url := pgtest.NewDatabase(b)
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	v, err := bench.DefaultVocab()
	if err != nil {
		b.Fatal(err)
	}
	specs, msgs, err := bench.NewGenerator(v).W1(20260428, 60, 6000)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range specs {
		if _, err := db.CreateSession(ctx, store.NewSession{ID: s.ID, Source: s.Source, Model: s.Model}); err != nil {
			b.Fatal(err)
		}
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	lsn := func() int64 {
		var n int64
		if err := c.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'").Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	b.ResetTimer()
	before := lsn()
	for i := range b.N {
		m := msgs[i%len(msgs)]
		if _, err := db.Append(ctx, m.SessionID, m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(lsn()-before)/float64(b.N), "WAL-B/op")
}
