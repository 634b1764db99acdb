package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
)

// openPostgres opens the PostgreSQL database at url; the synchronous mode is the server's
// business (the cluster the benchmark starts runs with fsync=on, synchronous_commit=on).
func openPostgres(ctx context.Context, url, _ string) (Store, error) {
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
	if err != nil {
		return nil, err
	}
	return db, nil
}

// openAt opens a store at loc: a postgres:// URL, else a SQLite file.
func openAt(ctx context.Context, loc, synchronous string) (Store, error) {
	if postgres.IsURL(loc) {
		return openPostgres(ctx, loc, synchronous)
	}
	return openSQLite(ctx, loc, synchronous)
}

// PostgresConfig configures RunStorePostgres.
type PostgresConfig struct {
	// Store is the configuration of the SQLite run; the PostgreSQL run uses the same sizes,
	// except W5, which runs PostgresW5Procs writers (the group-commit figure).
	Store StoreConfig
	// LeaseWorkerArgs start one lease benchmark worker (for the CLI: "bench", "lease-worker").
	LeaseWorkerArgs []string
	// URL, when set, is an existing server to measure instead of a cluster of our own (its
	// durability settings are reported as found).
	URL string
}

// PostgresW5Procs is the number of concurrent writers of the PostgreSQL W5.
const PostgresW5Procs = 8

// The cluster's group-commit settings, durable both (README "PostgreSQL"): a commit waits
// CommitDelayUS microseconds before its flush when at least CommitSiblings other transactions
// are active, so one flush covers the commits that arrive meanwhile. A lone writer (W1) never
// waits. With 8 writers on this 2-core VM, W5 ran at 1,369 appends/s without the delay and
// 1,877 with 100 µs (means of four alternating runs; 300 µs was slower than none).
const (
	CommitDelayUS  = 100
	CommitSiblings = 5
)

// PostgresReport is what `spool bench store --backend postgres` prints: both backends' reports
// from the same run, the machine's fsync ceiling measured in that run, and the targets.
type PostgresReport struct {
	Benchmark    string       `json:"benchmark"`
	Server       ServerInfo   `json:"server"`
	FsyncCeiling FsyncResult  `json:"fsync_ceiling"`
	SQLite       *Report      `json:"sqlite"`
	Postgres     *Report      `json:"postgres"`
	W1WAL        WALResult    `json:"postgres_w1_wal"`
	Commits      CommitRates  `json:"postgres_commit_rates"`
	W1Bound      *W1Bound     `json:"postgres_w1_bound,omitempty"`
	W5Bound      *W5Bound     `json:"postgres_w5_bound,omitempty"`
	Handover     HandoverRes  `json:"postgres_lease_handover"`
	Targets      []TargetLine `json:"targets"`
	TotalS       float64      `json:"total_runtime_s"`
}

// ServerInfo is the PostgreSQL server the run measured and its durability settings.
type ServerInfo struct {
	Version           string `json:"version"`
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronous_commit"`
	WALSyncMethod     string `json:"wal_sync_method"`
	TrackWALIOTiming  string `json:"track_wal_io_timing"`
	CommitDelay       string `json:"commit_delay"`
	CommitSiblings    string `json:"commit_siblings"`
	StartedForRun     bool   `json:"started_for_run"`
}

// FsyncResult is pg_test_fsync's figure for the server's WAL sync method (wal_sync_method as
// the server reports it), one 8 kB write and its sync per operation: the most commits per
// second one writer can make when every commit waits for its flush. It is measured right
// before and right after W1; OpsPerS is their mean.
type FsyncResult struct {
	Command  string  `json:"command"`
	Method   string  `json:"method"`
	OpsPerS  float64 `json:"ops_per_s"`
	BeforeW1 float64 `json:"before_w1_ops_per_s"`
	AfterW1  float64 `json:"after_w1_ops_per_s"`
	Measured bool    `json:"measured"`
}

// TargetLine is one target of the PostgreSQL benchmark with the measured value.
type TargetLine struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
}

// RunStorePostgres runs W1-W5 on SQLite and on a durable PostgreSQL cluster started for the
// run (fsync=on, synchronous_commit=on), measures the fsync ceiling with pg_test_fsync and the
// lease hand-over between two processes on PostgreSQL, and writes one JSON report.
func RunStorePostgres(ctx context.Context, cfg PostgresConfig, stdout io.Writer) error {
	rep, err := runPostgres(ctx, cfg)
	if rep == nil {
		return err
	}
	return writeReport(stdout, rep, err)
}

