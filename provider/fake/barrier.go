package fake

import (
	"context"
	"sync"
)

// barrier is a WAIT directive's meeting point: every call that names it holds its answer until
// n calls have arrived (or its context ends). Later arrivals pass at once.
type barrier struct {
	n       int // 0 until the first call arrives
	mu      sync.Mutex
	arrived int
	open    chan struct{} // closed when arrived reaches n
	changed chan struct{} // closed and replaced on every arrival
}

// arrive counts one call at the barrier name (created for n calls on first use) and returns it.
// It is called with m.mu held.
func (m *Model) arrive(name string, n int) *barrier {
	b := m.bars[name]
	if b == nil {
		b = &barrier{n: n, open: make(chan struct{}), changed: make(chan struct{})}
		m.bars[name] = b
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 { // made by AwaitBarrier before any call arrived
		b.n = n
	}
	b.arrived++
	if b.arrived == b.n {
		close(b.open)
	}
	close(b.changed)
	b.changed = make(chan struct{})
	return b
}

// hold waits at the call's barrier, if any, then for the call's delay.
func (r result) hold(ctx context.Context) error {
	if r.wait != nil {
		select {
		case <-r.wait.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return sleep(ctx, r.delay)
}

// AwaitBarrier blocks until at least n calls have arrived at the WAIT barrier name, or ctx ends.
// A test uses it to know that calls are in flight (held at the barrier) without watching a
// clock: for example to cancel a turn while its model call is certainly under way.
func (m *Model) AwaitBarrier(ctx context.Context, name string, n int) error {
	for {
		m.mu.Lock()
		b := m.bars[name]
		if b == nil {
			b = &barrier{open: make(chan struct{}), changed: make(chan struct{})}
			m.bars[name] = b
		}
		m.mu.Unlock()
		b.mu.Lock()
		arrived, changed := b.arrived, b.changed
		b.mu.Unlock()
		if arrived >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
