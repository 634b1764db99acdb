package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The idle-streams measurement's defaults: the target is 10,000 idle open streams
// within 1 GiB.
const (
	DefaultIdleStreams = 1000
	IdleTarget         = 10_000
	DefaultIdleLimit   = 1 << 30
)

// IdleConfig sizes the idle-streams measurement. Zero fields take defaults.
type IdleConfig struct {
	Dir     string // scratch directory (required): the server's home
	Exe     string // the spool binary (required): `spool serve` runs in a process of its own
	Streams int    // idle streams held open at once (DefaultIdleStreams)
	Limit   int64  // the bytes the server may use with IdleTarget idle streams (DefaultIdleLimit)
	// Pad adds this many bytes to each idle stream's message (0): a control, the figure must
	// grow by at least that much a stream (the request and the prompt hold it during the turn).
	Pad int
	// RenewEvery is the server's leases.renew_every (0: its default, 60 s, so a short run
	// renews nothing; 1 s renews during the hold and the release).
	RenewEvery time.Duration
	Openers    int       // streams being opened at once (32)
	Log        io.Writer // progress; nil: none
}

// IdleMemory is the server process's memory: VmRSS (/proc/PID/status), Pss
// (/proc/PID/smaps_rollup), and from its /metrics the Go heap and goroutine stacks in use and the
// goroutines.
type IdleMemory struct {
	RSS        int64 `json:"vm_rss_bytes"`
	PSS        int64 `json:"pss_bytes"`
	GoHeap     int64 `json:"go_heap_inuse_bytes"`
	GoStack    int64 `json:"go_stack_inuse_bytes"`
	Goroutines int64 `json:"goroutines"`
}

// IdleReport is the idle-streams measurement: `spool serve` in its own process, the streams'
// clients in this one. An idle stream is a streamed chat completion whose turn waits in its
// model call (a WAIT barrier of the fake model that opens only when the streams are released),
// its first chunk delivered, keep-alive comments flowing (serve.keepalive 1 s).
type IdleReport struct {
	Server    string     `json:"server"`
	Requested int        `json:"streams_requested"`
	Streams   int        `json:"streams"` // held open at once when the memory was read
	OpenError string     `json:"open_error,omitempty"`
	PadBytes  int        `json:"pad_bytes,omitempty"`
	OpenS     float64    `json:"open_s"`
	Before    IdleMemory `json:"before"`   // warmed up, no stream open
	Held      IdleMemory `json:"held"`     // with Streams held
	PerStream IdleMemory `json:"per_open"` // (Held - Before) / Streams
	// AtTarget is the server's memory with IdleTarget idle streams: measured (Held) when Streams
	// reached it, else Before + PerStream × IdleTarget (Extrapolated).
	Target       int        `json:"target_streams"`
	AtTarget     IdleMemory `json:"at_target"`
	Extrapolated bool       `json:"at_target_extrapolated"`
	// The verdict: AtTarget's VmRSS (the larger of RSS and PSS here) within LimitBytes.
	LimitBytes  int64 `json:"limit_bytes"`
	WithinLimit bool  `json:"within_limit"`
	// Completed counts the streams that, released, ended with data: [DONE]; Incomplete shows
	// how the first few others ended, and ServerStderr the end of the server's stderr when the
	// run failed.
	Completed    int      `json:"completed_after_release"`
	Incomplete   []string `json:"incomplete,omitempty"`
	ServerStderr string   `json:"server_stderr_tail,omitempty"`
}

// idleConn is one held stream, from this process's side.
type idleConn struct {
	conn net.Conn
	res  *http.Response
	body *bufio.Reader
}