func runPostgres(ctx context.Context, cfg PostgresConfig) (*PostgresReport, error) {
	start := time.Now()
	log := cfg.Store.Log
	if log == nil {
		log = io.Discard
	}
	rep := &PostgresReport{Benchmark: "spool bench store --backend postgres"}
	url := cfg.URL
	var cluster *pgCluster
	if url == "" {
		dir, err := scratchDir(cfg.Store.Dir, "spool-bench-pg-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if cluster, err = startCluster(ctx, dir); err != nil {
			return nil, err
		}
		defer cluster.stop()
		url = cluster.url
		rep.Server.StartedForRun = true
		fmt.Fprintf(log, "postgres: cluster on %s (fsync=on, synchronous_commit=on)\n", postgres.Redact(url))
	}
	if err := serverInfo(ctx, url, &rep.Server); err != nil {
		return nil, err
	}

	fmt.Fprintln(log, "== SQLite")
	var err error
	if rep.SQLite, err = Run(ctx, cfg.Store); rep.SQLite == nil {
		return nil, fmt.Errorf("sqlite run: %w", err)
	}
	verifyErr := err
	fmt.Fprintln(log, "== PostgreSQL")
	pg := cfg.Store
	pg.Location = url
	sizes, _, serr := SizesFromEnv(os.LookupEnv)
	if cfg.Store.Sizes != nil {
		sizes, serr = *cfg.Store.Sizes, nil
	}
	if serr != nil {
		return nil, serr
	}
	sizes.W5Procs = PostgresW5Procs
	pg.Sizes = &sizes
	// The fsync ceiling is measured right before and right after W1 on the filesystem the
	// cluster uses (this machine's disk changes its speed several times over within minutes),
	// with the server's own WAL counters over W1 between the two.
	var walBefore walCounters
	haveWAL := false
	// The CPU of W1's appends and of W5's, accounted for by process (postgres_w5_bound): the
	// server's, the appending processes' (this one in W1, the workers' over their appends in
	// W5), the rest of the machine's.
	var w1CPU, w5CPU cpuAccount
	pg.BeforeW1 = func(ctx context.Context) error {
		if cluster != nil {
			r, err := cluster.fsyncCeiling(ctx, rep.Server.WALSyncMethod)
			if err != nil {
				return err
			}
			rep.FsyncCeiling = r
			fmt.Fprintf(log, "postgres: fsync ceiling before W1 %.0f ops/s (%s, %s)\n", r.BeforeW1, r.Command, r.Method)
		}
		if err := commitRates(ctx, url, &rep.Commits, false); err != nil {
			return err
		}
		var err error
		if walBefore, err = readWAL(ctx, url); err == nil {
			haveWAL = true
		} else {
			// pg_stat_wal is PostgreSQL 14's; the counters are a diagnostic, not a target.
			fmt.Fprintf(log, "postgres: no WAL counters for W1: %v\n", err)
		}
		w1CPU.before(ctx, url, log)
		return nil
	}
	pg.AfterW1 = func(ctx context.Context) error {
		w1CPU.after(ctx, url, log, processCPU().Seconds()-w1CPU.selfCPUS)
		if after, err := readWAL(ctx, url); err == nil && haveWAL {
			rep.W1WAL = after.since(walBefore, sizes.Messages, rep.Server.TrackWALIOTiming == "on")
		}
		if cluster != nil {
			r, err := cluster.fsyncCeiling(ctx, rep.Server.WALSyncMethod)
			if err != nil {
				return err
			}
			if err := commitRates(ctx, url, &rep.Commits, true); err != nil {
				return err
			}
			rep.FsyncCeiling.AfterW1 = r.BeforeW1
			rep.FsyncCeiling.OpsPerS = round3((rep.FsyncCeiling.BeforeW1 + r.BeforeW1) / 2)
			fmt.Fprintf(log, "postgres: fsync ceiling after W1 %.0f ops/s; W1's commits: %.0f WAL bytes each, %.3f ms a flush\n",
				r.BeforeW1, rep.W1WAL.BytesPerAppend, rep.W1WAL.SyncMSMean)
		}
		return nil
	}
	pg.BeforeW5 = func(ctx context.Context) error {
		w5CPU.before(ctx, url, log)
		return nil
	}
	pg.AfterW5 = func(ctx context.Context, results []WorkerResult) error {
		var clients float64
		for _, wr := range results {
			w5CPU.appends += len(wr.LatenciesNS)
			clients += wr.CPUS
		}
		w5CPU.after(ctx, url, log, clients)
		return nil
	}
	if rep.Postgres, err = Run(ctx, pg); rep.Postgres == nil {
		return nil, fmt.Errorf("postgres run: %w", err)
	}
	verifyErr = errors.Join(verifyErr, err)

	fmt.Fprintln(log, "== PostgreSQL lease hand-over")
	if rep.Handover, err = postgresHandover(ctx, cfg, url); err != nil {
		return nil, err
	}
	rep.Targets = postgresTargets(rep)
	rep.W1Bound = w1Bound(rep.Postgres.W1.MsgsPerS, rep.Commits, rep.FsyncCeiling)
	w1CPU.appends = rep.Postgres.W1.N
	timed := rep.Server.TrackWALIOTiming == "on"
	if rep.W5Bound = w5Bound(w5CPU.span(timed), w1CPU.span(timed), runtime.NumCPU(), rep.Postgres.W1.MsgsPerS); rep.W5Bound != nil {
		b := rep.W5Bound
		fmt.Fprintf(log, "postgres: W5 per append: server %.0f µs, workers %.0f µs, rest of the machine %.0f µs (busy %.0f%%); %d cores allow %.0f appends/s = %.2fx W1; %.1f appends a WAL flush\n",
			b.ServerCPUUSPerAppend, b.ClientsCPUUSPerAppend, b.OtherCPUUSPerAppend, 100*b.MachineBusyShare, b.Cores, b.CPUBoundPerS, b.MaxRatioToW1, b.AppendsPerFlush)
	}
	rep.TotalS = round3(time.Since(start).Seconds())
	return rep, verifyErr
}

