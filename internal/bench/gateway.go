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
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/gateway/openai"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// GatewayConfig sizes the gateway benchmark. Zero fields take defaults.
type GatewayConfig struct {
	Dir     string    // scratch directory (required)
	Clients int       // concurrent HTTP clients (64)
	Turns   int       // turns per client per phase (10)
	Shared  int       // sessions the shared phase's clients share (8)
	Log     io.Writer // progress; nil: none
	// The idle-streams memory figure (IdleStreams): Exe is the spool binary it serves in a
	// process of its own ("": not measured); IdleStreams, IdleLimit and IdlePad are
	// IdleConfig's Streams, Limit and Pad.
	Exe         string
	IdleStreams int
	IdleLimit   int64
	IdlePad     int
	IdleRenew   time.Duration // IdleConfig.RenewEvery
	// OpenLoad is the open-loop phase's offered load, a fraction of the distinct phase's
	// turns/s (0.5); a negative value skips the phase.
	OpenLoad float64
	// CPUProfile and MemProfile, when set, get a CPU profile of the HTTP phases (distinct, open
	// loop, shared: both ends of the connections, client and server share the process) and the
	// heap profile (allocations since the process started) at their end, in pprof's format.
	CPUProfile, MemProfile io.Writer

	// writeDelay (tests) makes every store write take at least this long: a slow store, which
	// the report must show.
	writeDelay time.Duration
}

// GatewayPhase is one workload's throughput and time spent in spool.
type GatewayPhase struct {
	Sessions    int     `json:"sessions"`
	Turns       int     `json:"turns"`
	TurnsPerSec float64 `json:"turns_per_sec"`
	// Latency is the client's round trip; InSpool is that minus the turn's model time.
	Latency Latency `json:"latency"`
	InSpool Latency `json:"in_spool"`
	// Parts is what the time in spool is made of, per turn (see GatewayParts).
	Parts GatewayParts `json:"in_spool_parts"`
	// CPUPerTurn is the process's CPU time (user and system, getrusage) during the phase over
	// its turns, in milliseconds: what one turn costs, both ends of the HTTP connection and the
	// in-process fake model included. Less swayed by the machine's load than turns/s.
	CPUPerTurn float64 `json:"cpu_ms_per_turn"`
	// ClosedLoopFloor is the mean round trip Little's law gives this closed loop, in
	// milliseconds: clients ÷ turns/s (each client sends its next turn when its previous answer
	// came, so the clients are always all in spool). With a model that takes no time that is the
	// mean time in spool, whatever spool does: a p99 below it needs more turns/s, not a faster
	// turn. The measured mean round trip is never above it (it leaves out each client's own
	// time between turns).
	ClosedLoopFloor float64 `json:"closed_loop_floor_ms"`
}

// closedLoopFloor is the mean round trip, in milliseconds, of a closed loop of clients that
// completes turnsPerSec (Little's law: mean time in the system = clients ÷ throughput); 0 when
// there is no throughput to divide by.
func closedLoopFloor(clients int, turnsPerSec float64) float64 {
	if clients <= 0 || turnsPerSec <= 0 {
		return 0
	}
	return round3(float64(clients) / turnsPerSec * 1000)
}

// GatewayParts splits a turn's time in spool, as its client saw it, into where it went, on one
// clock (client and server share the process):
//   - BeforeTurn: from the client's send to the turn's start: the request over HTTP, its JSON,
//     the gateway's session resolution (route and history reads) and the wait for the session's
//     slot (in the shared phase, the turns queued on one session);
//   - Lease: acquiring the turn lease (a write transaction, which stores the user's message
//     too when the history did not change since the turn read it: store.BeginTurn);
//   - StoreWrites: the turn's other store writes (CommitTurn and the rest), each including its
//     wait for SQLite's single writer;
//   - StoreReads: the turn's store reads (session, history, prompt, last call);
//   - Agent: the rest of the turn (building the prompt and request, the agent's bookkeeping,
//     and every wait for a CPU in between);
//   - AfterTurn: from the turn's end to the client's last byte: locating the reply, its JSON,
//     the response over HTTP.
//
// Each is a Latency over the turns; the means add up to the mean time in spool.
type GatewayParts struct {
	BeforeTurn  Latency `json:"before_turn"`
	Lease       Latency `json:"lease_acquire"`
	StoreWrites Latency `json:"store_writes"`
	StoreReads  Latency `json:"store_reads"`
	Agent       Latency `json:"agent"`
	AfterTurn   Latency `json:"after_turn"`
}

