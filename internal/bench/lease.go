package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/turn"
)

// LeaseConfig configures RunLease. Zero sizes take the defaults; WorkerExe is required.
type LeaseConfig struct {
	// Iterations is the number of uncontended acquire+release pairs (default 2000).
	Iterations int
	// Procs is the number of contending worker processes (default 8) and PerProc the pairs
	// (or turns) each runs (default 200).
	Procs   int
	PerProc int
	// Handovers is the number of measured hand-overs between two processes (default 200).
	Handovers int
	// WorkerExe and WorkerArgs start one worker process, which must call RunLeaseWorker with its
	// stdin and stdout (for the CLI: the spool binary and "bench", "lease-worker").
	WorkerExe  string
	WorkerArgs []string
	WorkerEnv  []string
	// Dir is where the scratch directory is made; default $BENCH_TMPDIR, else the temp dir.
	Dir    string
	KeepDB bool
	// Log receives progress lines; nil discards.
	Log io.Writer
}

// LeaseReport is what `spool bench lease` prints.
type LeaseReport struct {
	Benchmark string      `json:"benchmark"`
	Env       LeaseEnv    `json:"env"`
	TTLMS     int64       `json:"lease_ttl_ms"`
	PollMS    int64       `json:"waiter_poll_ms"`
	Uncont    LeasePhase  `json:"uncontended"`
	OwnConv   LeasePhase  `json:"contended_own_conversations"`
	SharedCon LeasePhase  `json:"contended_one_conversation"`
	Handover  HandoverRes `json:"handover"`
	VerifyOK  bool        `json:"verify_ok"`
	TotalS    float64     `json:"total_runtime_s"`
}

// LeaseEnv describes where the figures were measured.
type LeaseEnv struct {
	GoVersion   string `json:"go_version"`
	CPUs        int    `json:"cpus"`
	Platform    string `json:"platform"`
	Driver      string `json:"driver"`
	JournalMode string `json:"journal_mode"`
	DBDir       string `json:"db_dir"`
}

// LeasePhase is one measured phase: what one operation is is said in Op.
type LeasePhase struct {
	Op    string `json:"op"`
	Procs int    `json:"procs"`
	N     int    `json:"n"`
	Latency
	OpsPerS float64 `json:"ops_per_s"`
	Errors  int     `json:"errors"`
}

// HandoverRes is the delay from ReleaseLease returning in one process to AcquireLease
// succeeding in a process that was waiting for it (wall clocks of the same host).
type HandoverRes struct {
	N int `json:"n"`
	Latency
	TargetP99MS float64 `json:"target_p99_ms"`
	MeetsTarget bool    `json:"meets_target"`
}

const (
	leaseBenchTTL     = time.Minute
	handoverTargetP99 = 50 * time.Millisecond
)

// RunLease measures the turn lease on a scratch SQLite file: acquire+release uncontended (one
// process), the same with Procs processes each on its own conversation (database contention),
// Procs processes taking turns on one conversation through turn.Begin/End (waiting included),
// and the hand-over delay to a waiter. It writes the report as JSON when asJSON, else as text.
func RunLease(ctx context.Context, cfg LeaseConfig, stdout io.Writer, asJSON bool) error {
	rep, err := Lease(ctx, cfg)
	if rep == nil {
		return err
	}
	if asJSON {
		return writeReport(stdout, rep, err)
	}
	fmt.Fprintf(stdout, "turn lease on SQLite (%s, %s journal, %d CPUs, TTL %s, waiter poll %s)\n",
		rep.Env.Driver, rep.Env.JournalMode, rep.Env.CPUs, leaseBenchTTL, turn.DefaultPoll)
	for _, p := range []LeasePhase{rep.Uncont, rep.OwnConv, rep.SharedCon} {
		fmt.Fprintf(stdout, "  %-62s procs %d  n %5d  p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms  %8.0f ops/s  errors %d\n",
			p.Op, p.Procs, p.N, p.P50, p.P99, p.Max, p.OpsPerS, p.Errors)
	}
	h := rep.Handover
	fmt.Fprintf(stdout, "  %-62s procs 2  n %5d  p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms  (target p99 < %.0f ms: %v)\n",
		"hand-over: ReleaseLease returns -> waiter's AcquireLease", h.N, h.P50, h.P99, h.Max, h.TargetP99MS, h.MeetsTarget)
	fmt.Fprintf(stdout, "  verify: %v  total %.1f s\n", rep.VerifyOK, rep.TotalS)
	return err
}

