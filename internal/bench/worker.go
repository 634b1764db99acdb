package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
)

// WorkerParams is the first line (JSON) a W5 worker reads on stdin. Parameters travel on stdin so
// the worker command line takes no flags.
type WorkerParams struct {
	DB          string `json:"db"`
	Seed        uint64 `json:"seed"`
	Worker      int    `json:"worker"`
	Messages    int    `json:"messages"`
	Synchronous string `json:"synchronous"`
}

// workerReady is the worker's answer to its params: ready, or why it cannot run.
type workerReady struct {
	Ready bool   `json:"ready"`
	Error string `json:"error,omitempty"`
}

// WorkerResult is the worker's last line.
type WorkerResult struct {
	Worker      int     `json:"worker"`
	LatenciesNS []int64 `json:"latencies_ns"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	LockRetries *int64  `json:"lock_retries"`
	ElapsedS    float64 `json:"elapsed_s"`
	// CPUS is the worker process's CPU time (user and system) over its appends.
	CPUS float64 `json:"cpu_s"`
}

// goLine is what the parent writes to release every worker at once.
const goLine = "go\n"

// RunStoreWorker is the body of one W5 worker process: the CLI's hidden `spool bench
// store-worker` command calls it with the process's stdin and stdout, and nothing else may
// write to that stdout. Protocol, one JSON value per line:
//
//	parent → worker  WorkerParams
//	worker → parent  {"ready":true}  (DB open, 5 sessions created, messages generated)
//	                 or {"ready":false,"error":"..."} and the worker exits non-zero
//	parent → worker  go
//	worker → parent  WorkerResult    (after appending every message, one call each)
func RunStoreWorker(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	return runWorker(ctx, openAt, stdin, stdout)
}

func runWorker(ctx context.Context, open Opener, stdin io.Reader, stdout io.Writer) (err error) {
	in := bufio.NewReader(stdin)
	enc := json.NewEncoder(stdout)
	ready := false
	defer func() {
		if err != nil && !ready {
			_ = enc.Encode(workerReady{Error: err.Error()})
		}
	}()
	line, err := in.ReadString('\n')
	if err != nil {
		return fmt.Errorf("store worker: read parameters: %w", err)
	}
	var p WorkerParams
	if err := json.Unmarshal([]byte(line), &p); err != nil {
		return fmt.Errorf("store worker: parameters are not valid JSON: %w", err)
	}
	if p.DB == "" || p.Messages < 1 || p.Worker < 0 {
		return fmt.Errorf("store worker: parameters need db, messages >= 1 and worker >= 0, got %+v", p)
	}
	v, err := DefaultVocab()
	if err != nil {
		return err
	}
	specs, msgs := NewGenerator(v).W5(p.Seed, p.Worker, p.Messages)
	db, err := open(ctx, p.DB, p.Synchronous)
	if err != nil {
		return fmt.Errorf("store worker %d: %w", p.Worker, err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("store worker %d: close: %w", p.Worker, cerr)
		}
	}()
	for _, s := range specs {
		if _, err := db.CreateSession(ctx, store.NewSession{ID: s.ID, Source: s.Source, Model: s.Model}); err != nil {
			return fmt.Errorf("store worker %d: create session %s: %w", p.Worker, s.ID, err)
		}
	}
	if err := enc.Encode(workerReady{Ready: true}); err != nil {
		return fmt.Errorf("store worker %d: report ready: %w", p.Worker, err)
	}
	ready = true
	line, err = in.ReadString('\n')
	if err != nil {
		return fmt.Errorf("store worker %d: wait for go: %w", p.Worker, err)
	}
	if line != goLine {
		return fmt.Errorf("store worker %d: expected %q, got %q", p.Worker, strings.TrimSpace(goLine), strings.TrimSpace(line))
	}

	res := WorkerResult{Worker: p.Worker, LatenciesNS: make([]int64, len(msgs))}
	start := time.Now()
	cpu0 := processCPU()
	for i, m := range msgs {
		t := time.Now()
		_, aerr := db.Append(ctx, m.SessionID, m)
		res.LatenciesNS[i] = int64(time.Since(t))
		if aerr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = aerr.Error()
			}
		}
	}
	res.ElapsedS = time.Since(start).Seconds()
	res.CPUS = (processCPU() - cpu0).Seconds()
	if bc, ok := db.(busyCounter); ok {
		n := bc.BusyRetries()
		res.LockRetries = &n
	}
	if err := enc.Encode(res); err != nil {
		return fmt.Errorf("store worker %d: report result: %w", p.Worker, err)
	}
	return nil
}

var errWorkerNotReady = errors.New("worker did not become ready")