// GatewayOpenLoop is the time in spool at a fixed offered load: the distinct phase's clients,
// on the same connections and sessions, send turns on a schedule (turn i of the phase is due at
// i ÷ OfferedPerSec after the start, on client i mod clients) instead of each waiting for its
// previous answer. It explains the closed-loop figure beside it: with a model that takes no time,
// a closed loop's mean time in spool is clients ÷ turns/s (Little's law), whatever spool does,
// while here it is what a turn costs when the gateway is not saturated.
type GatewayOpenLoop struct {
	// FractionOfCapacity is the offered load over the distinct phase's turns/s.
	FractionOfCapacity float64 `json:"fraction_of_capacity"`
	OfferedPerSec      float64 `json:"offered_turns_per_sec"`
	AchievedPerSec     float64 `json:"achieved_turns_per_sec"`
	Turns              int     `json:"turns"`
	// InSpool is each turn's round trip minus its model time, counted from its send, or from
	// its due time when it was late (its client still waited for its previous answer then: the
	// delay is spool's, and is counted).
	InSpool Latency `json:"in_spool"`
	// Parts is what InSpool is made of (as GatewayPhase.Parts; a late turn's wait for its
	// client is in BeforeTurn).
	Parts GatewayParts `json:"in_spool_parts"`
	// Late counts the turns whose client was still waiting for its previous answer when they
	// were due.
	Late int `json:"late_turns"`
}

// GatewayReport is what `spool bench gateway` prints.
type GatewayReport struct {
	Clients  int          `json:"clients"`
	Distinct GatewayPhase `json:"distinct"`
	// OpenLoop is the distinct sessions at a fixed offered load below capacity (see
	// GatewayOpenLoop), reported beside the closed-loop Distinct figure.
	OpenLoop *GatewayOpenLoop `json:"open_loop_distinct,omitempty"`
	Shared   GatewayPhase     `json:"shared"`
	// TTFB is the time to a stream's first byte (the role chunk, sent before the model is
	// called, so all of it is spool's).
	TTFB Latency `json:"stream_ttfb"`
	// Idle is the memory of idle open streams, measured on `spool serve` in its own process
	// (nil without GatewayConfig.Exe).
	Idle *IdleReport `json:"idle_streams,omitempty"`
	// The store-bound limit: W1 appends per second on this machine now, over the store writes
	// one turn makes (counted during the distinct phase).
	W1AppendsPerSec       float64 `json:"w1_appends_per_sec"`
	WritesPerTurn         float64 `json:"store_writes_per_turn"`
	StoreBoundTurnsPerSec float64 `json:"store_bound_turns_per_sec"`
	RatioToStoreBound     float64 `json:"distinct_ratio_to_store_bound"`
	// Checks: every session alternates user/assistant and holds each sent message once.
	Interleaved int `json:"interleaved_turns"`
	Duplicated  int `json:"duplicated_turns"`
	Lost        int `json:"lost_turns"`
	Failed      int `json:"failed_requests"`
}

type turnTimesKey struct{}

// turnTimes accumulates where one turn's time went (each a sum of durations).
type turnTimes struct {
	model, lease, writes, reads atomic.Int64
	start, end                  time.Time
}

func timesOf(ctx context.Context) *turnTimes {
	t, _ := ctx.Value(turnTimesKey{}).(*turnTimes)
	return t
}

func addSince(p *atomic.Int64, start time.Time) { p.Add(int64(time.Since(start))) }

// partTimes collects where a phase's turns spent their time in spool (GatewayParts).
type partTimes struct {
	before, lease, writes, reads, agent, after []time.Duration
}

