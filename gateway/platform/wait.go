package platform

import (
	"context"
	"maps"
	"sync"
	"time"
)

// Sleeper waits d or until ctx ends. Adapters take one so that tests can honour a platform's
// retry_after (30 s, an hour) without waiting for it.
type Sleeper func(ctx context.Context, d time.Duration) error

// Sleep is the real Sleeper.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Counters counts an adapter's events by name (received, rejected, reconnects ...); the zero
// value is ready and safe for concurrent use.
type Counters struct {
	mu sync.Mutex
	m  map[string]int64
}

// Add counts one k.
func (c *Counters) Add(k string) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[k]++
	c.mu.Unlock()
}

// Snapshot returns a copy of the counts.
func (c *Counters) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	maps.Copy(out, c.m)
	return out
}
