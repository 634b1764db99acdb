package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/store"
)

type workerProc struct {
	k      int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	done   bool
}

func (w *workerProc) fail(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if tail := strings.TrimSpace(w.stderr.String()); tail != "" {
		msg += " (stderr: " + tail + ")"
	}
	return fmt.Errorf("worker %d: %s", w.k, msg)
}

// startWorker starts worker k: exe with args, env added to the inherited environment.
func startWorker(ctx context.Context, k int, exe string, args, env []string) (*workerProc, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	w := &workerProc{k: k, cmd: cmd, stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = w.stderr
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("worker %d: %w", k, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("worker %d: %w", k, err)
	}
	w.out = bufio.NewReaderSize(stdout, 1<<16)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %d (%s): %w", k, exe, err)
	}
	return w, nil
}

// awaitReady reads the worker's ready line.
func (w *workerProc) awaitReady() error {
	var ready workerReady
	if err := w.readLine(&ready); err != nil {
		return err
	}
	if !ready.Ready {
		return w.fail("%v: %s", errWorkerNotReady, ready.Error)
	}
	return nil
}

func (w *workerProc) readLine(v any) error {
	line, err := w.out.ReadBytes('\n')
	if err != nil {
		return w.fail("read: %v", err)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return w.fail("bad protocol line %.200q: %v", line, err)
	}
	return nil
}

func (r *runner) w5(ctx context.Context) error {
	res := &r.rep.W5
	n := r.sizes.W5Procs
	res.Procs = n
	procs := make([]*workerProc, 0, n)
	defer func() {
		for _, w := range procs {
			if !w.done {
				_ = w.cmd.Process.Kill()
				_ = w.cmd.Wait()
			}
		}
	}()
	for k := range n {
		w, err := startWorker(ctx, k, r.cfg.WorkerExe, r.cfg.WorkerArgs, r.cfg.WorkerEnv)
		if err != nil {
			return err
		}
		procs = append(procs, w)
		p := WorkerParams{DB: r.path, Seed: r.sizes.Seed, Worker: k, Messages: r.sizes.W5Msgs, Synchronous: r.sync}
		if err := json.NewEncoder(w.stdin).Encode(p); err != nil {
			return w.fail("send parameters: %v", err)
		}
	}
	for _, w := range procs {
		if err := w.awaitReady(); err != nil {
			return err
		}
	}

	if r.cfg.BeforeW5 != nil {
		if err := r.cfg.BeforeW5(ctx); err != nil {
			return err
		}
	}
	results := make([]WorkerResult, n)
	errs := make([]error, n)
	received := make([]time.Time, n)
	var wg sync.WaitGroup
	release := time.Now()
	for _, w := range procs {
		if _, err := io.WriteString(w.stdin, goLine); err != nil {
			return w.fail("release: %v", err)
		}
	}
	for i, w := range procs {
		wg.Go(func() {
			errs[i] = w.readLine(&results[i])
			received[i] = time.Now()
		})
	}
	wg.Wait()
	var last time.Time
	for i := range procs {
		if errs[i] != nil {
			return errs[i]
		}
		if received[i].After(last) {
			last = received[i]
		}
	}
	wall := last.Sub(release)
	for _, w := range procs {
		w.stdin.Close()
		err := w.cmd.Wait()
		w.done = true
		if err != nil {
			r.logf("W5: worker %d exited after reporting: %v %s", w.k, err, strings.TrimSpace(w.stderr.String()))
		}
	}
	if r.cfg.AfterW5 != nil {
		if err := r.cfg.AfterW5(ctx, results); err != nil {
			return err
		}
	}

	var lat []time.Duration
	var retries int64
	retriesKnown := true
	for _, wr := range results {
		for _, ns := range wr.LatenciesNS {
			lat = append(lat, time.Duration(ns))
		}
		res.Errors += wr.Errors
		if wr.FirstError != "" {
			r.logf("W5: worker %d: %d append errors, first: %s", wr.Worker, wr.Errors, wr.FirstError)
		}
		res.PerProcS = append(res.PerProcS, round3(wr.ElapsedS))
		if wr.LockRetries == nil {
			retriesKnown = false
		} else {
			retries += *wr.LockRetries
		}
	}
	if retriesKnown {
		res.LockRetries = &retries
	}
	res.N = len(lat)
	res.WallS = round3(wall.Seconds())
	res.MsgsPerS = round3(float64(n*r.sizes.W5Msgs) / wall.Seconds())
	res.Latency = summarize(lat)
	r.logf("W5 contention: %d procs, %d appends in %.2fs (%.0f msg/s, max %.3f ms, %d errors)", n, res.N, res.WallS, res.MsgsPerS, res.Max, res.Errors)
	return r.verifyW5(ctx)
}