// add records turn tt, timed from origin (when it was sent, or due in an open loop) to done
// (its answer's end), and returns its time in spool: all of it but the model's.
func (p *partTimes) add(tt *turnTimes, origin, done time.Time) time.Duration {
	m := time.Duration(tt.model.Load())
	l, w, rd := time.Duration(tt.lease.Load()), time.Duration(tt.writes.Load()), time.Duration(tt.reads.Load())
	p.before, p.lease, p.writes, p.reads = append(p.before, tt.start.Sub(origin)), append(p.lease, l), append(p.writes, w), append(p.reads, rd)
	p.agent, p.after = append(p.agent, tt.end.Sub(tt.start)-l-w-rd-m), append(p.after, done.Sub(tt.end))
	return done.Sub(origin) - m
}

func (p *partTimes) summary() GatewayParts {
	return GatewayParts{BeforeTurn: summarize(p.before), Lease: summarize(p.lease), StoreWrites: summarize(p.writes),
		StoreReads: summarize(p.reads), Agent: summarize(p.agent), AfterTurn: summarize(p.after)}
}

// timedClient is the fake model, timing each call into the turn's accumulator.
type timedClient struct {
	c provider.Client
}

func (t *timedClient) Name() string { return t.c.Name() }

func (t *timedClient) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	start := time.Now()
	resp, err := t.c.Chat(ctx, req, onDelta)
	if acc := timesOf(ctx); acc != nil {
		addSince(&acc.model, start)
	}
	return resp, err
}

// timedRunner keeps each turn's times, per session in turn order.
type timedRunner struct {
	a     *agent.Agent
	mu    sync.Mutex
	times map[string][]*turnTimes
}

func (r *timedRunner) Run(ctx context.Context, sid, input string, opts agent.RunOptions) (agent.Result, error) {
	acc := &turnTimes{start: time.Now()}
	res, err := r.a.Run(context.WithValue(ctx, turnTimesKey{}, acc), sid, input, opts)
	acc.end = time.Now()
	r.mu.Lock()
	r.times[res.SessionID] = append(r.times[res.SessionID], acc)
	r.mu.Unlock()
	return res, err
}

func (r *timedRunner) pop(sid string) *turnTimes {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.times[sid]
	if len(q) == 0 {
		return &turnTimes{}
	}
	r.times[sid] = q[1:]
	return q[0]
}

// countingStore counts the store's writes and times the turn's writes and reads.
type countingStore struct {
	store.Backend
	writes atomic.Int64
	delay  time.Duration // added to every write (GatewayConfig.writeDelay)
}

// write counts one write and returns the function that times it into the turn's writes.
func (c *countingStore) write(ctx context.Context) func() {
	c.writes.Add(1)
	done := c.timed(ctx, func(t *turnTimes) *atomic.Int64 { return &t.writes })
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	return done
}

func (c *countingStore) read(ctx context.Context) func() {
	return c.timed(ctx, func(t *turnTimes) *atomic.Int64 { return &t.reads })
}

func (c *countingStore) timed(ctx context.Context, part func(*turnTimes) *atomic.Int64) func() {
	acc := timesOf(ctx)
	if acc == nil {
		return func() {}
	}
	start := time.Now()
	return func() { addSince(part(acc), start) }
}