// IdleStreams starts `spool serve` (the plain fake model, on a scratch SQLite home) in its own
// process, warms it up, reads its memory, opens cfg.Streams idle streams, reads it again, then
// releases the streams and checks each ends whole. It fails verification when the memory at
// IdleTarget streams is over the limit, when fewer streams than asked were held (OpenError says
// why), when a turn ended during the hold, or when a released stream did not end whole.
func IdleStreams(ctx context.Context, cfg IdleConfig) (IdleReport, error) {
	cfg = cfg.withDefaults()
	r := &idleRun{ctx: ctx, cfg: cfg, hc: &http.Client{}}
	rep := IdleReport{Requested: cfg.Streams, PadBytes: cfg.Pad, Target: IdleTarget, LimitBytes: cfg.Limit}
	if cfg.Exe == "" {
		return rep, errors.New("idle streams: no spool binary to serve")
	}
	if err := r.start(); err != nil {
		return rep, err
	}
	defer func() {
		if r.killed {
			return
		}
		r.srv.stop()
	}()
	rep.Server = fmt.Sprintf("spool serve, process %d (%s)", r.pid, r.srv.url)
	okBefore, err := r.warmUp(&rep)
	if err != nil {
		return rep, err
	}

	conns, firstErr := r.openAll(&rep)
	defer func() {
		for _, c := range conns {
			c.conn.Close()
		}
	}()
	rep.Streams = len(conns)
	if firstErr != nil {
		rep.OpenError = fmt.Sprintf("opened %d of %d idle streams: %v", len(conns), cfg.Streams, firstErr)
		r.logf("gateway idle streams: %s", rep.OpenError)
	}
	if rep.Held, err = serverMemory(ctx, r.hc, r.srv.url, r.pid); err != nil {
		return rep, err
	}
	okHeld, err := scrapeTurns(ctx, r.hc, r.srv.url)
	if err != nil {
		return rep, err
	}
	rep.measure()
	r.logf("gateway idle streams: %d held by %s: VmRSS %d MB, Pss %d MB, Go heap %d MB; per stream %d / %d / %d bytes; at %d streams VmRSS %d MB (extrapolated: %v, limit %d MB)",
		rep.Streams, rep.Server, rep.Held.RSS>>20, rep.Held.PSS>>20, rep.Held.GoHeap>>20, rep.PerStream.RSS, rep.PerStream.PSS, rep.PerStream.GoHeap,
		IdleTarget, rep.AtTarget.RSS>>20, rep.Extrapolated, rep.LimitBytes>>20)

	verify := rep.holdVerdicts(okBefore, okHeld)
	if rep.Streams < cfg.Streams {
		// The barrier opens only with all the streams asked for: end the held turns with the server.
		r.killed = true
		_ = r.srv.cmd.Process.Kill()
		<-r.srv.done
	} else {
		if err := r.release(&rep, conns); err != nil {
			return rep, err
		}
		if rep.Completed != rep.Streams {
			verify = append(verify, fmt.Sprintf("%d of %d released streams did not end whole", rep.Streams-rep.Completed, rep.Streams))
		}
	}
	if len(verify) > 0 {
		rep.ServerStderr = r.srv.stderr.String()
		return rep, fmt.Errorf("%w: %s", ErrVerify, strings.Join(verify, "; "))
	}
	return rep, nil
}

// idleBarrier is the fake model's WAIT barrier the idle streams' turns wait at.
const idleBarrier = "idle-hold"

func (c IdleConfig) withDefaults() IdleConfig {
	if c.Streams <= 0 {
		c.Streams = DefaultIdleStreams
	}
	if c.Limit <= 0 {
		c.Limit = DefaultIdleLimit
	}
	if c.Openers <= 0 {
		c.Openers = 32
	}
	return c
}

// idleRun is the state one idle-streams measurement shares between its phases.
type idleRun struct {
	ctx    context.Context
	cfg    IdleConfig
	hc     *http.Client
	srv    *replica
	pid    int
	host   string
	killed bool // the server was killed: nothing left to stop
}

func (r *idleRun) logf(format string, a ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, format+"\n", a...)
	}
}

// start runs `spool serve` in a process of its own.
func (r *idleRun) start() error {
	conf := "provider:\n  name: fake\n" +
		"serve:\n  max_concurrent: 1000000\n  keepalive: 1s\n  turn_timeout: 2h\n  drain_timeout: 2m\n"
	if r.cfg.RenewEvery > 0 {
		conf += fmt.Sprintf("leases:\n  ttl: %s\n  renew_every: %s\n", max(5*time.Minute, 2*r.cfg.RenewEvery), r.cfg.RenewEvery)
	}
	srv, err := startReplica(r.ctx, ReplicasConfig{Dir: r.cfg.Dir, Exe: r.cfg.Exe}, "idle-serve", conf)
	if err != nil {
		return err
	}
	r.srv = srv
	r.pid = srv.cmd.Process.Pid
	r.host = strings.TrimPrefix(srv.url, "http://")
	return nil
}

// turn runs one chat completion to its end.
func (r *idleRun) turn(key, text string, stream bool) error {
	body, _ := json.Marshal(map[string]any{"model": "spool", "stream": stream, "messages": []map[string]string{{"role": "user", "content": text}}})
	req, _ := http.NewRequestWithContext(r.ctx, "POST", r.srv.url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Spool-Session-Key", key)
	res, err := r.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", res.StatusCode, b)
	}
	return err
}

