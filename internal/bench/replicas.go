package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
)

// ReplicasConfig configures the two-replica soak (`spool bench replicas`). Zero fields take
// defaults.
type ReplicasConfig struct {
	Dir           string        // scratch directory (required): the replicas' homes, the cluster
	URL           string        // an empty PostgreSQL database; "": a cluster started for the run
	Exe           string        // the spool binary the replicas run (required)
	Clients       int           // concurrent HTTP clients (32)
	Conversations int           // shared conversations (8)
	Duration      time.Duration // how long the clients send turns (60 s)
	KillAt        time.Duration // when replica A is killed with SIGKILL (Duration/2)
	TTL           time.Duration // leases.ttl of both replicas (5 s); they renew every TTL/3
	ModelLatency  time.Duration // the fake model's delay before every answer (30 ms)
	// Control adds an unfenced writer: every 250 ms it appends a lone user message to one of
	// the conversations through the store without a lease, as a replica with fencing removed
	// would. The run must then fail its verdicts (exit 1): it shows they can.
	Control bool
	Log     io.Writer // progress; nil: none
}

// ReplicasReport is what `spool bench replicas` prints. The verdicts are counts.
type ReplicasReport struct {
	Benchmark     string  `json:"benchmark"`
	Control       bool    `json:"control"`
	Clients       int     `json:"clients"`
	Conversations int     `json:"conversations"`
	DurationS     float64 `json:"duration_s"`
	TTLS          float64 `json:"lease_ttl_s"`
	// Requests: every request a client sent, how it ended.
	Answered       int `json:"answered"`         // 200, the answer names the turn's text
	Busy           int `json:"busy_409_retried"` // 409 session_busy, retried after Retry-After
	FailedByKill   int `json:"failed_by_kill"`   // no answer: replica A died under the request
	OtherFailures  int `json:"other_failures"`   // anything else (a verdict: must be 0)
	AnsweredByA    int `json:"answered_by_a"`
	AnsweredByB    int `json:"answered_by_b"`
	StoredTurns    int `json:"stored_turns"`
	OrphanMessages int `json:"orphan_user_messages"` // user messages of killed turns, no answer
	// Verdicts.
	Interleaved int `json:"interleaved"` // a turn's user message not followed by its own answer
	Lost        int `json:"lost"`        // answered 200 but not stored as a whole turn
	Duplicated  int `json:"duplicated"`  // a turn's text stored more than once
	Foreign     int `json:"foreign"`     // stored text no client sent
	// The kill: leases replica A held when it died, and how long their conversations waited.
	KilledMidTurn    int       `json:"killed_mid_turn_leases"`
	LeaseLeftS       []float64 `json:"lease_left_at_kill_s"` // per such lease: its expiry − the kill
	TakeoverS        []float64 `json:"takeover_s"`           // per such conversation: kill → first answer from B
	TakeoverMaxS     float64   `json:"takeover_max_s"`       // verdict: <= TTL + 1 s
	StaleAttempted   int       `json:"stale_writes_attempted"`
	StaleAccepted    int       `json:"stale_writes_accepted"` // verdict: 0
	UnfencedWrites   int       `json:"control_unfenced_writes,omitempty"`
	Failures         []string  `json:"failures"`
	OK               bool      `json:"ok"`
	TotalS           float64   `json:"total_runtime_s"`
	ServerStderrTail string    `json:"server_stderr_tail,omitempty"`
}

// The soak's defaults.
const (
	DefaultReplicasDuration     = 60 * time.Second
	DefaultReplicasTTL          = 5 * time.Second
	DefaultReplicasModelLatency = 30 * time.Millisecond
)

