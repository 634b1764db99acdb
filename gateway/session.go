package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/turn"
)

// SessionTurn is a turn on a session the caller already resolved (a chat platform's router
// maps its own keys): no history matching, no ownership check.
type SessionTurn struct {
	Principal string
	SessionID string
	Input     string
	// Busy is the in-process policy for a session whose turn is running (BusyQueue waits;
	// turns held by another process are waited for through the queue runner's lease wait).
	Busy Busy
	// OnNotice hears the agent's one-line notices (a compaction).
	OnNotice func(string)
}

// TurnSession runs one turn on st.SessionID with the gateway's slots, limits, timeout and
// drain. Unlike Turn, it waits for the turn to finish even when ctx ends first: ctx bounds only
// the wait for the slot.
func (g *Gateway) TurnSession(ctx context.Context, st SessionTurn, sink Sink) (Reply, error) {
	if st.SessionID == "" {
		return Reply{}, badRequest("session", "no session")
	}
	if strings.TrimSpace(st.Input) == "" {
		return Reply{}, badRequest("messages", "the message is empty")
	}
	release, err := g.admit(st.Principal)
	if err != nil {
		return Reply{}, err
	}
	defer release()
	sl, err := g.acquire(ctx, st.SessionID, st.Busy)
	if err != nil {
		return Reply{SessionID: st.SessionID}, err
	}
	g.mu.Lock()
	if g.draining {
		g.mu.Unlock()
		g.releaseSlot(st.SessionID, sl)
		return Reply{SessionID: st.SessionID}, ErrDraining
	}
	g.turns.Add(1)
	g.mu.Unlock()
	defer g.turns.Done()
	defer g.releaseSlot(st.SessionID, sl)

	tctx, cancel := context.WithTimeoutCause(g.turnCtx, g.cfg.TurnTimeout, fmt.Errorf("turn exceeded serve.turn_timeout %s", g.cfg.TurnTimeout))
	defer cancel()
	icx, interrupt := context.WithCancelCause(tctx)
	defer interrupt(nil)
	sl.setCancel(interrupt)
	guard := &guarded{s: sink}
	runner := g.run
	if st.Busy == BusyQueue || st.Busy == BusyInterrupt {
		runner = g.queue
	}
	start := time.Now()
	guard.start(st.SessionID)
	// The principal's own tools only (serve.tools), as for API turns.
	res, err := runner.Run(icx, st.SessionID, st.Input, agent.RunOptions{OnDelta: guard.delta, OnNotice: st.OnNotice,
		RestrictTools: true, AllowTools: g.cfg.Tools[st.Principal]})
	err = g.classify(st.SessionID, err)
	g.m.observeTurn(res, err, time.Since(start))
	r := Reply{SessionID: st.SessionID, Result: res}
	if res.SessionID != "" {
		r.SessionID = res.SessionID
	}
	if sink.OnDone != nil {
		sink.OnDone(r, err)
	}
	return r, err
}

// CompactSession compacts a session now (a /compress), with focus as the summary's topic. It
// waits for the session's running turn (in process) first.
func (g *Gateway) CompactSession(ctx context.Context, sessionID, focus string) (agent.Result, error) {
	c, ok := g.run.(Compactor)
	if !ok {
		return agent.Result{}, ErrNoCompaction
	}
	sl, err := g.acquire(ctx, sessionID, BusyQueue)
	if err != nil {
		return agent.Result{}, err
	}
	defer g.releaseSlot(sessionID, sl)
	var notices []string
	res, err := c.Compact(context.WithoutCancel(ctx), sessionID, focus, agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
	g.m.compactions.Add(float64(res.Compactions))
	if err != nil {
		return res, g.classify(sessionID, err)
	}
	if res.Compactions == 0 {
		return res, fmt.Errorf("nothing to compact: %s", strings.Join(notices, "; "))
	}
	return res, nil
}

// EditHistory runs fn, an edit of a session's history outside a turn (a chat's /undo, taking
// back a turn a crash cut short), while holding the session's in-process slot (waiting for its
// running turn here) and then its conversation's turn lease, as DeleteItem does: fn's writes
// carry the lease's fence f, so a store refuses them once another holder took the lease. A
// turn of another process is waited for no longer than Config.BusyWait; then the answer is a
// *BusyError and fn does not run.
func (g *Gateway) EditHistory(ctx context.Context, sessionID string, fn func(ctx context.Context, f store.Fence) error) error {
	sl, err := g.acquire(ctx, sessionID, BusyQueue)
	if err != nil {
		return err
	}
	defer g.releaseSlot(sessionID, sl)
	return g.fenced(ctx, sessionID, fn)
}

// fenced runs fn holding the turn lease of sessionID's conversation, fn's writes fenced by it,
// waiting for another process's turn no longer than Config.BusyWait (then *BusyError).
func (g *Gateway) fenced(ctx context.Context, sessionID string, fn func(ctx context.Context, f store.Fence) error) error {
	// A lease wait of 0 would mean turn's default, so the smallest wait stands for "at once".
	wait := max(g.cfg.BusyWait, time.Nanosecond)
	err := turn.Run(ctx, g.st, sessionID, turn.Options{Wait: wait}, func(tctx context.Context, t *turn.Turn) error {
		return fn(tctx, t.Fence())
	})
	return g.classify(sessionID, err)
}