// warmUp runs the code paths an idle stream takes to their end, then reads the turns ended
// so far and the server's memory (rep.Before).
func (r *idleRun) warmUp(rep *IdleReport) (float64, error) {
	for i := 0; i < 20; i++ {
		if err := r.turn(fmt.Sprintf("warm-%d", i), fmt.Sprintf("warm-up %d", i), i%2 == 0); err != nil {
			return 0, fmt.Errorf("idle streams: warm-up: %w", err)
		}
	}
	okBefore, err := scrapeTurns(r.ctx, r.hc, r.srv.url)
	if err != nil {
		return 0, err
	}
	if rep.Before, err = serverMemory(r.ctx, r.hc, r.srv.url, r.pid); err != nil {
		return 0, err
	}
	return okBefore, nil
}

// open opens idle stream i: its turn started (the role chunk read) and waiting at the barrier.
func (r *idleRun) open(i int, pad string) (*idleConn, error) {
	text := fmt.Sprintf("WAIT %s %d\nidle stream %d%s", idleBarrier, r.cfg.Streams+1, i, pad)
	body, _ := json.Marshal(map[string]any{"model": "spool", "stream": true, "messages": []map[string]string{{"role": "user", "content": text}}})
	req, _ := http.NewRequest("POST", r.srv.url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Spool-Session-Key", fmt.Sprintf("idle-%d", i))
	var d net.Dialer
	conn, err := d.DialContext(r.ctx, "tcp", r.host)
	if err != nil {
		return nil, err
	}
	// The request is written while its answer is read, as an HTTP client does: a server that
	// refuses a body over its limit answers before it has read the rest and closes, and a writer
	// that waited for its own write to end would see the broken pipe instead of that answer.
	wrote := make(chan error, 1)
	go func() { wrote <- req.Write(conn) }()
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), req)
	if err != nil {
		conn.Close()
		if werr := <-wrote; werr != nil {
			return nil, fmt.Errorf("%w (writing the request: %v)", err, werr)
		}
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		conn.Close()
		<-wrote // ends once the connection is closed
		return nil, fmt.Errorf("status %d: %s", res.StatusCode, b)
	}
	if err := <-wrote; err != nil { // the server answers 200 only after reading the whole body
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(res.Body, 16)
	if _, err := br.ReadString('\n'); err != nil { // the role chunk: the turn started
		conn.Close()
		return nil, err
	}
	return &idleConn{conn: conn, res: res, body: br}, nil
}

// openAll opens cfg.Streams idle streams with cfg.Openers at once, stopping at the first
// failure; it returns the streams held, in order, and that failure. It sets rep.OpenS.
func (r *idleRun) openAll(rep *IdleReport) ([]*idleConn, error) {
	pad := ""
	if r.cfg.Pad > 0 {
		pad = "\n" + strings.Repeat("p", r.cfg.Pad)
	}
	held := make([]*idleConn, r.cfg.Streams)
	var mu sync.Mutex
	var firstErr error
	next, opened := 0, 0
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < r.cfg.Openers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= r.cfg.Streams || firstErr != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				c, err := r.open(i, pad)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("stream %d: %w", i, err)
				}
				held[i] = c
				if err == nil {
					opened++
				}
				n := opened
				mu.Unlock()
				if err == nil && n%1000 == 0 {
					r.logf("gateway idle streams: %d open (%s)", n, time.Since(start).Round(time.Second))
				}
			}
		}()
	}
	wg.Wait()
	rep.OpenS = round3(time.Since(start).Seconds())
	var conns []*idleConn
	for _, c := range held {
		if c != nil {
			conns = append(conns, c)
		}
	}
	return conns, firstErr
}

