package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
)

// The read benchmarks run the workload's W2 and W3 calls (WORKLOAD.md) on a database that
// already holds its data: fill an empty one with
//
//	spool bench store --backend postgres --postgres-url URL
//
// then run SPOOL_BENCH_POSTGRES_DSN=URL go test ./store/postgres -run '^$' -bench 'W2Resume|W3Search'
// on the machine of the server. Besides the time, each reports the server backend's CPU per
// call (/proc/<pid>/schedstat of the pool's one connection), which the machine's load moves much
// less than the latency, and the latency's p50 and p99.
const benchDSNEnv = "SPOOL_BENCH_POSTGRES_DSN"

// readBench opens the database of benchDSNEnv on one connection and returns it with a function
// that reads the server backend's CPU time so far.
func readBench(b *testing.B) (*postgres.DB, func() time.Duration) {
	dsn := os.Getenv(benchDSNEnv)
	if dsn == "" {
		b.Skip("set " + benchDSNEnv + " to a database filled by spool bench store --backend postgres --postgres-url")
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.ListSessions(ctx, store.ListOptions{Limit: 1}); err != nil { // connects the pool
		b.Fatal(err)
	}
	side, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	var pid int
	err = side.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
		AND backend_type = 'client backend' ORDER BY backend_start DESC LIMIT 1`).Scan(&pid)
	side.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return db, func() time.Duration {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			b.Fatalf("server backend %d: %v (the server must run on this machine)", pid, err)
		}
		ns, _ := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
		return time.Duration(ns)
	}
}

func reportCalls(b *testing.B, lat []time.Duration, server time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[max(int(float64(len(lat))*q+0.999999)-1, 0)].Microseconds()) / 1000
	}
	b.ReportMetric(float64(server.Microseconds())/1000/float64(len(lat)), "server-ms/call")
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkW3Search is one op per pass over W3's 500 queries, page size 20.
func BenchmarkW3Search(b *testing.B) {
	db, serverCPU := readBench(b)
	v, err := bench.DefaultVocab()
	if err != nil {
		b.Fatal(err)
	}
	sizes := bench.DefaultSizes()
	queries := bench.NewGenerator(v).Queries(sizes.Seed, sizes.Queries)
	ctx := context.Background()
	var lat []time.Duration
	var server time.Duration
	b.ResetTimer()
	for range b.N {
		for _, q := range queries {
			c, t := serverCPU(), time.Now()
			if _, err := db.Search(ctx, store.SearchQuery{Text: q.Text, Limit: bench.SearchLimit}); err != nil {
				b.Fatalf("%q: %v", q.Text, err)
			}
			lat = append(lat, time.Since(t))
			server += serverCPU() - c
		}
	}
	reportCalls(b, lat, server)
}

// BenchmarkW2Resume is one op per W2 round: the 20 largest sessions loaded whole.
func BenchmarkW2Resume(b *testing.B) {
	db, serverCPU := readBench(b)
	v, err := bench.DefaultVocab()
	if err != nil {
		b.Fatal(err)
	}
	sizes := bench.DefaultSizes()
	specs, _, err := bench.NewGenerator(v).W1(sizes.Seed, sizes.Sessions, sizes.Messages)
	if err != nil {
		b.Fatal(err)
	}
	slices.SortStableFunc(specs, func(x, y bench.SessionSpec) int { return y.Size - x.Size })
	specs = specs[:bench.ResumeTop]
	ctx := context.Background()
	var lat []time.Duration
	var server time.Duration
	b.ResetTimer()
	for range b.N {
		for _, s := range specs {
			c, t := serverCPU(), time.Now()
			ms, err := db.Conversation(ctx, s.ID, store.ViewActive)
			lat = append(lat, time.Since(t))
			server += serverCPU() - c
			if err != nil || len(ms) != s.Size {
				b.Fatalf("%s: %d messages, want %d: %v", s.ID, len(ms), s.Size, err)
			}
		}
	}
	reportCalls(b, lat, server)
}