// Lease runs the lease benchmark and returns its report. A report with ErrVerify means a check
// (generation count, worker errors) failed.
func Lease(ctx context.Context, cfg LeaseConfig) (*LeaseReport, error) {
	start := time.Now()
	cfg.Iterations = cmp.Or(cfg.Iterations, 2000)
	cfg.Procs = cmp.Or(cfg.Procs, 8)
	cfg.PerProc = cmp.Or(cfg.PerProc, 200)
	cfg.Handovers = cmp.Or(cfg.Handovers, 200)
	if cfg.Iterations < 1 || cfg.Procs < 1 || cfg.PerProc < 1 || cfg.Handovers < 1 {
		return nil, fmt.Errorf("bench lease: sizes must be positive, got %+v", cfg)
	}
	if cfg.WorkerExe == "" {
		return nil, errors.New("bench lease: no worker executable configured")
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	dir, err := scratchDir(cfg.Dir, "spool-bench-lease-")
	if err != nil {
		return nil, err
	}
	if !cfg.KeepDB {
		defer os.RemoveAll(dir)
	}
	path := filepath.Join(dir, "lease.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rep := &LeaseReport{Benchmark: "turn lease", TTLMS: leaseBenchTTL.Milliseconds(), PollMS: turn.DefaultPoll.Milliseconds(),
		Env: LeaseEnv{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), Platform: platform(), Driver: driverLabel,
			JournalMode: db.JournalMode(), DBDir: dir}}
	sessions := []string{"lease-solo", "lease-shared", "lease-handover"}
	for k := range cfg.Procs {
		sessions = append(sessions, fmt.Sprint("lease-own-", k))
	}
	for _, id := range sessions {
		if _, err := db.CreateSession(ctx, store.NewSession{ID: id, Source: "bench"}); err != nil {
			return nil, err
		}
	}
	lb := &leaseBench{cfg: cfg, path: path, log: log}
	var verify []string

	// Uncontended: one process, one conversation, back-to-back pairs.
	holder := store.NewHolder().String()
	lat := make([]time.Duration, 0, cfg.Iterations)
	t0 := time.Now()
	for range cfg.Iterations {
		t := time.Now()
		l, err := db.AcquireLease(ctx, "lease-solo", holder, leaseBenchTTL)
		if err == nil {
			err = db.ReleaseLease(ctx, l)
		}
		if err != nil {
			return nil, fmt.Errorf("bench lease: uncontended: %w", err)
		}
		lat = append(lat, time.Since(t))
	}
	rep.Uncont = leasePhase("AcquireLease+ReleaseLease, uncontended", 1, lat, time.Since(t0), 0)
	fmt.Fprintf(log, "lease uncontended: p50 %.3f ms, p99 %.3f ms\n", rep.Uncont.P50, rep.Uncont.P99)

	// Contended, each process on its own conversation: the cost of the lease under write load.
	if rep.OwnConv, err = lb.contend(ctx, "own"); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "lease contended (own conversations): p50 %.3f ms, p99 %.3f ms\n", rep.OwnConv.P50, rep.OwnConv.P99)
	// Contended, one conversation: each operation is a whole (empty) turn, waiting included.
	if rep.SharedCon, err = lb.contend(ctx, "shared"); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "lease contended (one conversation): p50 %.3f ms, p99 %.3f ms\n", rep.SharedCon.P50, rep.SharedCon.P99)
	// Every acquisition of the shared conversation took the next generation, and none was lost.
	l, err := db.AcquireLease(ctx, "lease-shared", holder, leaseBenchTTL)
	if err != nil {
		return nil, fmt.Errorf("bench lease: verify: %w", err)
	}
	if want := int64(cfg.Procs*cfg.PerProc) + 1; l.Generation != want {
		verify = append(verify, fmt.Sprintf("shared conversation at generation %d, want %d", l.Generation, want))
	}
	if rep.OwnConv.Errors+rep.SharedCon.Errors > 0 {
		verify = append(verify, fmt.Sprintf("%d worker errors", rep.OwnConv.Errors+rep.SharedCon.Errors))
	}

	if rep.Handover, err = lb.handover(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "lease hand-over: p50 %.3f ms, p99 %.3f ms\n", rep.Handover.P50, rep.Handover.P99)
	rep.VerifyOK = len(verify) == 0
	rep.TotalS = round3(time.Since(start).Seconds())
	if !rep.VerifyOK {
		return rep, fmt.Errorf("%w: %s", ErrVerify, strings.Join(verify, "; "))
	}
	return rep, nil
}

