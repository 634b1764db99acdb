//go:build linux

package sqlite

import (
	"context"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// writeGate queues this host's spool writers of one database on a kernel lock (flock on
// <db>-writer), taken before BEGIN IMMEDIATE. SQLite's own lock has no queue: a writer that finds
// it taken can only sleep and retry, and under steady contention an unlucky process keeps waking
// up just after someone else took the lock again. A writer blocked in flock is woken the moment
// the lock is free. The gate only orders spool's writers; correctness still rests on SQLite's
// locking, and the busy retry still covers other processes.
type writeGate struct {
	sem chan struct{} // one goroutine of this process at a time holds or waits for the flock
	// mu guards f against close: a writer still leaving the gate (its unlock) must not race a
	// Close of the handle, nor unlock a descriptor number the process has reused since.
	mu     sync.RWMutex
	f      *os.File
	closed bool
}

func openWriteGate(dbPath string) (*writeGate, error) {
	f, err := os.OpenFile(dbPath+"-writer", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open write gate: %w", err)
	}
	return &writeGate{f: f, sem: make(chan struct{}, 1)}, nil
}

// enter waits for the gate or ctx. On success the caller must call exit.
func (g *writeGate) enter(ctx context.Context) error {
	if g == nil {
		return nil // read-only handle: no writes to order
	}
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		<-g.sem
		return fmt.Errorf("write gate: %w", os.ErrClosed)
	}
	fd := int(g.f.Fd())
	g.mu.RUnlock()
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
		return nil
	}
	got := make(chan error, 1)
	go func() { got <- flockRetry(fd) }()
	select {
	case err := <-got:
		if err != nil {
			<-g.sem
			return fmt.Errorf("write gate: %w", err)
		}
		return nil
	case <-ctx.Done():
		// The waiting goroutine owns the semaphore now: once it gets the lock it lets go of both.
		go func() {
			if <-got == nil {
				_ = unix.Flock(fd, unix.LOCK_UN)
			}
			<-g.sem
		}()
		return ctx.Err()
	}
}

func flockRetry(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func (g *writeGate) exit() {
	if g == nil {
		return
	}
	g.mu.RLock()
	if !g.closed {
		_ = unix.Flock(int(g.f.Fd()), unix.LOCK_UN)
	}
	g.mu.RUnlock()
	<-g.sem
}

func (g *writeGate) close() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return g.f.Close()
}