type rowKey struct{ role, content, toolCallID string }

// verifyW5 compares each worker session's stored (role, content, tool_call_id), in id order,
// with the regenerated messages, and checks that the W1 rows are all still there.
func (r *runner) verifyW5(ctx context.Context) error {
	v := &r.rep.W5.Verify
	db, err := r.open(ctx, r.path, r.sync)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer db.Close()
	unexpected := 0
	for k := range r.sizes.W5Procs {
		specs, msgs := r.gen.W5(r.sizes.Seed, k, r.sizes.W5Msgs)
		for _, s := range specs {
			var want []rowKey
			for _, m := range msgs {
				if m.SessionID == s.ID {
					want = append(want, rowKey{m.Role, m.Content, m.ToolCallID})
				}
			}
			v.Expected += len(want)
			positions := map[rowKey][]int{}
			for i, key := range want {
				positions[key] = append(positions[key], i)
			}
			seen := map[rowKey]bool{}
			conv, err := db.Conversation(ctx, s.ID, store.ViewActive)
			if err != nil {
				return fmt.Errorf("verify: load %s: %w", s.ID, err)
			}
			last, inOrder := -1, true
			for _, m := range conv {
				key := rowKey{m.Role, m.Content, m.ToolCallID}
				q := positions[key]
				switch {
				case len(q) > 0:
					v.Found++
					if q[0] < last {
						inOrder = false
					}
					last = q[0]
					positions[key] = q[1:]
					seen[key] = true
				case seen[key]:
					v.Duplicates++
				default:
					unexpected++
					inOrder = false
				}
			}
			if !inOrder {
				v.SessionsOutOfOrder++
				r.logf("W5 verify: %s rows are not in append order", s.ID)
			}
			sess, err := db.GetSession(ctx, s.ID)
			if err != nil {
				return fmt.Errorf("verify: get %s: %w", s.ID, err)
			}
			if sess.MessageCount != len(want) {
				v.SessionCountMismatch++
				r.logf("W5 verify: %s message_count %d, want %d", s.ID, sess.MessageCount, len(want))
			}
		}
	}
	v.Missing = v.Expected - v.Found
	w1Rows := 0
	v.W1MessagesIntact = true
	for _, s := range r.specs {
		conv, err := db.Conversation(ctx, s.ID, store.ViewActive)
		if err != nil {
			return fmt.Errorf("verify: load %s: %w", s.ID, err)
		}
		w1Rows += len(conv)
		if len(conv) != s.Size {
			v.W1MessagesIntact = false
		}
	}
	if w1Rows != len(r.msgs) {
		v.W1MessagesIntact = false
		r.logf("W5 verify: %d W1 rows, want %d", w1Rows, len(r.msgs))
	}
	if unexpected > 0 {
		r.logf("W5 verify: %d stored rows match no generated message", unexpected)
	}
	v.OK = v.Missing == 0 && v.Found == v.Expected && v.Duplicates == 0 && unexpected == 0 &&
		v.SessionsOutOfOrder == 0 && v.SessionCountMismatch == 0 && v.W1MessagesIntact
	return nil
}

// tailBuffer keeps the last max bytes written to it: enough of a worker's stderr to explain a
// failure without holding an unbounded log.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