// CommitRates is how many commits per second one writer makes on the server, right before and
// right after W1, with a one-row insert of 4 bytes (PostgreSQL's cheapest durable commit: about
// 100 bytes of WAL, so most commits rewrite the same WAL page, as pg_test_fsync does) and of
// 5,000 random bytes (about the WAL of one W1 append). They show what the disk of that moment
// allows a commit of each size, beside pg_test_fsync's figure.
type CommitRates struct {
	SmallBefore float64 `json:"small_before_w1_per_s"`
	SmallAfter  float64 `json:"small_after_w1_per_s"`
	LargeBefore float64 `json:"5kb_before_w1_per_s"`
	LargeAfter  float64 `json:"5kb_after_w1_per_s"`
}

// W1Bound sets W1 beside one writer's cheapest commit in the same run (the 4-byte row of
// postgres_commit_rates, the mean of before and after W1). Each append is a commit with its
// round trip, so W1 cannot pass that rate whatever an append costs; CheapestShare is that rate
// over the fsync ceiling, the most any one-commit-per-append writer could score against it.
type W1Bound struct {
	CheapestCommitPerS float64 `json:"cheapest_commit_per_s"`
	W1Share            float64 `json:"w1_share_of_cheapest_commit"`
	CheapestShare      float64 `json:"cheapest_commit_share_of_ceiling"`
}

// w1Bound is nil unless both commit rates and the ceiling were measured.
func w1Bound(w1 float64, c CommitRates, f FsyncResult) *W1Bound {
	if c.SmallBefore <= 0 || c.SmallAfter <= 0 || !f.Measured || f.OpsPerS <= 0 {
		return nil
	}
	cheapest := (c.SmallBefore + c.SmallAfter) / 2
	return &W1Bound{CheapestCommitPerS: round3(cheapest), W1Share: round3(w1 / cheapest), CheapestShare: round3(cheapest / f.OpsPerS)}
}

// commitDuration is how long each commit rate is measured.
const commitDuration = 2 * time.Second

