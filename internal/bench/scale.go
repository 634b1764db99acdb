package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/sqlite"
)

// ScaleConfig sizes `spool bench scale`.
type ScaleConfig struct {
	Dir  string
	Seed uint64
	// Sizes are the store sizes measured, in messages over many sessions, ascending (default
	// 10^3, 10^4, 10^5, 10^6). The store grows from one to the next.
	Sizes []int
	// Long is the size of the one long session, written first and compacted as it grows, so
	// that the model sees its last messages and a summary (default 100,000).
	Long int
	// PostgresURL, when set, is an empty PostgreSQL database to run in instead of a scratch
	// SQLite file (the run leaves its rows there).
	PostgresURL string
	// SlowSearch is added to every timed search: the control, whose verdicts must fail.
	SlowSearch time.Duration
	// Samples, when set, caps how many times each measure is taken at each size (tests).
	Samples int
	Log     io.Writer
}

// Samples of each measure at each size.
const (
	scaleAppends  = 200
	scaleResumes  = 50
	scaleSearches = 200
	scaleLists    = 50
	// scaleSessionSize is the mean size of the many sessions (the workload's sizes are heavy-tailed
	// around it).
	scaleSessionSize = 250
	// scaleChunk bounds the messages generated at once, so the process's memory measures the
	// store and not the generator.
	scaleChunk = 100000
	// scaleCompactEvery is how many messages the long session gains between compactions.
	scaleCompactEvery = 1000
)

func (c ScaleConfig) withDefaults() ScaleConfig {
	if c.Seed == 0 {
		c.Seed = 20260428
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []int{1000, 10000, 100000, 1000000}
	}
	if c.Long <= 0 {
		c.Long = 100000
	}
	return c
}

// ScalePoint is the measures at one size.
type ScalePoint struct {
	Messages int `json:"messages"`
	// Total counts every row of the store: the many sessions, the long session's (archived ones
	// included) and the appends measured so far.
	Total          int     `json:"total_messages"`
	Sessions       int     `json:"sessions"`
	AppendP50      float64 `json:"append_p50_ms"`
	AppendP99      float64 `json:"append_p99_ms"`
	ResumeP50      float64 `json:"resume_p50_ms"`
	ResumeP99      float64 `json:"resume_p99_ms"`
	ResumeMessages int     `json:"resume_messages"`
	SearchP50      float64 `json:"search_p50_ms"`
	SearchP99      float64 `json:"search_p99_ms"`
	ListP99        float64 `json:"list_p99_ms"`
	DBBytes        int64   `json:"db_bytes"`
	RSSBytes       int64   `json:"rss_bytes"`
	FillSeconds    float64 `json:"fill_seconds"`
}

// ScaleReport is `spool bench scale`'s JSON report.
type ScaleReport struct {
	Backend     string       `json:"backend"`
	Seed        uint64       `json:"seed"`
	LongSession int          `json:"long_session_messages"`
	Control     bool         `json:"control"`
	Points      []ScalePoint `json:"points"`
	Targets     []TargetLine `json:"targets"`
	TargetsMet  bool         `json:"targets_met"`
}

// scaleStore is what the scale benchmark calls.
type scaleStore interface {
	Store
	AppendBatch(ctx context.Context, sessionID string, ms []store.Message, opts ...store.WriteOption) ([]int64, error)
	ArchiveAndCompact(ctx context.Context, req store.CompactRequest, f store.Fence) (int, error)
	store.LeaseTaker
}

// Scale grows one store through cfg.Sizes and measures it at each size.
func Scale(ctx context.Context, cfg ScaleConfig) (*ScaleReport, error) {
	cfg = cfg.withDefaults()
	for i, n := range cfg.Sizes {
		if n <= 0 || i > 0 && n <= cfg.Sizes[i-1] {
			return nil, fmt.Errorf("sizes must be positive and ascending: %v", cfg.Sizes)
		}
	}
	st, backend, size, closeStore, err := openScaleStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	s := &scaler{cfg: cfg, st: st, size: size}
	if s.gen, err = newScaleGen(); err != nil {
		return nil, err
	}
	rep := &ScaleReport{Backend: backend, Seed: cfg.Seed, LongSession: cfg.Long, Control: cfg.SlowSearch > 0}
	t0 := time.Now()
	if err := s.writeLong(ctx); err != nil {
		return nil, fmt.Errorf("long session: %w", err)
	}
	s.logf("scale: long session of %d messages written in %s", cfg.Long, time.Since(t0).Round(time.Second))
	for _, n := range cfg.Sizes {
		p, err := s.point(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("size %d: %w", n, err)
		}
		rep.Points = append(rep.Points, p)
		s.logf("scale: %d messages: append p99 %.2f ms, resume p99 %.2f ms, search p99 %.2f ms, list p99 %.2f ms, %d MB on disk, %d MB resident",
			n, p.AppendP99, p.ResumeP99, p.SearchP99, p.ListP99, p.DBBytes>>20, p.RSSBytes>>20)
	}
	rep.Targets = scaleTargets(backend, rep.Points)
	rep.TargetsMet = allMet(rep.Targets)
	return rep, nil
}

func allMet(ts []TargetLine) bool {
	for _, t := range ts {
		if !t.Met {
			return false
		}
	}
	return true
}

// openScaleStore opens the PostgreSQL database of cfg.PostgresURL, else a SQLite file in a
// scratch directory removed on close; size reports the database's bytes on disk.
func openScaleStore(ctx context.Context, cfg ScaleConfig) (scaleStore, string, func(context.Context) int64, func(), error) {
	if cfg.PostgresURL != "" {
		db, err := postgres.Open(ctx, cfg.PostgresURL, postgres.Options{MaxConns: 4})
		if err != nil {
			return nil, "", nil, nil, fmt.Errorf("open postgres: %w", err)
		}
		size := func(ctx context.Context) int64 {
			n, err := postgresSize(ctx, cfg.PostgresURL)
			if err != nil {
				return -1
			}
			return n
		}
		return db, "postgres", size, func() { db.Close() }, nil
	}
	dir, err := scratchDir(cfg.Dir, "spool-scale-")
	if err != nil {
		return nil, "", nil, nil, err
	}
	path := filepath.Join(dir, "scale.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, nil, err
	}
	return db, "sqlite", func(context.Context) int64 { return dbBytes(path) }, func() { db.Close(); os.RemoveAll(dir) }, nil
}

// residentBytes is the process's resident memory after a collection (0 where /proc is not).
func residentBytes() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