func leasePhase(op string, procs int, lat []time.Duration, wall time.Duration, errs int) LeasePhase {
	return LeasePhase{Op: op, Procs: procs, N: len(lat), Latency: summarize(lat),
		OpsPerS: round3(float64(len(lat)) / wall.Seconds()), Errors: errs}
}

type leaseBench struct {
	cfg  LeaseConfig
	path string
	log  io.Writer
}

// start launches one worker and sends it its parameters.
func (lb *leaseBench) start(ctx context.Context, k int, p LeaseWorkerParams) (*workerProc, error) {
	w, err := startWorker(ctx, k, lb.cfg.WorkerExe, lb.cfg.WorkerArgs, lb.cfg.WorkerEnv)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(w.stdin).Encode(p); err != nil {
		return w, w.fail("send parameters: %v", err)
	}
	return w, nil
}

func stopWorkers(ws []*workerProc) {
	for _, w := range ws {
		if w != nil && !w.done {
			_ = w.stdin.Close()
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
			w.done = true
		}
	}
}

// contend runs Procs workers released at once, in mode "own" or "shared".
func (lb *leaseBench) contend(ctx context.Context, mode string) (LeasePhase, error) {
	n := lb.cfg.Procs
	ws := make([]*workerProc, 0, n)
	for k := range n {
		conv := "lease-shared"
		if mode == "own" {
			conv = fmt.Sprint("lease-own-", k)
		}
		w, err := lb.start(ctx, k, LeaseWorkerParams{DB: lb.path, Mode: mode, Worker: k, Conversation: conv, Iterations: lb.cfg.PerProc})
		if w != nil {
			ws = append(ws, w)
		}
		if err != nil {
			stopWorkers(ws)
			return LeasePhase{}, err
		}
	}
	defer func() { stopWorkers(ws) }()
	for _, w := range ws {
		if err := w.awaitReady(); err != nil {
			return LeasePhase{}, err
		}
	}
	release := time.Now()
	for _, w := range ws {
		if _, err := io.WriteString(w.stdin, goLine); err != nil {
			return LeasePhase{}, w.fail("release: %v", err)
		}
	}
	results := make([]WorkerResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { errs[i] = w.readLine(&results[i]) })
	}
	wg.Wait()
	wall := time.Since(release)
	var lat []time.Duration
	failures := 0
	for i, r := range results {
		if errs[i] != nil {
			return LeasePhase{}, errs[i]
		}
		for _, ns := range r.LatenciesNS {
			lat = append(lat, time.Duration(ns))
		}
		failures += r.Errors
		if r.FirstError != "" {
			fmt.Fprintf(lb.log, "lease %s: worker %d: %d errors, first: %s\n", mode, r.Worker, r.Errors, r.FirstError)
		}
	}
	op := "AcquireLease+ReleaseLease, each process its own conversation"
	if mode == "shared" {
		op = "turn.Begin+End on one conversation (waiting included)"
	}
	return leasePhase(op, n, lat, wall, failures), nil
}