func (c *countingStore) WatchLease(id string) (store.LeaseWatch, error) {
	if w, ok := c.Backend.(store.LeaseWatcher); ok {
		return w.WatchLease(id)
	}
	return nil, errors.New("no lease watch")
}
func (c *countingStore) CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error) {
	defer c.write(ctx)()
	return c.Backend.CreateSession(ctx, ns)
}
func (c *countingStore) UpdateSession(ctx context.Context, id string, p store.SessionPatch) error {
	defer c.write(ctx)()
	return c.Backend.UpdateSession(ctx, id, p)
}
func (c *countingStore) SetSystemPrompt(ctx context.Context, id, p string) (string, error) {
	defer c.write(ctx)()
	return c.Backend.SetSystemPrompt(ctx, id, p)
}
func (c *countingStore) SetTitle(ctx context.Context, id, title string, opts ...store.WriteOption) error {
	defer c.write(ctx)()
	return c.Backend.SetTitle(ctx, id, title, opts...)
}
func (c *countingStore) RecordRequest(ctx context.Context, id string, r store.RequestRecord) error {
	defer c.write(ctx)()
	return c.Backend.RecordRequest(ctx, id, r)
}
func (c *countingStore) Append(ctx context.Context, id string, m store.Message, o ...store.WriteOption) (int64, error) {
	defer c.write(ctx)()
	return c.Backend.Append(ctx, id, m, o...)
}
func (c *countingStore) AppendBatch(ctx context.Context, id string, ms []store.Message, o ...store.WriteOption) ([]int64, error) {
	defer c.write(ctx)()
	return c.Backend.AppendBatch(ctx, id, ms, o...)
}
func (c *countingStore) CommitTurn(ctx context.Context, id string, l store.Lease, w store.TurnWrite) ([]int64, error) {
	if w.Empty() && !w.Release {
		return c.Backend.CommitTurn(ctx, id, l, w) // writes nothing
	}
	defer c.write(ctx)() // one transaction, whatever it carries
	return c.Backend.CommitTurn(ctx, id, l, w)
}
func (c *countingStore) AcquireLease(ctx context.Context, id, h string, ttl time.Duration) (store.Lease, error) {
	c.writes.Add(1)
	if acc := timesOf(ctx); acc != nil {
		defer addSince(&acc.lease, time.Now())
	}
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	return c.Backend.AcquireLease(ctx, id, h, ttl)
}
func (c *countingStore) BeginTurn(ctx context.Context, id, h string, ttl time.Duration, s store.TurnStart) (store.Lease, []int64, error) {
	c.writes.Add(1) // one transaction: the lease and the turn's first messages
	if acc := timesOf(ctx); acc != nil {
		defer addSince(&acc.lease, time.Now())
	}
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	return c.Backend.BeginTurn(ctx, id, h, ttl, s)
}
func (c *countingStore) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	defer c.write(ctx)()
	return c.Backend.RenewLease(ctx, l, ttl)
}
func (c *countingStore) ReleaseLease(ctx context.Context, l store.Lease) error {
	defer c.write(ctx)()
	return c.Backend.ReleaseLease(ctx, l)
}
func (c *countingStore) PutRoute(ctx context.Context, r store.Route) error {
	defer c.write(ctx)()
	return c.Backend.PutRoute(ctx, r)
}
func (c *countingStore) GetSession(ctx context.Context, id string) (store.Session, error) {
	defer c.read(ctx)()
	return c.Backend.GetSession(ctx, id)
}
func (c *countingStore) ResumeTarget(ctx context.Context, id string) (string, error) {
	defer c.read(ctx)()
	return c.Backend.ResumeTarget(ctx, id)
}
func (c *countingStore) Conversation(ctx context.Context, id string, v store.View) ([]store.Message, error) {
	defer c.read(ctx)()
	return c.Backend.Conversation(ctx, id, v)
}
func (c *countingStore) SystemPrompt(ctx context.Context, id string) (string, error) {
	defer c.read(ctx)()
	return c.Backend.SystemPrompt(ctx, id)
}
func (c *countingStore) Requests(ctx context.Context, id string, limit int) ([]store.RequestRecord, error) {
	defer c.read(ctx)()
	return c.Backend.Requests(ctx, id, limit)
}

// processCPU is the CPU time this process has used (user and system), 0 when unknown.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Gateway runs the gateway benchmark: clients over real HTTP on 127.0.0.1 against spool's
// gateway and the in-process fake model (no delay), on distinct and on shared sessions.
func Gateway(ctx context.Context, cfg GatewayConfig) (GatewayReport, error) {
	cfg = cfg.withDefaults()
	rep := GatewayReport{Clients: cfg.Clients}
	db, err := sqlite.Open(ctx, filepath.Join(cfg.Dir, "gateway.db"), sqlite.Options{})
	if err != nil {
		return rep, err
	}
	defer db.Close()
	st := &countingStore{Backend: db, delay: cfg.writeDelay}
	r, g, srv, err := startGateway(ctx, cfg, st)
	if err != nil {
		return rep, err
	}
	defer srv.Close()
	if err := r.drive(&rep, st); err != nil {
		return rep, err
	}
	rep.TTFB = r.ttfb()
	if err := g.Drain(ctx); err != nil {
		return rep, err
	}
	r.check(&rep, db)
	rep.Failed = int(r.failed.Load())

	// The store-bound limit, measured now on this machine: W1 (one transaction per message).
	w1, err := sqlite.Open(ctx, filepath.Join(cfg.Dir, "w1.db"), sqlite.Options{})
	if err != nil {
		return rep, err
	}
	defer w1.Close()
	if err := storeBound(ctx, w1, &rep); err != nil {
		return rep, err
	}
	return rep, gatewayVerdict(ctx, cfg, &rep)
}