func (c *ReplicasConfig) defaults() {
	if c.Clients <= 0 {
		c.Clients = 32
	}
	if c.Conversations <= 0 {
		c.Conversations = 8
	}
	if c.Duration <= 0 {
		c.Duration = DefaultReplicasDuration
	}
	if c.KillAt <= 0 || c.KillAt >= c.Duration {
		c.KillAt = c.Duration / 2
	}
	if c.TTL <= 0 {
		c.TTL = DefaultReplicasTTL
	}
	if c.ModelLatency <= 0 {
		c.ModelLatency = DefaultReplicasModelLatency
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// replica is one `spool serve` process.
type replica struct {
	name   string
	url    string
	cmd    *exec.Cmd
	stderr *tailBuffer
	done   chan error
}

var replicaListen = regexp.MustCompile(`listening on (http://\S+)`)

func startReplica(ctx context.Context, cfg ReplicasConfig, name, config string) (*replica, error) {
	home := filepath.Join(cfg.Dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cfg.Exe, "--home", home, "serve", "--listen", "127.0.0.1:0")
	// SPOOL_DUMPABLE: the memory figures read /proc/PID/smaps_rollup of the server.
	cmd.Env = append(os.Environ(), store.HostIDEnv+"="+name, "UPSTREAM_KEY=key-"+name, "SPOOL_DUMPABLE=1")
	r := &replica{name: name, cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(r.stderr, pw)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start replica %s: %w", name, err)
	}
	go func() {
		err := cmd.Wait()
		pw.Close()
		r.done <- err
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := replicaListen.FindStringSubmatch(sc.Text()); m != nil && found != nil {
				found <- m[1]
				found = nil
			}
		}
		if found != nil {
			close(found)
		}
	}()
	select {
	case u, ok := <-found:
		if !ok {
			return nil, fmt.Errorf("replica %s did not start: %s", name, r.stderr.String())
		}
		r.url = u
		return r, nil
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("replica %s did not listen within 2 minutes: %s", name, r.stderr.String())
	}
}

// stop ends the replica with SIGTERM (SIGKILL after 30 s) unless it is already gone.
func (r *replica) stop() {
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// turnResult is one POST /v1/chat/completions.
type turnResult struct {
	status     int
	code       string
	retryAfter time.Duration
	answer     string
	session    string
	err        error
}

func postTurn(ctx context.Context, c *http.Client, base, sid, text, busy string) turnResult {
	body, _ := json.Marshal(map[string]any{"model": "spool", "messages": []map[string]string{{"role": "user", "content": text}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return turnResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if sid != "" {
		req.Header.Set("X-Spool-Session-Id", sid)
	}
	if busy != "" {
		req.Header.Set("X-Spool-Busy", busy)
	}
	res, err := c.Do(req)
	if err != nil {
		return turnResult{err: err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return turnResult{err: err}
	}
	var v struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(raw, &v)
	r := turnResult{status: res.StatusCode, code: v.Error.Code, session: res.Header.Get("X-Spool-Session-Id")}
	// retry-after-ms is the precise one (Retry-After is whole seconds, rounded up).
	if s := res.Header.Get("Retry-After-Ms"); s != "" {
		if d, err := time.ParseDuration(s + "ms"); err == nil {
			r.retryAfter = d
		}
	} else if s := res.Header.Get("Retry-After"); s != "" {
		if d, err := time.ParseDuration(s + "s"); err == nil {
			r.retryAfter = d
		}
	}
	if len(v.Choices) > 0 {
		r.answer = v.Choices[0].Message.Content
	}
	return r
}

// Replicas runs the soak: two `spool serve` replicas with their own homes and host ids on one
// PostgreSQL database and one fake model over HTTP; Clients clients send turns on
// Conversations shared conversations for Duration, alternating replicas, half of them asking to
// queue when the conversation is busy, the others retrying a 409 after its Retry-After. At
// KillAt replica A is killed with SIGKILL (holding leases mid-turn); its clients move to B.
// Afterwards every conversation is read back and checked: every answered turn stored once,
// whole, never interleaved, nothing else stored but the user messages of turns the kill cut
// short; every conversation A held answered again by B within TTL + 1 s; A's leases refused
// for a write after the takeover.
func Replicas(ctx context.Context, cfg ReplicasConfig) (*ReplicasReport, error) {
	cfg.defaults()
	start := time.Now()
	s := &soak{ctx: ctx, cfg: cfg, released: make(chan struct{}), aDead: make(chan struct{}),
		sent: map[string]string{}, answered: map[string]bool{}, failed: map[string]bool{}, firstByB: map[string]time.Time{},
		rep: &ReplicasReport{Benchmark: "spool bench replicas", Control: cfg.Control, Clients: cfg.Clients,
			Conversations: cfg.Conversations, DurationS: cfg.Duration.Seconds(), TTLS: cfg.TTL.Seconds(), TakeoverS: []float64{}}}
	rep := s.rep
	url, cleanup, err := soakDatabase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	fmt.Fprintf(cfg.Log, "replicas: database %s\n", postgres.Redact(url))
	st, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	s.st = st

	model := s.startModel()
	defer model.Close()
	defer close(s.released)
	if err := s.startReplicas(model.URL, url); err != nil {
		return nil, err
	}
	defer s.a.stop()
	defer s.b.stop()
	fmt.Fprintf(cfg.Log, "replicas: A %s, B %s\n", s.a.url, s.b.url)

	s.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients}}
	if err := s.openConversations(); err != nil {
		return nil, err
	}
	runCtx, cancelRun := context.WithTimeout(ctx, cfg.Duration)
	defer cancelRun()
	s.runCtx = runCtx
	for i := range s.sids {
		s.answered[fmt.Sprintf("open %d", i)] = true
	}
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.client(c)
		}()
	}
	// The control: an unfenced writer.
	if cfg.Control {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.unfenced()
		}()
	}
	orphaned, err := s.kill()
	if err != nil {
		return nil, err
	}
	wg.Wait()

	s.staleWrites(orphaned)
	s.takeovers(orphaned)
	if err := s.readBack(); err != nil {
		return nil, err
	}
	s.verdicts()
	rep.OK = len(rep.Failures) == 0
	if !rep.OK {
		rep.ServerStderrTail = s.b.stderr.String()
	}
	rep.TotalS = round3(time.Since(start).Seconds())
	if !rep.OK {
		return rep, fmt.Errorf("%w: %s", ErrVerify, strings.Join(rep.Failures, "; "))
	}
	return rep, nil
}

// soak is the state the two-replica soak's phases share.
type soak struct {
	ctx    context.Context
	runCtx context.Context // ends when the clients stop sending turns
	cfg    ReplicasConfig
	rep    *ReplicasReport
	st     *postgres.DB
	a, b   *replica
	hc     *http.Client
	sids   []string // the shared conversations

	// The fake model knows each replica by its API key. At the kill it holds A's calls, so A is
	// killed mid-turn: holding the lease, waiting for the model.
	holdA       atomic.Bool
	heldInModel atomic.Int64
	released    chan struct{}

	mu       sync.Mutex
	sent     map[string]string    // text → the conversation it was sent to
	answered map[string]bool      // text → answered 200
	failed   map[string]bool      // text → cut short by the kill (may be stored, once)
	firstByB map[string]time.Time // conversation → B's first answer after the kill
	killedAt time.Time
	killing  atomic.Bool // set just before the SIGKILL: A's failures from then on are the kill's
	aDead    chan struct{}
}

// soakDatabase is cfg.URL, or else a cluster started for the run; cleanup stops it.
func soakDatabase(ctx context.Context, cfg ReplicasConfig) (url string, cleanup func(), err error) {
	if cfg.URL != "" {
		return cfg.URL, func() {}, nil
	}
	// Its own scratch directory: the server runs as postgres, which must reach it.
	dir, err := scratchDir("", "spool-bench-replicas-pg-")
	if err != nil {
		return "", nil, err
	}
	c, err := startCluster(ctx, dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return c.url, func() {
		c.stop()
		os.RemoveAll(dir)
	}, nil
}

// startModel serves the fake model, holding replica A's calls once holdA is set until
// released is closed or A dies.
func (s *soak) startModel() *httptest.Server {
	fm := fake.New(fake.Config{Latency: s.cfg.ModelLatency}).Handler()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.holdA.Load() && r.Header.Get("Authorization") == "Bearer key-replica-a" {
			s.heldInModel.Add(1)
			_, _ = io.Copy(io.Discard, r.Body) // read whole, so the server notices the caller's death
			select {
			case <-r.Context().Done(): // A dies with the call open
			case <-s.released:
			}
			return
		}
		fm.ServeHTTP(w, r)
	}))
}

