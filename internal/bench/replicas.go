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
	rep := &ReplicasReport{Benchmark: "spool bench replicas", Control: cfg.Control, Clients: cfg.Clients,
		Conversations: cfg.Conversations, DurationS: cfg.Duration.Seconds(), TTLS: cfg.TTL.Seconds(), TakeoverS: []float64{}}
	url := cfg.URL
	if url == "" {
		// Its own scratch directory: the server runs as postgres, which must reach it.
		dir, err := scratchDir("", "spool-bench-replicas-pg-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		c, err := startCluster(ctx, dir)
		if err != nil {
			return nil, err
		}
		defer c.stop()
		url = c.url
	}
	fmt.Fprintf(cfg.Log, "replicas: database %s\n", postgres.Redact(url))
	st, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
	if err != nil {
		return nil, err
	}
	defer st.Close()

	// The fake model knows each replica by its API key. At the kill it holds A's calls, so A is
	// killed mid-turn: holding the lease, waiting for the model.
	var holdA atomic.Bool
	var heldInModel atomic.Int64
	released := make(chan struct{})
	fm := fake.New(fake.Config{Latency: cfg.ModelLatency}).Handler()
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if holdA.Load() && r.Header.Get("Authorization") == "Bearer key-replica-a" {
			heldInModel.Add(1)
			_, _ = io.Copy(io.Discard, r.Body) // read whole, so the server notices the caller's death
			select {
			case <-r.Context().Done(): // A dies with the call open
			case <-released:
			}
			return
		}
		fm.ServeHTTP(w, r)
	}))
	defer model.Close()
	defer close(released)
	renew := max(cfg.TTL/3, 100*time.Millisecond)
	config := fmt.Sprintf("provider:\n  name: openai\n  model: fake-model\n  base_url: %s/v1\n  api_key_env: UPSTREAM_KEY\n"+
		"database:\n  url: %s\n"+
		"serve:\n  busy_wait: 0s\n  retry_after: 20ms\n  max_concurrent: %d\n"+
		"leases:\n  ttl: %s\n  renew_every: %s\n  wait: 2m\n", model.URL, url, 2*cfg.Clients, cfg.TTL, renew)
	a, err := startReplica(ctx, cfg, "replica-a", config)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	b, err := startReplica(ctx, cfg, "replica-b", config)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	fmt.Fprintf(cfg.Log, "replicas: A %s, B %s\n", a.url, b.url)

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients}}
	// One conversation each, opened alternately on A and B.
	sids := make([]string, cfg.Conversations)
	sent := map[string]string{} // text → the conversation it was sent to
	for i := range sids {
		text := fmt.Sprintf("open %d", i)
		r := postTurn(ctx, hc, []*replica{a, b}[i%2].url, "", text, "")
		if r.err != nil || r.status != 200 || r.session == "" {
			return nil, fmt.Errorf("open conversation %d: status %d %v", i, r.status, r.err)
		}
		sids[i] = r.session
		sent[text] = r.session
	}

	var (
		mu       sync.Mutex
		answered = map[string]bool{} // text → answered 200
		failed   = map[string]bool{} // text → cut short by the kill (may be stored, once)
		firstByB = map[string]time.Time{}
		killedAt time.Time
		killing  atomic.Bool // set just before the SIGKILL: A's failures from then on are the kill's
		aDead    = make(chan struct{})
	)
	runCtx, cancelRun := context.WithTimeout(ctx, cfg.Duration)
	defer cancelRun()
	for i := range sids {
		answered[fmt.Sprintf("open %d", i)] = true
	}
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			busy := ""
			if c%2 == 1 {
				busy = "queue"
			}
			for n := 0; runCtx.Err() == nil; n++ {
				sid := sids[(c+n)%len(sids)]
				text := fmt.Sprintf("client %d turn %d", c, n)
				mu.Lock()
				sent[text] = sid
				mu.Unlock()
				for attempt := 0; ; attempt++ {
					target := []*replica{a, b}[(c+n)%2]
					select {
					case <-aDead:
						target = b
					default:
					}
					r := postTurn(ctx, hc, target.url, sid, text, busy)
					switch {
					case r.err == nil && r.status == http.StatusConflict && r.code == "session_busy":
						mu.Lock()
						rep.Busy++
						mu.Unlock()
						if runCtx.Err() != nil {
							mu.Lock()
							delete(sent, text) // never ran: nothing of it may be stored
							mu.Unlock()
							break
						}
						time.Sleep(max(r.retryAfter, 20*time.Millisecond))
						continue
					case r.err == nil && r.status == 200 && strings.Contains(r.answer, text):
						mu.Lock()
						rep.Answered++
						answered[text] = true
						if target == a {
							rep.AnsweredByA++
						} else {
							rep.AnsweredByB++
							if !killedAt.IsZero() {
								if _, ok := firstByB[sid]; !ok {
									firstByB[sid] = time.Now()
								}
							}
						}
						mu.Unlock()
					case target == a && (r.err != nil || r.status >= 500) && killing.Load():
						mu.Lock()
						rep.FailedByKill++
						failed[text] = true
						mu.Unlock()
					default:
						mu.Lock()
						rep.OtherFailures++
						failed[text] = true
						if len(rep.Failures) < 20 {
							rep.Failures = append(rep.Failures, fmt.Sprintf("%s on %s: status %d %s %v", text, target.name, r.status, r.code, r.err))
						}
						mu.Unlock()
					}
					break
				}
			}
		}()
	}

	// The control: an unfenced writer.
	if cfg.Control {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for n := 0; ; n++ {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
				}
				sid := sids[n%len(sids)]
				if _, err := st.Append(ctx, sid, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("unfenced %d", n)}); err == nil {
					mu.Lock()
					rep.UnfencedWrites++
					mu.Unlock()
				}
			}
		}()
	}

	// The kill, mid-turn: wait until A holds a lease, then SIGKILL it.
	var orphaned []store.HeldLease
	select {
	case <-time.After(cfg.KillAt):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	aPID := a.cmd.Process.Pid
	heldByA := func() ([]store.HeldLease, error) {
		ls, err := st.HeldLeases(ctx)
		var out []store.HeldLease
		for _, l := range ls {
			if h, err := store.ParseHolder(l.Holder); err == nil && h.PID == aPID && h.Host == "replica-a" {
				out = append(out, l)
			}
		}
		return out, err
	}
	holdA.Store(true)
	for deadline := time.Now().Add(30 * time.Second); heldInModel.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // a benchmark's wait for the first held call, bounded
	}
	killing.Store(true)
	if err := a.cmd.Process.Kill(); err != nil {
		return nil, fmt.Errorf("kill replica A: %w", err)
	}
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	<-a.done
	close(aDead)
	// A transaction A had already sent still commits after its death (a turn's last write
	// releases its lease), so the leases are read once the server has had time to finish
	// them: whatever A holds then stays held until its TTL runs out (A renewed at most
	// TTL/3 before the kill, so nothing has expired yet).
	time.Sleep(min(time.Second, cfg.TTL/3))
	if orphaned, err = heldByA(); err != nil {
		return nil, err
	}
	rep.KilledMidTurn = len(orphaned)
	for _, l := range orphaned {
		rep.LeaseLeftS = append(rep.LeaseLeftS, round3(l.ExpiresAt.Sub(killedAt).Seconds()))
	}
	fmt.Fprintf(cfg.Log, "replicas: A killed at %.1fs holding %d leases\n", cfg.KillAt.Seconds(), len(orphaned))

	wg.Wait()

	// Stale writes: A's leases, after B took their conversations over, must be refused.
	for _, l := range orphaned {
		rep.StaleAttempted++
		lease := store.Lease{ConversationID: l.ConversationID, Holder: l.Holder, Generation: l.Generation}
		_, err := st.Append(ctx, l.ConversationID, store.Message{Role: store.RoleAssistant, Content: "stale write of replica A"},
			store.WithLease(lease))
		if err == nil {
			rep.StaleAccepted++
		} else if !errors.Is(err, store.ErrLeaseLost) {
			rep.Failures = append(rep.Failures, fmt.Sprintf("stale write on %s: %v (want lease lost)", l.ConversationID, err))
		}
	}
	for _, l := range orphaned {
		t, ok := firstByB[l.ConversationID]
		if !ok {
			rep.Failures = append(rep.Failures, fmt.Sprintf("conversation %s (A's lease at the kill) never answered by B", l.ConversationID))
			rep.TakeoverMaxS = -1
			continue
		}
		s := round3(t.Sub(killedAt).Seconds())
		rep.TakeoverS = append(rep.TakeoverS, s)
		if rep.TakeoverMaxS >= 0 {
			rep.TakeoverMaxS = max(rep.TakeoverMaxS, s)
		}
	}
	sort.Float64s(rep.TakeoverS)

	// Read back and check.
	seen := map[string]int{}
	for _, sid := range sids {
		ms, err := st.Conversation(ctx, sid, store.ViewAll)
		if err != nil {
			return nil, err
		}
		for i := 0; i < len(ms); i++ {
			m := ms[i]
			if m.Role != store.RoleUser {
				rep.Interleaved++ // an answer without its user message before it
				continue
			}
			seen[m.Content]++
			if got, ok := sent[m.Content]; !ok || got != sid {
				rep.Foreign++
			}
			whole := i+1 < len(ms) && ms[i+1].Role == store.RoleAssistant && strings.Contains(ms[i+1].Content, m.Content)
			switch {
			case whole:
				rep.StoredTurns++
				i++
			case answered[m.Content]:
				rep.Lost++ // the client saw the answer; the store does not hold it after the question
			case failed[m.Content]:
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
	for text := range answered {
		if seen[text] == 0 {
			rep.Lost++
		}
	}

	limit := cfg.TTL.Seconds() + 1
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
	rep.OK = len(rep.Failures) == 0
	if !rep.OK {
		rep.ServerStderrTail = b.stderr.String()
	}
	rep.TotalS = round3(time.Since(start).Seconds())
	if !rep.OK {
		return rep, fmt.Errorf("%w: %s", ErrVerify, strings.Join(rep.Failures, "; "))
	}
	return rep, nil
}