func commitRates(ctx context.Context, url string, r *CommitRates, after bool) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE spool_bench_commits (x bytea)"); err != nil {
		return fmt.Errorf("postgres: commit rate: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "DROP TABLE spool_bench_commits") //nolint:errcheck // best effort
	rate := func(payload []byte) (float64, error) {
		n := 0
		start := time.Now()
		for time.Since(start) < commitDuration {
			if _, err := conn.Exec(ctx, "INSERT INTO spool_bench_commits VALUES ($1)", payload); err != nil {
				return 0, fmt.Errorf("postgres: commit rate: %w", err)
			}
			n++
		}
		return round3(float64(n) / time.Since(start).Seconds()), nil
	}
	large := make([]byte, 5000)
	rng := NewRng(1)
	for i := range large {
		large[i] = byte(rng.Next())
	}
	small, err := rate([]byte{1, 2, 3, 4})
	if err != nil {
		return err
	}
	big, err := rate(large)
	if err != nil {
		return err
	}
	if after {
		r.SmallAfter, r.LargeAfter = small, big
	} else {
		r.SmallBefore, r.LargeBefore = small, big
	}
	return nil
}

// walCounters is a reading of pg_stat_wal.
type walCounters struct {
	bytes, fpi, writes, syncs int64
	writeMS, syncMS           float64
}

func readWAL(ctx context.Context, url string) (walCounters, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return walCounters{}, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	var c walCounters
	var bytes float64
	if err := conn.QueryRow(ctx, `SELECT wal_bytes, wal_fpi, wal_write, wal_sync, wal_write_time, wal_sync_time
		FROM pg_stat_wal`).Scan(&bytes, &c.fpi, &c.writes, &c.syncs, &c.writeMS, &c.syncMS); err != nil {
		return c, fmt.Errorf("postgres: read pg_stat_wal: %w", err)
	}
	c.bytes = int64(bytes)
	return c, nil
}

// WALResult is what the server's WAL did during W1 (pg_stat_wal before and after): how many
// bytes each append's commit wrote and, with track_wal_io_timing on, how long a flush took
// (the time a one-writer append cannot avoid waiting for).
type WALResult struct {
	BytesPerAppend float64 `json:"wal_bytes_per_append"`
	FPI            int64   `json:"full_page_images"`
	Syncs          int64   `json:"syncs"`
	SyncMSMean     float64 `json:"sync_ms_mean,omitempty"`
	WriteMSMean    float64 `json:"write_ms_mean,omitempty"`
}

func (c walCounters) since(b walCounters, appends int, timed bool) WALResult {
	r := WALResult{FPI: c.fpi - b.fpi, Syncs: c.syncs - b.syncs}
	if appends > 0 {
		r.BytesPerAppend = round3(float64(c.bytes-b.bytes) / float64(appends))
	}
	if timed && r.Syncs > 0 {
		r.SyncMSMean = round3((c.syncMS - b.syncMS) / float64(r.Syncs))
	}
	if timed && c.writes > b.writes {
		r.WriteMSMean = round3((c.writeMS - b.writeMS) / float64(c.writes-b.writes))
	}
	return r
}

// postgresHandover measures the hand-over between two lease worker processes on url.
func postgresHandover(ctx context.Context, cfg PostgresConfig, url string) (HandoverRes, error) {
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
	if err != nil {
		return HandoverRes{}, err
	}
	defer db.Close()
	if _, err := db.CreateSession(ctx, store.NewSession{ID: "lease-handover", Source: "bench"}); err != nil {
		return HandoverRes{}, err
	}
	lb := &leaseBench{cfg: LeaseConfig{WorkerExe: cfg.Store.WorkerExe, WorkerArgs: cfg.LeaseWorkerArgs,
		WorkerEnv: cfg.Store.WorkerEnv, Handovers: 200}, path: url, log: io.Discard}
	if cfg.Store.Log != nil {
		lb.log = cfg.Store.Log
	}
	return lb.handover(ctx)
}

func postgresTargets(rep *PostgresReport) []TargetLine {
	p, s := rep.Postgres, rep.SQLite
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return round3(a / b)
	}
	var out []TargetLine
	if rep.FsyncCeiling.Measured {
		r := ratio(p.W1.MsgsPerS, rep.FsyncCeiling.OpsPerS)
		out = append(out, TargetLine{"W1 one writer / fsync ceiling (mean of before and after W1)", r, ">= 0.5", r >= 0.5})
	}
	r := ratio(p.W5.MsgsPerS, p.W1.MsgsPerS)
	out = append(out, TargetLine{fmt.Sprintf("W5 %d writers / W1 one writer (msg/s)", p.W5.Procs), r, ">= 3", r >= 3})
	r = ratio(p.W2.P99, s.W2.P99)
	out = append(out, TargetLine{"W2 resume p99, PostgreSQL / SQLite", r, "<= 2", r <= 2})
	r = ratio(p.W3.P99, s.W3.P99)
	out = append(out, TargetLine{"W3 search p99, PostgreSQL / SQLite", r, "<= 2", r <= 2})
	rej := -1.0
	if p.W3.EngineRejected != nil {
		rej = float64(*p.W3.EngineRejected)
	}
	out = append(out, TargetLine{"W3 engine rejections (PostgreSQL)", rej, "0", rej == 0})
	out = append(out, TargetLine{"lease hand-over p99 across two processes (ms)", rep.Handover.P99, "< 50", rep.Handover.P99 < 50})
	return out
}

