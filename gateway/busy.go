package gateway

import (
	"context"
	"sync"
	"time"
)

// slot is the in-process turn of one session: a one-place semaphore, the running turn's
// interrupt, and how many requests hold or wait for it (the slot is dropped at zero).
type slot struct {
	sem  chan struct{}
	refs int // guarded by Gateway.mu

	mu     sync.Mutex
	cancel context.CancelCauseFunc
}

func (s *slot) setCancel(c context.CancelCauseFunc) {
	s.mu.Lock()
	s.cancel = c
	s.mu.Unlock()
}

func (s *slot) interrupt() {
	s.mu.Lock()
	c := s.cancel
	s.mu.Unlock()
	if c != nil {
		c(ErrInterrupted)
	}
}

// acquire takes the session's slot under the request's busy policy.
func (g *Gateway) acquire(ctx context.Context, sessionID string, policy Busy) (*slot, error) {
	g.mu.Lock()
	s := g.slots[sessionID]
	if s == nil {
		s = &slot{sem: make(chan struct{}, 1)}
		g.slots[sessionID] = s
	}
	s.refs++
	g.mu.Unlock()

	select {
	case s.sem <- struct{}{}:
		return s, nil
	default:
	}
	busy := func() (*slot, error) {
		g.drop(sessionID, s)
		g.m.busy.WithLabelValues(string(policyName(policy))).Inc()
		return nil, &BusyError{SessionID: sessionID, RetryAfter: g.cfg.RetryAfter}
	}
	var timeout <-chan time.Time
	switch policy {
	case BusyReject:
		return busy()
	case BusyInterrupt:
		s.interrupt()
	case BusyQueue:
	default:
		if g.cfg.BusyWait <= 0 {
			return busy()
		}
		t := time.NewTimer(g.cfg.BusyWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case s.sem <- struct{}{}:
		return s, nil
	case <-timeout:
		return busy()
	case <-ctx.Done():
		g.drop(sessionID, s)
		return nil, context.Cause(ctx)
	}
}

func policyName(b Busy) Busy {
	if b == BusyWait {
		return "wait"
	}
	return b
}

// releaseSlot frees the slot a turn held.
func (g *Gateway) releaseSlot(sessionID string, s *slot) {
	s.setCancel(nil)
	<-s.sem
	g.drop(sessionID, s)
}

func (g *Gateway) drop(sessionID string, s *slot) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.refs--; s.refs == 0 && g.slots[sessionID] == s {
		delete(g.slots, sessionID)
	}
}
