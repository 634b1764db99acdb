package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
)

const pgxModule = "github.com/jackc/pgx/v5"

// ErrVerify is returned (after the report is printed) when a workload's own check failed.
var ErrVerify = errors.New("benchmark verification failed")

// StoreConfig configures RunStore. The zero value of every field except WorkerExe is usable.
type StoreConfig struct {
	// Sizes overrides the workload parameters; nil means DefaultSizes with the BENCH_* env
	// overrides applied.
	Sizes *Sizes
	// Synchronous is the SQLite synchronous mode: "NORMAL" (default) or "FULL".
	Synchronous string
	// WorkerExe and WorkerArgs start one W5 worker process, which must call RunStoreWorker with
	// its stdin and stdout (for the CLI: the spool binary and "bench", "store-worker").
	WorkerExe  string
	WorkerArgs []string
	// WorkerEnv is added to the inherited environment of each worker.
	WorkerEnv []string
	// Dir is where the scratch directory is made; default $BENCH_TMPDIR, else the system temp dir.
	Dir string
	// KeepDB leaves the scratch directory in place for inspection.
	KeepDB bool
	// Log receives progress lines and the first difference a verification finds; nil discards.
	Log io.Writer
	// Open opens the store under test; nil opens Location (a postgres:// URL: PostgreSQL) or
	// a SQLite file in the scratch directory.
	Open Opener
	// Location, when set, is the database to run on (a postgres:// URL) instead of a SQLite
	// file in the scratch directory.
	Location string
	// BeforeW1 and AfterW1, when set, run just before W1's first timed append and just after its
	// last (untimed): the PostgreSQL run measures the fsync ceiling and the server's WAL
	// counters around W1 with them, so the ceiling is the disk's figure of that moment.
	BeforeW1, AfterW1 func(context.Context) error
	// BeforeW5 runs once every W5 worker is ready, just before they are released; AfterW5 once
	// the last has exited, with their results (each worker's CPU time over its appends): the
	// PostgreSQL run accounts for W5's CPU with them (postgres_w5_bound).
	BeforeW5 func(context.Context) error
	AfterW5  func(context.Context, []WorkerResult) error
}

// RunStore runs W1..W5 and writes one JSON object to stdout. When a workload's verification
// fails it still writes the report, then returns an error wrapping ErrVerify.
func RunStore(ctx context.Context, cfg StoreConfig, stdout io.Writer) error {
	rep, err := Run(ctx, cfg)
	if rep == nil {
		return err
	}
	return writeReport(stdout, rep, err)
}

// Run runs the workload and returns its report. A non-nil report with ErrVerify means the run
// completed but a check failed; any other error means it could not complete (report nil).
func Run(ctx context.Context, cfg StoreConfig) (*Report, error) {
	start := time.Now()
	r := &runner{cfg: cfg, log: cfg.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	if err := r.setup(); err != nil {
		return nil, err
	}
	dir, err := scratchDir(cfg.Dir, "spool-bench-")
	if err != nil {
		return nil, err
	}
	if !cfg.KeepDB {
		defer os.RemoveAll(dir)
	}
	r.path = filepath.Join(dir, "bench.db")
	if cfg.Location != "" {
		r.path = cfg.Location
	}
	r.rep.Env.DBDir = dir

	if err := r.generate(); err != nil {
		return nil, err
	}
	if err := r.all(ctx); err != nil {
		return nil, err
	}
	r.rep.TotalRuntimeS = round3(time.Since(start).Seconds())
	var failed []string
	if !r.rep.W1.VerifyOK {
		failed = append(failed, "w1_append.verify_ok")
	}
	if !r.rep.W2.VerifyOK {
		failed = append(failed, "w2_resume.verify_ok")
	}
	if !r.rep.W4.VerifyOK {
		failed = append(failed, "w4_list.verify_ok")
	}
	if !r.rep.W5.Verify.OK {
		failed = append(failed, "w5_contention.verify.ok")
	}
	if len(failed) > 0 {
		return &r.rep, fmt.Errorf("%w: %s false", ErrVerify, strings.Join(failed, ", "))
	}
	return &r.rep, nil
}

type runner struct {
	cfg   StoreConfig
	log   io.Writer
	sizes Sizes
	sync  string
	open  Opener
	gen   *Generator
	path  string
	rep   Report

	specs   []SessionSpec
	msgs    []store.Message
	queries []Query
}

func (r *runner) logf(format string, args ...any) { fmt.Fprintf(r.log, format+"\n", args...) }

func (r *runner) setup() error {
	scaled := false
	if r.cfg.Sizes != nil {
		r.sizes = *r.cfg.Sizes
		if err := r.sizes.Validate(); err != nil {
			return err
		}
	} else {
		var err error
		if r.sizes, scaled, err = SizesFromEnv(os.LookupEnv); err != nil {
			return err
		}
	}
	scaled = scaled || r.sizes != DefaultSizes()
	r.sync = strings.ToUpper(r.cfg.Synchronous)
	if r.sync == "" {
		r.sync = "NORMAL"
	}
	if r.sync != "NORMAL" && r.sync != "FULL" {
		return fmt.Errorf("bench: synchronous must be NORMAL or FULL, not %q", r.cfg.Synchronous)
	}
	if r.cfg.WorkerExe == "" {
		return errors.New("bench: no W5 worker executable configured (StoreConfig.WorkerExe)")
	}
	r.open = r.cfg.Open
	if r.open == nil {
		r.open = openAt
	}
	v, err := DefaultVocab()
	if err != nil {
		return err
	}
	r.gen = NewGenerator(v)
	r.rep.Impl = Impl
	r.rep.Harness = Harness
	r.rep.Peer = peerInfo()
	r.rep.Env = EnvInfo{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), Platform: platform()}
	r.rep.Config = ConfigInfo{
		Sizes: r.sizes, ListLimit: ListLimit, SearchLimit: SearchLimit, ResumeTop: ResumeTop,
		ResumeRounds: ResumeRounds, W5Sessions: W5SessionsPerWorker, ScaledDown: scaled,
		Synchronous: r.sync, Driver: driverLabel, DriverVersion: moduleVersion(driverModule),
	}
	if postgres.IsURL(r.cfg.Location) {
		r.rep.Config.Synchronous = "server: see the report's server section"
		r.rep.Config.Driver, r.rep.Config.DriverVersion = pgxModule, moduleVersion(pgxModule)
		r.rep.Config.JournalMode = "postgresql"
	}
	return nil
}