// startReplicas starts replicas A and B on the model at modelURL and the database at url.
func (s *soak) startReplicas(modelURL, url string) error {
	cfg := s.cfg
	renew := max(cfg.TTL/3, 100*time.Millisecond)
	config := fmt.Sprintf("provider:\n  name: openai\n  model: fake-model\n  base_url: %s/v1\n  api_key_env: UPSTREAM_KEY\n"+
		"database:\n  url: %s\n"+
		"serve:\n  busy_wait: 0s\n  retry_after: 20ms\n  max_concurrent: %d\n"+
		"leases:\n  ttl: %s\n  renew_every: %s\n  wait: 2m\n", modelURL, url, 2*cfg.Clients, cfg.TTL, renew)
	a, err := startReplica(s.ctx, cfg, "replica-a", config)
	if err != nil {
		return err
	}
	b, err := startReplica(s.ctx, cfg, "replica-b", config)
	if err != nil {
		a.stop()
		return err
	}
	s.a, s.b = a, b
	return nil
}

// openConversations opens one conversation each, alternately on A and B.
func (s *soak) openConversations() error {
	s.sids = make([]string, s.cfg.Conversations)
	for i := range s.sids {
		text := fmt.Sprintf("open %d", i)
		r := postTurn(s.ctx, s.hc, []*replica{s.a, s.b}[i%2].url, "", text, "")
		if r.err != nil || r.status != 200 || r.session == "" {
			return fmt.Errorf("open conversation %d: status %d %v", i, r.status, r.err)
		}
		s.sids[i] = r.session
		s.sent[text] = r.session
	}
	return nil
}