func (c GatewayConfig) withDefaults() GatewayConfig {
	if c.Clients <= 0 {
		c.Clients = 64
	}
	if c.Turns <= 0 {
		c.Turns = 10
	}
	if c.Shared <= 0 {
		c.Shared = 8
	}
	if c.OpenLoad == 0 {
		c.OpenLoad = 0.5
	}
	return c
}

// gatewayRun is the state the gateway benchmark's phases share: the clients' side of the
// server, the failed requests, and the user messages sent to each session, for the checks.
type gatewayRun struct {
	ctx    context.Context
	cfg    GatewayConfig
	base   string
	hc     *http.Client
	runner *timedRunner
	failed atomic.Int64
	sent   sync.Map // session id → *[]string of user messages
	sentMu sync.Mutex
}

// startGateway serves spool's gateway over st, with the in-process fake model, on 127.0.0.1.
func startGateway(ctx context.Context, cfg GatewayConfig, st *countingStore) (*gatewayRun, *gateway.Gateway, *http.Server, error) {
	model := &timedClient{c: fake.New(fake.Config{})}
	ag, err := agent.New(agent.Deps{Store: st, Client: model, Config: agent.Config{Model: "fake", Source: gateway.Source}})
	if err != nil {
		return nil, nil, nil, err
	}
	runner := &timedRunner{a: ag, times: map[string][]*turnTimes{}}
	g, err := gateway.New(gateway.Deps{Store: st, Runner: runner, Config: gateway.Config{Model: "fake", MaxConcurrent: 1 << 20, BusyWait: time.Minute}})
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, err
	}
	srv := &http.Server{Handler: openai.New(g, openai.Options{Models: []string{"fake"}})}
	go srv.Serve(ln)
	r := &gatewayRun{ctx: ctx, cfg: cfg, base: "http://" + ln.Addr().String(), runner: runner,
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients * 2, MaxConnsPerHost: 0}}}
	return r, g, srv, nil
}

func (r *gatewayRun) logf(format string, a ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, format+"\n", a...)
	}
}

