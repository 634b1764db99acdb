package simclock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Clock runs paced calls on a virtual clock, one event at a time: a sleep ends when the driver
// moves the clock past it, and the driver moves on only when every call is asleep or done.
type Clock struct {
	mu     sync.Mutex
	cond   *sync.Cond
	t      time.Time
	active int
	wakes  []*wake
}

type wake struct {
	at time.Time
	ch chan struct{}
}

// New is a clock at t0.
func New(t0 time.Time) *Clock {
	s := &Clock{t: t0}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Now is the virtual time.
func (s *Clock) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t
}

// Sleep waits until the clock is advanced past d from now; it returns ctx.Err() then.
func (s *Clock) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	w := &wake{at: s.t.Add(d), ch: make(chan struct{})}
	s.wakes = append(s.wakes, w)
	s.active--
	s.cond.Broadcast()
	s.mu.Unlock()
	<-w.ch
	return ctx.Err()
}

// Start runs f as a call; it returns the virtual time f returned at, once it did.
func (s *Clock) Start(f func()) func() time.Time {
	var done time.Time
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	go func() {
		f()
		s.mu.Lock()
		done = s.t
		s.active--
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	return func() time.Time {
		s.mu.Lock()
		defer s.mu.Unlock()
		return done
	}
}

// Advance runs every sleep that ends by to, in time order, and leaves the clock at to.
func (s *Clock) Advance(to time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.active > 0 {
			s.cond.Wait()
		}
		i := -1
		for j, w := range s.wakes {
			if !w.at.After(to) && (i < 0 || w.at.Before(s.wakes[i].at)) {
				i = j
			}
		}
		if i < 0 {
			s.t = later(s.t, to)
			return
		}
		w := s.wakes[i]
		s.wakes = slices.Delete(s.wakes, i, i+1)
		s.t = later(s.t, w.at)
		s.active++
		close(w.ch)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