// client c sends turns until runCtx ends, alternating replicas, the odd clients asking to queue.
func (s *soak) client(c int) {
	busy := ""
	if c%2 == 1 {
		busy = "queue"
	}
	for n := 0; s.runCtx.Err() == nil; n++ {
		sid := s.sids[(c+n)%len(s.sids)]
		text := fmt.Sprintf("client %d turn %d", c, n)
		s.mu.Lock()
		s.sent[text] = sid
		s.mu.Unlock()
		s.turn(c, n, sid, text, busy)
	}
}

// turn sends client c's turn n until it is answered or fails, retrying a 409 after its
// Retry-After, and counts how it ended.
func (s *soak) turn(c, n int, sid, text, busy string) {
	rep := s.rep
	for {
		target := []*replica{s.a, s.b}[(c+n)%2]
		select {
		case <-s.aDead:
			target = s.b
		default:
		}
		r := postTurn(s.ctx, s.hc, target.url, sid, text, busy)
		switch {
		case r.err == nil && r.status == http.StatusConflict && r.code == "session_busy":
			s.mu.Lock()
			rep.Busy++
			s.mu.Unlock()
			if s.runCtx.Err() != nil {
				s.mu.Lock()
				delete(s.sent, text) // never ran: nothing of it may be stored
				s.mu.Unlock()
				return
			}
			time.Sleep(max(r.retryAfter, 20*time.Millisecond))
			continue
		case r.err == nil && r.status == 200 && strings.Contains(r.answer, text):
			s.mu.Lock()
			rep.Answered++
			s.answered[text] = true
			if target == s.a {
				rep.AnsweredByA++
			} else {
				rep.AnsweredByB++
				if !s.killedAt.IsZero() {
					if _, ok := s.firstByB[sid]; !ok {
						s.firstByB[sid] = time.Now()
					}
				}
			}
			s.mu.Unlock()
		case target == s.a && (r.err != nil || r.status >= 500) && s.killing.Load():
			s.mu.Lock()
			rep.FailedByKill++
			s.failed[text] = true
			s.mu.Unlock()
		default:
			s.mu.Lock()
			rep.OtherFailures++
			s.failed[text] = true
			if len(rep.Failures) < 20 {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s on %s: status %d %s %v", text, target.name, r.status, r.code, r.err))
			}
			s.mu.Unlock()
		}
		return
	}
}