func serverInfo(ctx context.Context, url string, si *ServerInfo) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	for _, q := range []struct {
		setting string
		dst     *string
	}{{"server_version", &si.Version}, {"fsync", &si.Fsync}, {"synchronous_commit", &si.SynchronousCommit},
		{"wal_sync_method", &si.WALSyncMethod}, {"track_wal_io_timing", &si.TrackWALIOTiming},
		{"commit_delay", &si.CommitDelay}, {"commit_siblings", &si.CommitSiblings}} {
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", q.setting).Scan(q.dst); err != nil {
			return fmt.Errorf("postgres: read %s: %w", q.setting, err)
		}
	}
	return nil
}

// pgCluster is a throwaway PostgreSQL cluster in a scratch directory, durable settings on.
type pgCluster struct {
	bin, dir, url string
	asPostgres    bool // we are root: the server runs as the postgres user
}

// pgBin finds the newest installed PostgreSQL server binaries (Debian's layout first, then PATH).
func pgBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) < pgMajor(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("postgres: no initdb found (apt-get install postgresql, or pass --postgres-url)")
}

func pgMajor(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func (c *pgCluster) cmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.asPostgres {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.CommandContext(ctx, path, args...)
}

func (c *pgCluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	cmd := c.cmd(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("postgres: %s: %w: %s", name, err, strings.TrimSpace(lastLines(out.String(), 5)))
	}
	return out.Bytes(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func startCluster(ctx context.Context, dir string) (*pgCluster, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	c := &pgCluster{bin: bin, dir: dir, asPostgres: os.Geteuid() == 0}
	if c.asPostgres {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("postgres: running as root needs a postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if _, err := c.run(ctx, "initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8"); err != nil {
		return nil, err
	}
	if _, err := c.run(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60", "-o",
		fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=on -c synchronous_commit=on -c full_page_writes=on -c max_connections=100 -c track_wal_io_timing=on -c commit_delay=%d -c commit_siblings=%d",
			port, dir, CommitDelayUS, CommitSiblings),
		"start"); err != nil {
		return nil, err
	}
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return c, nil
}

func (c *pgCluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = c.run(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop")
}

var fdatasyncLine = regexp.MustCompile(`(?m)^\s+(\w+)\s+([0-9.]+) ops/sec`)

// fsyncCeiling runs pg_test_fsync on the cluster's filesystem and returns the figure of method
// (the server's wal_sync_method) for one 8 kB write (the first section of its output) in
// BeforeW1 and OpsPerS.
func (c *pgCluster) fsyncCeiling(ctx context.Context, method string) (FsyncResult, error) {
	if method == "" {
		method = "fdatasync"
		if runtime.GOOS != "linux" {
			method = "open_datasync"
		}
	}
	args := []string{"-s", "2", "-f", filepath.Join(c.dir, "pg_test_fsync.out")}
	res := FsyncResult{Command: "pg_test_fsync " + strings.Join(args[:2], " "), Method: method}
	out, err := c.run(ctx, "pg_test_fsync", args...)
	if err != nil {
		return res, err
	}
	first, _, _ := strings.Cut(string(out), "two 8kB writes")
	for _, m := range fdatasyncLine.FindAllStringSubmatch(first, -1) {
		if m[1] == method {
			res.OpsPerS, _ = strconv.ParseFloat(m[2], 64)
			res.BeforeW1, res.Measured = res.OpsPerS, true
		}
	}
	if !res.Measured {
		return res, fmt.Errorf("postgres: pg_test_fsync printed no %s figure: %s", method, lastLines(first, 8))
	}
	return res, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("postgres: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