// handoverLine is a handover worker's answer to one command.
type handoverLine struct {
	OK      bool   `json:"ok,omitempty"`
	Waiting bool   `json:"waiting,omitempty"`
	NS      int64  `json:"ns,omitempty"`
	Error   string `json:"error,omitempty"`
}

func (lb *leaseBench) handover(ctx context.Context) (HandoverRes, error) {
	var ws []*workerProc
	defer func() { stopWorkers(ws) }()
	for k := range 2 {
		w, err := lb.start(ctx, k, LeaseWorkerParams{DB: lb.path, Mode: "handover", Worker: k, Conversation: "lease-handover"})
		if w != nil {
			ws = append(ws, w)
		}
		if err != nil {
			return HandoverRes{}, err
		}
		if err := w.awaitReady(); err != nil {
			return HandoverRes{}, err
		}
	}
	holder, waiter := ws[0], ws[1]
	cmd := func(w *workerProc, c string, want func(handoverLine) bool) (handoverLine, error) {
		if c != "" {
			if _, err := io.WriteString(w.stdin, c+"\n"); err != nil {
				return handoverLine{}, w.fail("send %s: %v", c, err)
			}
		}
		var l handoverLine
		if err := w.readLine(&l); err != nil {
			return l, err
		}
		if l.Error != "" || !want(l) {
			return l, w.fail("%s: unexpected answer %+v", c, l)
		}
		return l, nil
	}
	ok := func(l handoverLine) bool { return l.OK }
	stamp := func(l handoverLine) bool { return l.NS > 0 }
	var lat []time.Duration
	for range lb.cfg.Handovers {
		if _, err := cmd(holder, "acquire", ok); err != nil {
			return HandoverRes{}, err
		}
		if _, err := cmd(waiter, "wait", func(l handoverLine) bool { return l.Waiting }); err != nil {
			return HandoverRes{}, err
		}
		rel, err := cmd(holder, "release", stamp)
		if err != nil {
			return HandoverRes{}, err
		}
		acq, err := cmd(waiter, "", stamp)
		if err != nil {
			return HandoverRes{}, err
		}
		if _, err := cmd(waiter, "end", ok); err != nil {
			return HandoverRes{}, err
		}
		lat = append(lat, time.Duration(acq.NS-rel.NS))
	}
	res := HandoverRes{N: len(lat), Latency: summarize(lat), TargetP99MS: ms(handoverTargetP99)}
	res.MeetsTarget = res.P99 < res.TargetP99MS
	return res, nil
}

// LeaseWorkerParams is the first line (JSON) a lease worker reads on stdin.
type LeaseWorkerParams struct {
	DB           string `json:"db"`
	Mode         string `json:"mode"` // "own", "shared" or "handover"
	Worker       int    `json:"worker"`
	Conversation string `json:"conversation"`
	Iterations   int    `json:"iterations"`
}