// unfenced appends a lone user message to a conversation every 250 ms without a lease, until
// runCtx ends.
func (s *soak) unfenced() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-s.runCtx.Done():
			return
		case <-t.C:
		}
		sid := s.sids[n%len(s.sids)]
		if _, err := s.st.Append(s.ctx, sid, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("unfenced %d", n)}); err == nil {
			s.mu.Lock()
			s.rep.UnfencedWrites++
			s.mu.Unlock()
		}
	}
}

// kill waits until KillAt, then until A holds a call in the model (mid-turn), SIGKILLs A and
// returns the leases it still holds.
func (s *soak) kill() ([]store.HeldLease, error) {
	cfg, rep := s.cfg, s.rep
	select {
	case <-time.After(cfg.KillAt):
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
	aPID := s.a.cmd.Process.Pid
	heldByA := func() ([]store.HeldLease, error) {
		ls, err := s.st.HeldLeases(s.ctx)
		var out []store.HeldLease
		for _, l := range ls {
			if h, err := store.ParseHolder(l.Holder); err == nil && h.PID == aPID && h.Host == "replica-a" {
				out = append(out, l)
			}
		}
		return out, err
	}
	s.holdA.Store(true)
	for deadline := time.Now().Add(30 * time.Second); s.heldInModel.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // a benchmark's wait for the first held call, bounded
	}
	s.killing.Store(true)
	if err := s.a.cmd.Process.Kill(); err != nil {
		return nil, fmt.Errorf("kill replica A: %w", err)
	}
	s.mu.Lock()
	s.killedAt = time.Now()
	s.mu.Unlock()
	<-s.a.done
	close(s.aDead)
	// A transaction A had already sent still commits after its death (a turn's last write
	// releases its lease), so the leases are read once the server has had time to finish
	// them: whatever A holds then stays held until its TTL runs out (A renewed at most
	// TTL/3 before the kill, so nothing has expired yet).
	time.Sleep(min(time.Second, cfg.TTL/3))
	orphaned, err := heldByA()
	if err != nil {
		return nil, err
	}
	rep.KilledMidTurn = len(orphaned)
	for _, l := range orphaned {
		rep.LeaseLeftS = append(rep.LeaseLeftS, round3(l.ExpiresAt.Sub(s.killedAt).Seconds()))
	}
	fmt.Fprintf(cfg.Log, "replicas: A killed at %.1fs holding %d leases\n", cfg.KillAt.Seconds(), len(orphaned))
	return orphaned, nil
}

// staleWrites tries a write with each of A's leases, after B took their conversations over:
// each must be refused.
func (s *soak) staleWrites(orphaned []store.HeldLease) {
	rep := s.rep
	for _, l := range orphaned {
		rep.StaleAttempted++
		lease := store.Lease{ConversationID: l.ConversationID, Holder: l.Holder, Generation: l.Generation}
		_, err := s.st.Append(s.ctx, l.ConversationID, store.Message{Role: store.RoleAssistant, Content: "stale write of replica A"},
			store.WithLease(lease))
		if err == nil {
			rep.StaleAccepted++
		} else if !errors.Is(err, store.ErrLeaseLost) {
			rep.Failures = append(rep.Failures, fmt.Sprintf("stale write on %s: %v (want lease lost)", l.ConversationID, err))
		}
	}
}