// post sends one turn; started (when not nil) gets the instant the request was sent, the
// origin of lat and ttfb.
func (r *gatewayRun) post(key, text string, stream bool, busy string, started *time.Time) (sid string, lat time.Duration, ttfb time.Duration, err error) {
	body, _ := json.Marshal(map[string]any{"model": "spool", "stream": stream, "messages": []map[string]string{{"role": "user", "content": text}}})
	req, _ := http.NewRequestWithContext(r.ctx, "POST", r.base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Spool-Session-Key", key)
	if busy != "" {
		req.Header.Set("X-Spool-Busy", busy)
	}
	start := time.Now()
	if started != nil {
		*started = start
	}
	res, err := r.hc.Do(req)
	if err != nil {
		return "", 0, 0, err
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if _, err := br.ReadByte(); err != nil {
		return "", 0, 0, err
	}
	ttfb = time.Since(start)
	if _, err := io.Copy(io.Discard, br); err != nil {
		return "", 0, 0, err
	}
	lat = time.Since(start)
	if res.StatusCode != 200 {
		return "", lat, ttfb, fmt.Errorf("status %d", res.StatusCode)
	}
	sid = res.Header.Get("X-Spool-Session-Id")
	r.sentMu.Lock()
	v, _ := r.sent.LoadOrStore(sid, &[]string{})
	*v.(*[]string) = append(*v.(*[]string), text)
	r.sentMu.Unlock()
	return sid, lat, ttfb, nil
}

// drive runs the closed-loop phases (distinct, then shared sessions) and between them the
// open loop, under the CPU profile when asked, then writes the allocation profile.
func (r *gatewayRun) drive(rep *GatewayReport, st *countingStore) error {
	cfg := r.cfg
	if cfg.CPUProfile != nil {
		if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
	}
	w0 := st.writes.Load()
	rep.Distinct = r.phase("distinct", func(c int) string { return fmt.Sprintf("distinct-%d", c) }, "")
	rep.WritesPerTurn = round3(float64(st.writes.Load()-w0) / float64(max(rep.Distinct.Turns, 1)))
	if cfg.OpenLoad > 0 && rep.Distinct.TurnsPerSec > 0 {
		rep.OpenLoop = r.openLoop(cfg.OpenLoad * rep.Distinct.TurnsPerSec)
	}
	rep.Shared = r.phase("shared", func(c int) string { return fmt.Sprintf("shared-%d", c%cfg.Shared) }, "queue")
	if cfg.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if cfg.MemProfile != nil {
		if err := pprof.Lookup("allocs").WriteTo(cfg.MemProfile, 0); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
	}
	return nil
}

// phase runs cfg.Turns turns from each of cfg.Clients clients, each turn sent when the
// client's previous one was answered, on the session keyOf(client) names.
func (r *gatewayRun) phase(name string, keyOf func(client int) string, busy string) GatewayPhase {
	cfg := r.cfg
	var mu sync.Mutex
	var lats, inSpool []time.Duration
	var parts partTimes
	keys := map[string]bool{}
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), processCPU()
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < cfg.Turns; i++ {
				key := keyOf(c)
				var sent time.Time
				sid, lat, _, err := r.post(key, fmt.Sprintf("%s client %d turn %d", name, c, i), false, busy, &sent)
				done := sent.Add(lat)
				if err != nil {
					r.failed.Add(1)
					continue
				}
				tt := r.runner.pop(sid)
				mu.Lock()
				keys[key] = true
				lats = append(lats, lat)
				inSpool = append(inSpool, parts.add(tt, sent, done))
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	el, cpu := time.Since(start), processCPU()-cpu0
	p := GatewayPhase{Sessions: len(keys), Turns: len(lats), Latency: summarize(lats), InSpool: summarize(inSpool),
		Parts: parts.summary()}
	p.TurnsPerSec = round3(float64(len(lats)) / el.Seconds())
	p.ClosedLoopFloor = closedLoopFloor(cfg.Clients, float64(len(lats))/el.Seconds())
	if len(lats) > 0 {
		p.CPUPerTurn = round3(float64(cpu) / float64(time.Millisecond) / float64(len(lats)))
	}
	r.logf("gateway %s: %d turns on %d sessions in %s (%.0f turns/s, in spool p99 %.2f ms; closed-loop floor %d clients ÷ turns/s = %.2f ms)",
		name, p.Turns, p.Sessions, el.Round(time.Millisecond), p.TurnsPerSec, p.InSpool.P99, cfg.Clients, p.ClosedLoopFloor)
	return p
}

// openLoop runs the same clients, connections and sessions as the distinct phase, at a fixed
// rate of turns a second.
func (r *gatewayRun) openLoop(rate float64) *GatewayOpenLoop {
	cfg := r.cfg
	total := cfg.Clients * cfg.Turns
	var mu sync.Mutex
	var inSpool []time.Duration
	var parts partTimes
	late := 0
	var wg sync.WaitGroup
	start := time.Now().Add(10 * time.Millisecond)
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := c; i < total; i += cfg.Clients {
				due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
				// Late: the client's previous answer came after this turn was due.
				isLate := time.Until(due) <= 0
				if !isLate {
					time.Sleep(time.Until(due))
				}
				var sent time.Time
				sid, lat, _, err := r.post(fmt.Sprintf("distinct-%d", c), fmt.Sprintf("open client %d turn %d", c, i), false, "", &sent)
				if err != nil {
					r.failed.Add(1)
					continue
				}
				tt := r.runner.pop(sid)
				origin := sent
				if isLate {
					origin = due
				}
				mu.Lock()
				inSpool = append(inSpool, parts.add(tt, origin, sent.Add(lat)))
				if isLate {
					late++
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	el := time.Since(start)
	ol := &GatewayOpenLoop{FractionOfCapacity: cfg.OpenLoad, OfferedPerSec: round3(rate), Turns: len(inSpool),
		AchievedPerSec: round3(float64(len(inSpool)) / el.Seconds()), InSpool: summarize(inSpool), Late: late,
		Parts: parts.summary()}
	r.logf("gateway open loop (distinct): %d turns offered at %.0f/s (%.2f of capacity), in spool p50 %.2f ms p99 %.2f ms, %d late",
		ol.Turns, ol.OfferedPerSec, ol.FractionOfCapacity, ol.InSpool.P50, ol.InSpool.P99, ol.Late)
	return ol
}

// ttfb measures the time to first byte of streams, one per client on its distinct session.
func (r *gatewayRun) ttfb() Latency {
	var ttfbs []time.Duration
	var tmu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < r.cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			_, _, ttfb, err := r.post(fmt.Sprintf("distinct-%d", c), fmt.Sprintf("streamed client %d", c), true, "", nil)
			if err != nil {
				r.failed.Add(1)
				return
			}
			tmu.Lock()
			ttfbs = append(ttfbs, ttfb)
			tmu.Unlock()
		}(c)
	}
	wg.Wait()
	return summarize(ttfbs)
}

// check counts in rep the turns each session's stored conversation interleaved, duplicated
// or lost, against the user messages sent to it.
func (r *gatewayRun) check(rep *GatewayReport, db store.Backend) {
	r.sent.Range(func(k, v any) bool {
		sid := k.(string)
		want := *v.(*[]string)
		ms, err := db.Conversation(r.ctx, sid, store.ViewActive)
		if err != nil {
			rep.Lost += len(want)
			return true
		}
		seen := map[string]int{}
		for i, m := range ms {
			wantRole := store.RoleUser
			if i%2 == 1 {
				wantRole = store.RoleAssistant
			}
			if m.Role != wantRole {
				rep.Interleaved++
			}
			if m.Role == store.RoleUser {
				seen[m.Content]++
			}
		}
		for _, w := range want {
			switch seen[w] {
			case 0:
				rep.Lost++
			case 1:
			default:
				rep.Duplicated += seen[w] - 1
			}
		}
		return true
	})
}

// storeBound measures W1 (one transaction per message) on w1 and from it the turns a second
// the store allows at the distinct phase's writes per turn.
func storeBound(ctx context.Context, w1 store.Backend, rep *GatewayReport) error {
	s, err := w1.CreateSession(ctx, store.NewSession{})
	if err != nil {
		return err
	}
	const n = 3000
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := w1.Append(ctx, s.ID, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("message %d of the append workload", i)}); err != nil {
			return err
		}
	}
	rep.W1AppendsPerSec = round3(n / time.Since(start).Seconds())
	if rep.WritesPerTurn > 0 {
		rep.StoreBoundTurnsPerSec = round3(rep.W1AppendsPerSec / rep.WritesPerTurn)
		rep.RatioToStoreBound = round3(rep.Distinct.TurnsPerSec / rep.StoreBoundTurnsPerSec)
	}
	return nil
}