// RunLeaseWorker is the body of one lease benchmark worker process: the CLI's hidden `spool
// bench lease-worker` command calls it with the process's stdin and stdout. Protocol, one JSON
// value per line: LeaseWorkerParams in, {"ready":true} out; then for "own" and "shared" the
// line "go" in and one WorkerResult out; for "handover" the commands acquire, release (answers
// the wall-clock ns right after ReleaseLease returned), wait (answers {"waiting":true} once
// the lease was found held, then the ns right after it was acquired) and end, until stdin closes.
func RunLeaseWorker(ctx context.Context, stdin io.Reader, stdout io.Writer) (err error) {
	in := newLineReader(stdin)
	enc := json.NewEncoder(stdout)
	ready := false
	defer func() {
		if err != nil && !ready {
			_ = enc.Encode(workerReady{Error: err.Error()})
		}
	}()
	line, err := in.next()
	if err != nil {
		return fmt.Errorf("lease worker: read parameters: %w", err)
	}
	var p LeaseWorkerParams
	if err := json.Unmarshal([]byte(line), &p); err != nil {
		return fmt.Errorf("lease worker: parameters are not valid JSON: %w", err)
	}
	if p.DB == "" || p.Conversation == "" || (p.Mode != "handover" && p.Iterations < 1) {
		return fmt.Errorf("lease worker: parameters need db, conversation and iterations >= 1, got %+v", p)
	}
	db, err := openLeaseStore(ctx, p.DB)
	if err != nil {
		return fmt.Errorf("lease worker %d: %w", p.Worker, err)
	}
	defer db.Close()
	if err := enc.Encode(workerReady{Ready: true}); err != nil {
		return err
	}
	ready = true
	switch p.Mode {
	case "own", "shared":
		if line, err := in.next(); err != nil || line+"\n" != goLine {
			return fmt.Errorf("lease worker %d: expected go, got %q %v", p.Worker, line, err)
		}
		res := WorkerResult{Worker: p.Worker, LatenciesNS: make([]int64, 0, p.Iterations)}
		holder := store.NewHolder().String()
		start := time.Now()
		for range p.Iterations {
			t := time.Now()
			var err error
			if p.Mode == "own" {
				var l store.Lease
				if l, err = db.AcquireLease(ctx, p.Conversation, holder, leaseBenchTTL); err == nil {
					err = db.ReleaseLease(ctx, l)
				}
			} else {
				var tn *turn.Turn
				if tn, err = turn.Begin(ctx, db, p.Conversation, turn.Options{TTL: leaseBenchTTL}); err == nil {
					err = tn.End(ctx)
				}
			}
			if err != nil {
				res.Errors++
				if res.FirstError == "" {
					res.FirstError = err.Error()
				}
				continue
			}
			res.LatenciesNS = append(res.LatenciesNS, int64(time.Since(t)))
		}
		res.ElapsedS = time.Since(start).Seconds()
		if bc, ok := db.(busyCounter); ok {
			n := bc.BusyRetries()
			res.LockRetries = &n
		}
		return enc.Encode(res)
	case "handover":
		return handoverWorker(ctx, db, p, in, enc)
	}
	return fmt.Errorf("lease worker: unknown mode %q", p.Mode)
}

func handoverWorker(ctx context.Context, db leaseStore, p LeaseWorkerParams, in *lineReader, enc *json.Encoder) error {
	holder := store.NewHolder().String()
	var held store.Lease
	var tn *turn.Turn
	for {
		c, err := in.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var out handoverLine
		switch c {
		case "acquire":
			if held, err = db.AcquireLease(ctx, p.Conversation, holder, leaseBenchTTL); err != nil {
				return err
			}
			out.OK = true
		case "release":
			err := db.ReleaseLease(ctx, held)
			out.NS = time.Now().UnixNano()
			if err != nil {
				return err
			}
		case "wait":
			var once sync.Once
			var encErr error
			tn, err = turn.Begin(ctx, db, p.Conversation, turn.Options{TTL: leaseBenchTTL, Notice: 5 * time.Millisecond,
				OnWait: func(time.Duration, string) {
					once.Do(func() { encErr = enc.Encode(handoverLine{Waiting: true}) })
				}})
			if err != nil {
				return err
			}
			out.NS = time.Now().UnixNano()
			if encErr != nil {
				return encErr
			}
		case "end":
			if tn == nil {
				return errors.New("end without a turn")
			}
			if err := tn.End(ctx); err != nil {
				return err
			}
			tn, out.OK = nil, true
		default:
			return fmt.Errorf("lease worker: unknown command %q", c)
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
}

// leaseStore is what a lease worker uses: a turn's store methods.
type leaseStore interface {
	turn.Store
	Close() error
}

// openLeaseStore opens loc: a postgres:// URL, else a SQLite file.
func openLeaseStore(ctx context.Context, loc string) (leaseStore, error) {
	if postgres.IsURL(loc) {
		return postgres.Open(ctx, loc, postgres.Options{MaxConns: 2})
	}
	return sqlite.Open(ctx, loc, sqlite.Options{})
}

// lineReader reads newline-terminated lines without the newline.
type lineReader struct{ r *bufio.Reader }

func newLineReader(r io.Reader) *lineReader { return &lineReader{bufio.NewReader(r)} }

func (l *lineReader) next() (string, error) {
	s, err := l.r.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}
