package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Sizes are the workload parameters of WORKLOAD.md section 1.
type Sizes struct {
	Seed      uint64 `json:"seed"`
	Sessions  int    `json:"sessions"`
	Messages  int    `json:"messages"`
	Queries   int    `json:"queries"`
	ListIters int    `json:"list_iters"`
	W5Procs   int    `json:"w5_procs"`
	W5Msgs    int    `json:"w5_msgs_per_proc"`
}

// Fixed parameters of the workload that have no override.
const (
	ListLimit    = 50
	SearchLimit  = 20
	ResumeTop    = 20
	ResumeRounds = 5
)

// DefaultSizes are the reference sizes; figures are comparable with the peer only at these.
func DefaultSizes() Sizes {
	return Sizes{Seed: 20260428, Sessions: 200, Messages: 50000, Queries: 500, ListIters: 200, W5Procs: 4, W5Msgs: 2000}
}

// SizesFromEnv applies the BENCH_* overrides to the defaults. overridden reports whether any
// size or seed override was set, which marks the run as scaled down.
func SizesFromEnv(lookup func(string) (string, bool)) (s Sizes, overridden bool, err error) {
	s = DefaultSizes()
	ints := []struct {
		name string
		dst  *int
		min  int
	}{
		{"BENCH_SESSIONS", &s.Sessions, 1},
		{"BENCH_MESSAGES", &s.Messages, 1},
		{"BENCH_QUERIES", &s.Queries, 0},
		{"BENCH_LIST_ITERS", &s.ListIters, 0},
		{"BENCH_W5_PROCS", &s.W5Procs, 1},
		{"BENCH_W5_MSGS", &s.W5Msgs, 1},
	}
	for _, e := range ints {
		v, ok := lookup(e.name)
		if !ok {
			continue
		}
		n, perr := strconv.Atoi(strings.TrimSpace(v))
		if perr != nil || n < e.min {
			return s, false, fmt.Errorf("%s=%q: want an integer of at least %d", e.name, v, e.min)
		}
		*e.dst = n
		overridden = true
	}
	if v, ok := lookup("BENCH_SEED"); ok {
		n, perr := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if perr != nil {
			return s, false, fmt.Errorf("BENCH_SEED=%q: want a non-negative integer", v)
		}
		s.Seed = n
		overridden = true
	}
	return s, overridden, s.Validate()
}

// Validate reports the first parameter the generator or runner cannot work with.
func (s Sizes) Validate() error {
	switch {
	case s.Sessions < 1:
		return fmt.Errorf("bench sizes: sessions must be at least 1, got %d", s.Sessions)
	case s.Messages < 10*s.Sessions:
		return fmt.Errorf("bench sizes: messages (%d) must be at least 10 per session (%d sessions)", s.Messages, s.Sessions)
	case s.Queries < 0 || s.ListIters < 0:
		return fmt.Errorf("bench sizes: queries (%d) and list iterations (%d) must not be negative", s.Queries, s.ListIters)
	case s.W5Procs < 1 || s.W5Msgs < 1:
		return fmt.Errorf("bench sizes: W5 needs at least 1 process and 1 message per process, got %d and %d", s.W5Procs, s.W5Msgs)
	}
	return nil
}

// scratchBase is $BENCH_TMPDIR, else the system temp directory.
func scratchBase() string {
	if d := os.Getenv("BENCH_TMPDIR"); d != "" {
		return d
	}
	return os.TempDir()
}

// scratchDir makes a fresh directory for one run under dir (default: $BENCH_TMPDIR, else the
// system temp directory), on the filesystem the benchmark is meant to measure.
func scratchDir(dir, prefix string) (string, error) {
	if dir == "" {
		dir = scratchBase()
	}
	d, err := os.MkdirTemp(dir, prefix)
	if err != nil {
		return "", fmt.Errorf("make scratch directory in %s: %w", dir, err)
	}
	return d, nil
}

// writeReport writes a benchmark report as indented JSON. runErr is the run's own error (a
// failed verification still has a report) and is returned, joined with any write error.
func writeReport(w io.Writer, rep any, runErr error) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return errors.Join(runErr, fmt.Errorf("write benchmark report: %w", err))
	}
	return runErr
}