// takeovers records, for each conversation A held at the kill, how long until B answered it.
func (s *soak) takeovers(orphaned []store.HeldLease) {
	rep := s.rep
	for _, l := range orphaned {
		t, ok := s.firstByB[l.ConversationID]
		if !ok {
			rep.Failures = append(rep.Failures, fmt.Sprintf("conversation %s (A's lease at the kill) never answered by B", l.ConversationID))
			rep.TakeoverMaxS = -1
			continue
		}
		sec := round3(t.Sub(s.killedAt).Seconds())
		rep.TakeoverS = append(rep.TakeoverS, sec)
		if rep.TakeoverMaxS >= 0 {
			rep.TakeoverMaxS = max(rep.TakeoverMaxS, sec)
		}
	}
	sort.Float64s(rep.TakeoverS)
}

// readBack reads every conversation back and counts stored, lost, duplicated, foreign,
// interleaved turns and orphan user messages.
func (s *soak) readBack() error {
	rep := s.rep
	seen := map[string]int{}
	for _, sid := range s.sids {
		ms, err := s.st.Conversation(s.ctx, sid, store.ViewAll)
		if err != nil {
			return err
		}
		for i := 0; i < len(ms); i++ {
			m := ms[i]
			if m.Role != store.RoleUser {
				rep.Interleaved++ // an answer without its user message before it
				continue
			}
			seen[m.Content]++
			if got, ok := s.sent[m.Content]; !ok || got != sid {
				rep.Foreign++
			}
			whole := i+1 < len(ms) && ms[i+1].Role == store.RoleAssistant && strings.Contains(ms[i+1].Content, m.Content)
			switch {
			case whole:
				rep.StoredTurns++
				i++
			case s.answered[m.Content]:
				rep.Lost++ // the client saw the answer; the store does not hold it after the question
			case s.failed[m.Content]:
				rep.OrphanMessages++ // the kill cut this turn short after its user message
			default:
				rep.Interleaved++
			}
		}
	}
	for _, n := range seen {
		if n > 1 {
			rep.Duplicated += n - 1
		}
	}
	for text := range s.answered {
		if seen[text] == 0 {
			rep.Lost++
		}
	}
	return nil
}

// verdicts adds to rep.Failures each verdict the run failed.
func (s *soak) verdicts() {
	rep := s.rep
	limit := s.cfg.TTL.Seconds() + 1
	check := func(ok bool, format string, args ...any) {
		if !ok {
			rep.Failures = append(rep.Failures, fmt.Sprintf(format, args...))
		}
	}
	check(rep.Interleaved == 0, "%d interleaved", rep.Interleaved)
	check(rep.Lost == 0, "%d lost", rep.Lost)
	check(rep.Duplicated == 0, "%d duplicated", rep.Duplicated)
	check(rep.Foreign == 0, "%d stored turns no client sent", rep.Foreign)
	check(rep.OtherFailures == 0, "%d requests failed other than by the kill", rep.OtherFailures)
	check(rep.StaleAccepted == 0, "%d stale writes accepted", rep.StaleAccepted)
	check(rep.KilledMidTurn > 0, "replica A held no lease when it was killed")
	check(rep.TakeoverMaxS >= 0 && rep.TakeoverMaxS <= limit, "takeover took %.3fs, more than TTL + 1 s (%.1fs)", rep.TakeoverMaxS, limit)
	check(rep.AnsweredByB > 0 && rep.AnsweredByA > 0, "both replicas must answer (A %d, B %d)", rep.AnsweredByA, rep.AnsweredByB)
}