// measure sets PerStream, AtTarget, Extrapolated and WithinLimit from Before, Held and Streams.
func (rep *IdleReport) measure() {
	n := int64(max(rep.Streams, 1))
	per := func(after, before int64) int64 { return (after - before) / n }
	rep.PerStream = IdleMemory{RSS: per(rep.Held.RSS, rep.Before.RSS), PSS: per(rep.Held.PSS, rep.Before.PSS),
		GoHeap: per(rep.Held.GoHeap, rep.Before.GoHeap), GoStack: per(rep.Held.GoStack, rep.Before.GoStack),
		Goroutines: per(rep.Held.Goroutines, rep.Before.Goroutines)}
	if rep.Streams >= IdleTarget {
		rep.AtTarget = rep.Held
	} else {
		rep.Extrapolated = true
		at := func(before, per int64) int64 { return before + per*IdleTarget }
		rep.AtTarget = IdleMemory{RSS: at(rep.Before.RSS, rep.PerStream.RSS), PSS: at(rep.Before.PSS, rep.PerStream.PSS),
			GoHeap: at(rep.Before.GoHeap, rep.PerStream.GoHeap), GoStack: at(rep.Before.GoStack, rep.PerStream.GoStack),
			Goroutines: at(rep.Before.Goroutines, rep.PerStream.Goroutines)}
	}
	rep.WithinLimit = rep.AtTarget.RSS <= rep.LimitBytes && rep.AtTarget.PSS <= rep.LimitBytes
}

// holdVerdicts lists what the hold got wrong: streams not opened, turns ended while held,
// memory over the limit.
func (rep *IdleReport) holdVerdicts(okBefore, okHeld float64) []string {
	var verify []string
	if rep.OpenError != "" {
		verify = append(verify, rep.OpenError)
	}
	if okHeld != okBefore {
		verify = append(verify, fmt.Sprintf("%.0f turns ended while the streams were held (not idle)", okHeld-okBefore))
	}
	if !rep.WithinLimit {
		verify = append(verify, fmt.Sprintf("%d idle streams would take VmRSS %d / Pss %d bytes, over the limit of %d", IdleTarget, rep.AtTarget.RSS, rep.AtTarget.PSS, rep.LimitBytes))
	}
	return verify
}

// release opens the barrier (its last arrival) and reads every held stream to its end,
// counting in rep those that ended whole.
func (r *idleRun) release(rep *IdleReport, conns []*idleConn) error {
	if err := r.turn("idle-release", fmt.Sprintf("WAIT %s %d\nrelease", idleBarrier, r.cfg.Streams+1), false); err != nil {
		return fmt.Errorf("idle streams: release: %w", err)
	}
	var done sync.Mutex
	work := make(chan *idleConn)
	var rg sync.WaitGroup
	for w := 0; w < r.cfg.Openers; w++ {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for c := range work {
				rest, err := io.ReadAll(c.body)
				done.Lock()
				if err == nil && bytes.HasSuffix(bytes.TrimSpace(rest), []byte("data: [DONE]")) {
					rep.Completed++
				} else if len(rep.Incomplete) < 5 {
					tail := rest[max(len(rest)-300, 0):]
					rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("read error %v after %d bytes, ending %q", err, len(rest), tail))
				}
				done.Unlock()
				c.conn.Close()
			}
		}()
	}
	for _, c := range conns {
		work <- c
	}
	close(work)
	rg.Wait()
	return nil
}

// serverMemory reads the server process's memory from /proc and its /metrics.
func serverMemory(ctx context.Context, hc *http.Client, url string, pid int) (IdleMemory, error) {
	var m IdleMemory
	kb := func(file, field string) (int64, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
		if err != nil {
			return 0, fmt.Errorf("server memory: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, field+":"); ok {
				v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("server memory: /proc/%d/%s %s: %w", pid, file, field, err)
				}
				return v << 10, nil
			}
		}
		return 0, fmt.Errorf("server memory: no %s in /proc/%d/%s", field, pid, file)
	}
	var err error
	if m.RSS, err = kb("status", "VmRSS"); err != nil {
		return m, err
	}
	if m.PSS, err = kb("smaps_rollup", "Pss"); err != nil {
		return m, err
	}
	vals, err := scrape(ctx, hc, url, "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines")
	if err != nil {
		return m, err
	}
	m.GoHeap, m.GoStack, m.Goroutines = int64(vals[0]), int64(vals[1]), int64(vals[2])
	return m, nil
}

// scrapeTurns is the server's count of turns that ended well (spool_turns_total{outcome="ok"}).
func scrapeTurns(ctx context.Context, hc *http.Client, url string) (float64, error) {
	v, err := scrape(ctx, hc, url, `spool_turns_total{outcome="ok"}`)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// scrape reads the named samples from a Prometheus text page (0 for one not there).
func scrape(ctx context.Context, hc *http.Client, url string, names ...string) ([]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/metrics", nil)
	res, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("server metrics: %w", err)
	}
	defer res.Body.Close()
	out := make([]float64, len(names))
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		for i, n := range names {
			if rest, ok := strings.CutPrefix(line, n+" "); ok {
				if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
					out[i] = v
				}
			}
		}
	}
	return out, sc.Err()
}
