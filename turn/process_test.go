package turn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/turn"
)

var bg = context.Background()

// Several processes run many turns on one conversation: the transcript holds every turn whole,
// in one piece, exactly once.
func TestProcessesTakeTurns(t *testing.T) {
	t.Parallel()
	db, path := openDB(t)
	const procs, turns = 4, 15
	var children []*child
	for p := range procs {
		children = append(children, startChild(t, "turns", childArgs{DB: path, Session: "conv", Name: fmt.Sprint("p", p), Turns: turns}))
	}
	for p, c := range children {
		for c.lines.Scan() {
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("process p%d failed: %v", p, err)
		}
	}
	ms := conversation(t, db, store.ViewActive)
	if len(ms) != procs*turns*4 {
		t.Fatalf("%d messages, want %d", len(ms), procs*turns*4)
	}
	whole := checkTurns(t, ms, map[string]bool{})
	for p := range procs {
		if n := whole[fmt.Sprint("p", p)]; n != turns {
			t.Fatalf("p%d has %d whole turns, want %d", p, n, turns)
		}
	}
}

// A holder killed mid-turn on this host is provably dead: its lease is taken at once, long
// before its TTL (an hour), and what it flushed is consistent.
func TestKilledHolderIsReplacedAtOnce(t *testing.T) {
	t.Parallel()
	db, path := openDB(t)
	c := startChild(t, "hold", childArgs{DB: path, Session: "conv", Name: "dead", TTL: time.Hour, Renew: time.Minute, Partial: true})
	var h holdReport
	c.json(t, &h)
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	// Wait far shorter than the dead holder's TTL: success proves the dead-holder path.
	tn, err := turn.Begin(bg, db, "conv", turn.Options{Wait: 20 * time.Second, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("lease of a SIGKILLed holder not taken: %v", err)
	}
	if g := tn.Lease().Generation; g != h.Generation+1 {
		t.Fatalf("generation %d after the dead holder's %d", g, h.Generation)
	}
	if err := playTurnAfterCut(tn, db, "live"); err != nil {
		t.Fatal(err)
	}
	got := contents(conversation(t, db, store.ViewActive))
	want := []string{"dead t0 step0", "dead t0 step1", "live t0 step0", "live t0 step1", "live t0 step2", "live t0 step3"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("transcript %q, want %q", got, want)
	}
	checkTurns(t, conversation(t, db, store.ViewActive), map[string]bool{"dead": true})
}

// playTurnAfterCut runs a whole turn without playTurn's whole-history check (the history ends
// with the dead turn's cut).
func playTurnAfterCut(tn *turn.Turn, db store.Backend, name string) error {
	tn.Add(turnSteps(name, 0)...)
	if err := tn.Flush(bg); err != nil {
		return err
	}
	return tn.End(bg)
}

// A writer SIGKILLed at a random point of its turns leaves only whole flushes: every turn is
// intact except possibly its last, and no tool result lacks its call.
func TestKilledWriterLeavesConsistentTurns(t *testing.T) {
	t.Parallel()
	db, path := openDB(t)
	c := startChild(t, "turns", childArgs{DB: path, Session: "conv", Name: "k", Turns: 10000})
	for n := 0; n < 5; n, _ = strconv.Atoi(c.line(t)) {
	}
	time.Sleep(3 * time.Millisecond) // into the next turn
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	tn, err := turn.Begin(bg, db, "conv", turn.Options{Wait: 20 * time.Second, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("lease of a SIGKILLed writer not taken: %v", err)
	}
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	whole := checkTurns(t, conversation(t, db, store.ViewActive), map[string]bool{"k": true})
	if whole["k"] < 5 {
		t.Fatalf("%d whole turns stored, 5 were reported", whole["k"])
	}
}

// A holder on another host cannot be probed: its lease is kept until its TTL, and the waiter
// is told who it waits for.
func TestUnprovableHolderWaitsForTTL(t *testing.T) {
	t.Parallel()
	db, path := openDB(t)
	foreign := "pid=4242:host=elsewhere.invalid:start=1:nonce=feed"
	c := startChild(t, "hold", childArgs{DB: path, Session: "conv", Name: "far", TTL: 1500 * time.Millisecond,
		Renew: time.Second, Holder: foreign, Partial: true})
	var h holdReport
	c.json(t, &h)
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	var mu sync.Mutex
	var waitedFor []string
	tn, err := turn.Begin(bg, db, "conv", turn.Options{Wait: 30 * time.Second, Poll: 100 * time.Millisecond,
		Notice: 200 * time.Millisecond, OnWait: func(_ time.Duration, holder string) {
			mu.Lock()
			waitedFor = append(waitedFor, holder)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.End(bg)
	if now := time.Now(); now.Before(time.Unix(0, h.ExpiresNS)) {
		t.Fatalf("an unprovable holder's lease was taken %s before its TTL ran out", time.Unix(0, h.ExpiresNS).Sub(now))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waitedFor) == 0 || waitedFor[0] != foreign {
		t.Fatalf("OnWait holders %q, want %q", waitedFor, foreign)
	}
	if g := tn.Lease().Generation; g != h.Generation+1 {
		t.Fatalf("generation %d after %d", g, h.Generation)
	}
}

// A holder paused past its TTL whose lease was taken: on waking, its flush is refused, its
// context is cancelled with the lease-lost cause, and only the new holder's turn is stored.
func TestPausedHolderIsFencedOut(t *testing.T) {
	t.Parallel()
	db, path := openDB(t)
	c := startChild(t, "hold", childArgs{DB: path, Session: "conv", Name: "paused", TTL: time.Second, Renew: 300 * time.Millisecond})
	var h holdReport
	c.json(t, &h)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer c.cmd.Process.Signal(syscall.SIGCONT)
	tn, err := turn.Begin(bg, db, "conv", turn.Options{Wait: 30 * time.Second, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("lease of a stopped holder not taken after its TTL: %v", err)
	}
	if err := playTurn(tn.Context(), db, tn, "new", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	c.send(t, "flush")
	var r flushReport
	c.json(t, &r)
	if !r.FlushLost {
		t.Errorf("the paused holder's flush was not refused as lease lost: %q", r.FlushErr)
	}
	if !r.CtxDone || !r.CauseLost || !strings.Contains(r.Cause, "stopping to protect the transcript") {
		t.Errorf("the paused holder's context: done %v, cause %q", r.CtxDone, r.Cause)
	}
	if r.Persisted != 0 {
		t.Errorf("the paused holder persisted %d messages", r.Persisted)
	}
	if !strings.Contains(r.EndErr, "4 messages not persisted") {
		t.Errorf("End of the fenced-out turn: %q", r.EndErr)
	}
	got := contents(conversation(t, db, store.ViewAll))
	want := contents(turnSteps("new", 0))
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("transcript %q, want only the new holder's turn %q", got, want)
	}
}

// A holder paused past its TTL whose lease nobody took renews it and finishes its turn.
func TestExpiredUntakenLeaseContinues(t *testing.T) {
	t.Parallel()
	db, path := openDB(t)
	const ttl = 500 * time.Millisecond
	c := startChild(t, "hold", childArgs{DB: path, Session: "conv", Name: "sleepy", TTL: ttl, Renew: 200 * time.Millisecond, Partial: true})
	var h holdReport
	c.json(t, &h)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(time.Unix(0, h.ExpiresNS)) + 2*ttl) // well past the TTL
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	c.send(t, "flush")
	var r flushReport
	c.json(t, &r)
	if r.FlushErr != "" || r.CtxDone || r.EndErr != "" {
		t.Fatalf("expired but untaken lease: flush %q, context done %v (%q), end %q", r.FlushErr, r.CtxDone, r.Cause, r.EndErr)
	}
	if r.Generation != h.Generation || r.Persisted != 4 {
		t.Fatalf("generation %d (was %d), %d persisted", r.Generation, h.Generation, r.Persisted)
	}
	checkTurns(t, conversation(t, db, store.ViewAll), map[string]bool{})
	if n := len(conversation(t, db, store.ViewAll)); n != 4 {
		t.Fatalf("%d rows, want the 4 of the continued turn", n)
	}
	// Released: the next turn gets the following generation at once.
	l, err := db.AcquireLease(bg, "conv", "next", time.Minute)
	if err != nil || l.Generation != h.Generation+1 {
		t.Fatalf("after the continued turn: %+v %v", l, err)
	}
}

// Compaction under a turn while another process appends: nothing is lost, the appends made
// during the slow summary call follow the compacted set, and appends are never blocked.
func TestCompactWhileAnotherProcessAppends(t *testing.T) {
	t.Parallel()
	db, path := openDB(t)
	var hist []store.Message
	for i := range 20 {
		hist = append(hist, store.Message{Role: store.RoleUser, Content: fmt.Sprint("h ", i)})
	}
	if _, err := db.AppendBatch(bg, "conv", hist); err != nil {
		t.Fatal(err)
	}
	const count = 40
	c := startChild(t, "append", childArgs{DB: path, Session: "conv", Name: "a", Count: count})
	progress := make(chan int, count)
	go func() {
		defer close(progress)
		for c.lines.Scan() {
			n, _ := strconv.Atoi(c.lines.Text())
			progress <- n
		}
	}()
	appended := 0
	waitFor := func(n int) error {
		deadline := time.After(20 * time.Second)
		for appended < n {
			select {
			case v, ok := <-progress:
				if !ok {
					return fmt.Errorf("appender exited after %d", appended)
				}
				appended = v
			case <-deadline:
				return fmt.Errorf("appender blocked at %d", appended)
			}
		}
		return nil
	}
	if err := waitFor(1); err != nil {
		t.Fatal(err)
	}
	tn, err := turn.Begin(bg, db, "conv", turn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn.Add(store.Message{Role: store.RoleUser, Content: "turn ask"})
	summarized := map[string]bool{} // the appends the plan read: exactly these are compacted away
	n, err := tn.Compact(tn.Context(), func(ctx context.Context) (store.CompactRequest, error) {
		active, err := db.Conversation(ctx, "conv", store.ViewActive)
		if err != nil {
			return store.CompactRequest{}, err
		}
		for _, m := range active {
			if strings.HasPrefix(m.Content, "a ") {
				summarized[m.Content] = true
			}
		}
		// The slow summary call: the other process keeps appending, at least 10 rows past the
		// snapshot (appends are sequential, so the snapshot holds exactly the first ones).
		if err := waitFor(len(summarized) + 10); err != nil {
			return store.CompactRequest{}, err
		}
		return store.CompactRequest{Watermark: active[len(active)-1].ID, Messages: []store.Message{
			{Role: store.RoleUser, Content: "summary", Summary: true}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 1+10 {
		t.Fatalf("active count %d after compaction; 10 appends were made during the summary", n)
	}
	tn.Add(store.Message{Role: store.RoleAssistant, Content: "turn answer"})
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(count); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatal(err)
	}

	active := conversation(t, db, store.ViewActive)
	if active[0].Content != "summary" {
		t.Fatalf("active history starts with %q, not the summary", active[0].Content)
	}
	// Every append exists exactly once (archived or active).
	shown := map[string]int{}
	for _, m := range conversation(t, db, store.ViewDisplay) {
		shown[m.Content]++
	}
	for i := range count {
		if k := fmt.Sprint("a ", i); shown[k] != 1 {
			t.Fatalf("%q shown %d times", k, shown[k])
		}
	}
	// The active appends are exactly those the plan did not read, in order, after the summary.
	next := len(summarized)
	turnRows := 0
	for _, m := range active[1:] {
		switch {
		case strings.HasPrefix(m.Content, "a "):
			if want := fmt.Sprint("a ", next); m.Content != want {
				t.Fatalf("active append %q, want %q (summarized %d)", m.Content, want, len(summarized))
			}
			next++
		case m.Content == "turn answer":
			turnRows++
		default:
			t.Fatalf("active row %q survived the compaction", m.Content)
		}
	}
	if next != count {
		t.Fatalf("active appends end at %d, want %d", next, count)
	}
	for i := range len(summarized) {
		if !summarized[fmt.Sprint("a ", i)] {
			t.Fatalf("the plan's snapshot %v is not the first appends", summarized)
		}
	}
	// The ask was flushed before the plan read the history: it is summarized (archived, once);
	// the answer came after the compaction.
	if turnRows != 1 || shown["turn ask"] != 1 {
		t.Fatalf("turn answer active %d times, turn ask shown %d times", turnRows, shown["turn ask"])
	}
	// The compression lock was released.
	if ok, err := db.AcquireCompressionLock(bg, "conv", "other", time.Minute); err != nil || !ok {
		t.Fatalf("compression lock not released: %v %v", ok, err)
	}
}

// syncBuffer collects a logger's output across goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A database another process keeps locked is no lease holder to wait for: Begin fails with the
// store's *store.WriteTimeoutError once the store's write budget is spent (here 1.5 s), not
// after the lease wait (30 minutes by default; before, each attempt's busy error was retried
// for all of it, silently), and the store said what the write was waiting for. Once the lock is
// released, Begin succeeds.
func TestLockedDatabaseFailsBegin(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "spool.db")
	var log syncBuffer
	db, err := sqlite.Open(bg, path, sqlite.Options{WriteBudget: 1500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "conv"}); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "lock", childArgs{DB: path})
	if l := c.line(t); l != "held" {
		t.Fatalf("lock child said %q", l)
	}
	// A hang guard only: the verdict is the error, not the time it took.
	ctx, cancel := context.WithTimeout(bg, 3*time.Minute)
	defer cancel()
	_, err = turn.Begin(ctx, db, "conv", turn.Options{})
	var wt *store.WriteTimeoutError
	if !errors.As(err, &wt) || !errors.Is(err, store.ErrWriteTimeout) {
		t.Fatalf("Begin on a locked database: %v, want a *store.WriteTimeoutError", err)
	}
	if msg := err.Error(); strings.Count(msg, "\n") > 0 || !strings.Contains(msg, "held by another process") {
		t.Errorf("error line %q", msg)
	}
	if !strings.Contains(log.String(), "waiting for the database write lock (held by another process)") {
		t.Errorf("no notice of the wait in the log: %q", log.String())
	}
	c.send(t, "release")
	if l := c.line(t); l != "released" {
		t.Fatalf("lock child said %q", l)
	}
	tn, err := turn.Begin(ctx, db, "conv", turn.Options{})
	if err != nil {
		t.Fatalf("Begin once the lock is released: %v", err)
	}
	if err := tn.End(bg); err != nil {
		t.Fatal(err)
	}
}