// generate builds all data up front; it is not timed as part of any workload.
func (r *runner) generate() error {
	t := time.Now()
	var err error
	r.specs, r.msgs, err = r.gen.W1(r.sizes.Seed, r.sizes.Sessions, r.sizes.Messages)
	if err != nil {
		return err
	}
	r.queries = r.gen.Queries(r.sizes.Seed, r.sizes.Queries)
	w := &r.rep.Workload
	w.MessagesSHA256 = MessagesSHA256(r.msgs)
	w.QueriesSHA256 = QueriesSHA256(r.queries)
	for k := range r.sizes.W5Procs {
		_, m := r.gen.W5(r.sizes.Seed, k, r.sizes.W5Msgs)
		w.W5MessagesSHA256 = append(w.W5MessagesSHA256, MessagesSHA256(m))
	}
	w.SessionSizeMin = r.specs[0].Size
	for i, s := range r.specs {
		if i < 12 {
			w.SessionSizesHead = append(w.SessionSizesHead, s.Size)
		}
		w.SessionSizeMin = min(w.SessionSizeMin, s.Size)
		w.SessionSizeMax = max(w.SessionSizeMax, s.Size)
	}
	w.Messages = Stats(r.msgs)
	w.QueryCategories = map[string]int{}
	for _, q := range r.queries {
		w.QueryCategories[q.Category]++
	}
	w.GenerateS = round3(time.Since(t).Seconds())
	r.logf("generated %d messages, %d queries in %.1fs (messages_sha256 %s)", len(r.msgs), len(r.queries), w.GenerateS, w.MessagesSHA256)
	return nil
}