// gatewayVerdict runs the idle-streams measurement when a spool binary is given, then fails
// verification on its verdict or on any interleaved, duplicated, lost or failed turn.
func gatewayVerdict(ctx context.Context, cfg GatewayConfig, rep *GatewayReport) error {
	var verify []string
	if cfg.Exe != "" {
		idle, err := IdleStreams(ctx, IdleConfig{Dir: cfg.Dir, Exe: cfg.Exe, Streams: cfg.IdleStreams, Limit: cfg.IdleLimit, Pad: cfg.IdlePad, RenewEvery: cfg.IdleRenew, Log: cfg.Log})
		rep.Idle = &idle
		if errors.Is(err, ErrVerify) {
			verify = append(verify, strings.TrimPrefix(err.Error(), ErrVerify.Error()+": "))
		} else if err != nil {
			return err
		}
	}
	if rep.Interleaved+rep.Duplicated+rep.Lost+rep.Failed > 0 {
		verify = append(verify, fmt.Sprintf("%d interleaved, %d duplicated, %d lost turns, %d failed requests", rep.Interleaved, rep.Duplicated, rep.Lost, rep.Failed))
	}
	if len(verify) > 0 {
		return fmt.Errorf("%w: %s", ErrVerify, strings.Join(verify, "; "))
	}
	return nil
}
