//go:build linux

package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spoolhq/spool/store"
)

var _ store.LeaseWatcher = (*DB)(nil)

// WatchLease implements store.LeaseWatcher with inotify on the conversation's bell file: a
// release in any process on this host wakes the waiter at once.
func (db *DB) WatchLease(conversationID string) (store.LeaseWatch, error) {
	if db.mem != nil {
		return db.mem.watch(conversationID), nil
	}
	p := db.leaseBell(conversationID)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("watch lease: %w", err)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("watch lease: %w", err)
	}
	f.Close()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("watch lease: inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, p, unix.IN_CLOSE_WRITE|unix.IN_MODIFY|unix.IN_ATTRIB); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch lease: inotify: %w", err)
	}
	return &inotifyWatch{fd: fd}, nil
}

type inotifyWatch struct{ fd int }

// ctxSlice bounds one blocking poll so a cancelled context is noticed promptly.
const ctxSlice = 50 * time.Millisecond

func (w *inotifyWatch) Wait(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	buf := make([]byte, 4096)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rest := time.Until(deadline)
		if rest <= 0 {
			return nil
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(min(rest, ctxSlice)/time.Millisecond)+1)
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("wait for lease: %w", err)
		}
		if n > 0 {
			for { // drain: one wake-up per batch of events
				if _, err := unix.Read(w.fd, buf); err != nil {
					break
				}
			}
			return nil
		}
	}
}

func (w *inotifyWatch) Close() error { return unix.Close(w.fd) }