func (r *runner) all(ctx context.Context) error {
	t := time.Now()
	db, err := r.open(ctx, r.path, r.sync)
	if err != nil {
		return fmt.Errorf("W1: %w", err)
	}
	r.rep.W1.OpenMS = ms(time.Since(t))
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	if v, ok := db.(versioner); ok {
		if s, err := v.SQLiteVersion(ctx); err == nil {
			r.rep.Env.SQLiteVersion = s
		}
	}
	if j, ok := db.(journaler); ok {
		r.rep.Config.JournalMode = j.JournalMode()
	}
	steps := []struct {
		name string
		fn   func(context.Context, Store) error
	}{
		{"W1 append", r.w1}, {"W2 resume", r.w2}, {"W3 search", r.w3}, {"W4 list", r.w4},
	}
	for _, s := range steps {
		// As testing.B does before each benchmark: collect the previous step's untimed garbage
		// (W1's verification loads every session) now, not during the next step's timed calls.
		runtime.GC()
		if err := s.fn(ctx, db); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	closed = true
	if err := db.Close(); err != nil {
		return fmt.Errorf("close after W4: %w", err)
	}
	if err := r.w5(ctx); err != nil {
		return fmt.Errorf("W5 contention: %w", err)
	}
	return nil
}

func (r *runner) w1(ctx context.Context, db Store) error {
	res := &r.rep.W1
	t := time.Now()
	for _, s := range r.specs {
		if _, err := db.CreateSession(ctx, store.NewSession{ID: s.ID, Source: s.Source, Model: s.Model}); err != nil {
			return fmt.Errorf("create session %s: %w", s.ID, err)
		}
	}
	res.CreateSessionsMS = ms(time.Since(t))

	if r.cfg.BeforeW1 != nil {
		if err := r.cfg.BeforeW1(ctx); err != nil {
			return err
		}
	}
	lat := make([]time.Duration, len(r.msgs))
	var firstErr error
	loop := time.Now()
	for i, m := range r.msgs {
		t := time.Now()
		_, err := db.Append(ctx, m.SessionID, m)
		lat[i] = time.Since(t)
		if err != nil {
			res.Errors++
			if firstErr == nil {
				firstErr = err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	total := time.Since(loop)
	if r.cfg.AfterW1 != nil {
		if err := r.cfg.AfterW1(ctx); err != nil {
			return err
		}
	}
	res.N = len(r.msgs)
	res.TotalS = round3(total.Seconds())
	res.MsgsPerS = round3(float64(len(r.msgs)) / total.Seconds())
	res.Latency = summarize(lat)
	res.DBBytesAfter = dbBytes(r.path)
	if firstErr != nil {
		r.logf("W1: %d appends failed, first: %v", res.Errors, firstErr)
	}
	r.logf("W1 append: %d messages in %.2fs (%.0f msg/s, p99 %.3f ms)", res.N, res.TotalS, res.MsgsPerS, res.P99)

	ok, err := r.verifyW1(ctx, db)
	if err != nil {
		return err
	}
	res.VerifyOK = ok && res.Errors == 0
	return nil
}

// verifyW1 compares every stored row, in global id order, with the generated list, and each
// session's message_count with its size.
func (r *runner) verifyW1(ctx context.Context, db Store) (bool, error) {
	rows := make([]store.Message, 0, len(r.msgs))
	ok := true
	for _, s := range r.specs {
		conv, err := db.Conversation(ctx, s.ID, store.ViewActive)
		if err != nil {
			return false, fmt.Errorf("verify: load %s: %w", s.ID, err)
		}
		for i := range conv {
			conv[i].SessionID = s.ID
		}
		rows = append(rows, conv...)
		sess, err := db.GetSession(ctx, s.ID)
		if err != nil {
			return false, fmt.Errorf("verify: get %s: %w", s.ID, err)
		}
		if sess.MessageCount != s.Size {
			r.logf("W1 verify: %s message_count %d, want %d", s.ID, sess.MessageCount, s.Size)
			ok = false
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	if len(rows) != len(r.msgs) {
		r.logf("W1 verify: %d rows stored, want %d", len(rows), len(r.msgs))
		return false, nil
	}
	for i := range rows {
		if diff := diffMessage(rows[i], r.msgs[i], true); diff != "" {
			r.logf("W1 verify: row %d (id %d): %s", i, rows[i].ID, diff)
			return false, nil
		}
	}
	return ok, nil
}

// diffMessage describes the first field where got differs from want ("" when equal). Only the
// fields the workload writes are compared; withSession also compares the session id.
func diffMessage(got, want store.Message, withSession bool) string {
	switch {
	case withSession && got.SessionID != want.SessionID:
		return fmt.Sprintf("session %q, want %q", got.SessionID, want.SessionID)
	case got.Role != want.Role:
		return fmt.Sprintf("role %q, want %q", got.Role, want.Role)
	case got.Content != want.Content:
		return fmt.Sprintf("content differs (%d bytes, want %d)", len(got.Content), len(want.Content))
	case got.ToolName != want.ToolName:
		return fmt.Sprintf("tool_name %q, want %q", got.ToolName, want.ToolName)
	case got.ToolCallID != want.ToolCallID:
		return fmt.Sprintf("tool_call_id %q, want %q", got.ToolCallID, want.ToolCallID)
	case len(got.ToolCalls) != len(want.ToolCalls):
		return fmt.Sprintf("%d tool calls, want %d", len(got.ToolCalls), len(want.ToolCalls))
	}
	for i, c := range got.ToolCalls {
		if c != want.ToolCalls[i] {
			return fmt.Sprintf("tool call %d = %+v, want %+v", i, c, want.ToolCalls[i])
		}
	}
	return ""
}

func (r *runner) w2(ctx context.Context, db Store) error {
	res := &r.rep.W2
	order := make([]int, len(r.specs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return r.specs[order[a]].Size > r.specs[order[b]].Size })
	order = order[:min(ResumeTop, len(order))]
	largest := r.specs[order[0]]
	var want []store.Message
	for _, m := range r.msgs {
		if m.SessionID == largest.ID {
			want = append(want, m)
		}
	}

	ok := true
	var lat []time.Duration
	for range ResumeRounds {
		for _, i := range order {
			s := r.specs[i]
			t := time.Now()
			conv, err := db.Conversation(ctx, s.ID, store.ViewActive)
			lat = append(lat, time.Since(t))
			if err != nil {
				res.Errors++
				ok = false
				r.logf("W2: load %s: %v", s.ID, err)
				continue
			}
			res.MessagesReturnedTotal += len(conv)
			if len(conv) != s.Size {
				ok = false
				r.logf("W2 verify: %s returned %d messages, want %d", s.ID, len(conv), s.Size)
				continue
			}
			if s.ID == largest.ID {
				for j := range conv {
					if diff := diffMessage(conv[j], want[j], false); diff != "" {
						ok = false
						r.logf("W2 verify: %s message %d: %s", s.ID, j, diff)
						break
					}
				}
			}
		}
	}
	res.N = len(lat)
	res.Latency = summarize(lat)
	res.VerifyOK = ok
	r.logf("W2 resume: %d calls, p50 %.3f ms, p99 %.3f ms", res.N, res.P50, res.P99)
	return nil
}

func (r *runner) w3(ctx context.Context, db Store) error {
	res := &r.rep.W3
	res.ByCategory = map[string]CategoryResult{}
	lat := make([]time.Duration, len(r.queries))
	catLat := map[string][]time.Duration{}
	for i, q := range r.queries {
		t := time.Now()
		hits, err := db.Search(ctx, store.SearchQuery{Text: q.Text, Limit: SearchLimit})
		lat[i] = time.Since(t)
		catLat[q.Category] = append(catLat[q.Category], lat[i])
		c := res.ByCategory[q.Category]
		c.N++
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res.Exceptions++
			c.Exceptions++
			r.logf("W3: query %d %s %q: %v", i, q.Category, q.Text, err)
		} else {
			res.ResultsTotal += len(hits)
			c.Results += len(hits)
			if len(hits) > 0 {
				res.QueriesWithResults++
				c.Nonempty++
			}
		}
		res.ByCategory[q.Category] = c
	}
	for name, c := range res.ByCategory {
		l := summarize(catLat[name])
		c.P50, c.P99 = l.P50, l.P99
		res.ByCategory[name] = c
	}
	res.N = len(lat)
	res.Latency = summarize(lat)
	// Untimed, after the run, as the peer measures it.
	if mc, ok := db.(matchChecker); ok {
		n := 0
		for _, q := range r.queries {
			if mc.CheckMatch(ctx, q.Text) != nil {
				n++
			}
		}
		res.EngineRejected = &n
	}
	r.logf("W3 search: %d queries, p50 %.3f ms, p99 %.3f ms, %d with results, %d exceptions", res.N, res.P50, res.P99, res.QueriesWithResults, res.Exceptions)
	return nil
}

func (r *runner) w4(ctx context.Context, db Store) error {
	res := &r.rep.W4
	res.RowsExpected = min(ListLimit, len(r.specs))
	ok := true
	lat := make([]time.Duration, 0, r.sizes.ListIters)
	for range r.sizes.ListIters {
		t := time.Now()
		rows, err := db.ListSessions(ctx, store.ListOptions{Limit: ListLimit})
		lat = append(lat, time.Since(t))
		if err != nil {
			res.Errors++
			ok = false
			r.logf("W4: list: %v", err)
			continue
		}
		if len(rows) != res.RowsExpected {
			ok = false
			r.logf("W4 verify: list returned %d rows, want %d", len(rows), res.RowsExpected)
		}
	}
	res.N = len(lat)
	res.Latency = summarize(lat)
	res.VerifyOK = ok
	r.logf("W4 list: %d calls, p50 %.3f ms", res.N, res.P50)
	return nil
}

func dbBytes(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
