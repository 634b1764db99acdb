package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// BenchmarkAppendWAL appends the standard workload's messages (bench.Generator's W1: 60 sessions,
// 6,000 messages), one per transaction, and reports the WAL each append writes (WAL-B/op),
// which does not depend on the disk's moment the way a commit rate does. -benchtime 3000x
// measures the first half of the messages on a fresh index. With the server on this machine it
// also reports the CPU time an append costs the server's backend (server-CPU-us/op, from
// /proc; the handle has one connection) and this process (client-CPU-us/op).
func BenchmarkAppendWAL(b *testing.B) {
	ctx := context.Background()
	url := pgtest.NewDatabase(b)
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 1})
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
	pgLSN := func(n int64) string { return fmt.Sprintf("%X/%X", uint64(n)>>32, uint32(n)) }
	var pid int
	if err := db.Pool().QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	srv0, srvOK := procCPU(pid)
	cli0 := selfCPU()
	b.ResetTimer()
	before := lsn()
	for i := range b.N {
		m := msgs[i%len(msgs)]
		if _, err := db.Append(ctx, m.SessionID, m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := lsn()
	// For a profile of the backend (perf record -g -p PID) and the WAL by record type
	// (pg_waldump --stats=record -p DATADIR/pg_wal -s FROM -e TO), with -v.
	if testing.Verbose() {
		b.Logf("server backend pid %d; WAL of the appends from %s to %s", pid, pgLSN(before), pgLSN(after))
	}
	b.ReportMetric(float64(after-before)/float64(b.N), "WAL-B/op")
	b.ReportMetric((selfCPU()-cli0).Seconds()*1e6/float64(b.N), "client-CPU-us/op")
	if srv1, ok := procCPU(pid); ok && srvOK {
		b.ReportMetric((srv1-srv0).Seconds()*1e6/float64(b.N), "server-CPU-us/op")
	}
}

// procCPU is the user and system time of process pid so far, if /proc shows it (the server
// runs on this machine).
func procCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	// utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+st) * 10 * time.Millisecond, true
}

// selfCPU is this process's user and system time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
