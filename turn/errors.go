package turn

import (
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

// Errors callers branch on with errors.Is.
var (
	// ErrWaitTimeout: another holder kept the lease for longer than Options.Wait.
	ErrWaitTimeout = errors.New("timed out waiting for the session turn lease")
	// ErrEnded: the turn has ended; nothing more can be flushed through it.
	ErrEnded = errors.New("turn ended")
)

// WaitTimeoutError names the holder that kept the lease for the whole wait.
type WaitTimeoutError struct {
	SessionID string
	Holder    string
	Waited    time.Duration
}

func (e *WaitTimeoutError) Error() string {
	return fmt.Sprintf("session %s is busy: waited %s for the turn lease held by %s", e.SessionID,
		e.Waited.Round(time.Millisecond), e.Holder)
}

// Is makes errors.Is(err, ErrWaitTimeout) true.
func (e *WaitTimeoutError) Is(target error) bool { return target == ErrWaitTimeout }

// LeaseLostError is the cause of a turn context cancelled because the lease is no longer ours:
// another holder took it, or it could not be renewed. errors.Is(err, store.ErrLeaseLost) is true,
// and Err (when set) is the renewal or write error that revealed it.
type LeaseLostError struct {
	ConversationID string
	Generation     int64
	// Refresh is true when renewal failed with an error other than a proven loss: the lease
	// may still be ours, but we can no longer vouch for it.
	Refresh bool
	Err     error
}

func (e *LeaseLostError) Error() string {
	msg := "session turn lease lost; stopping to protect the transcript"
	if e.Refresh {
		msg = "session turn lease could not be refreshed; stopping to protect the transcript"
	}
	msg += fmt.Sprintf(" (conversation %s, generation %d)", e.ConversationID, e.Generation)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes store.ErrLeaseLost and the underlying error.
func (e *LeaseLostError) Unwrap() []error {
	if e.Err == nil {
		return []error{store.ErrLeaseLost}
	}
	return []error{store.ErrLeaseLost, e.Err}
}
