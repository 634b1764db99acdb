package gateway

import (
	"errors"
	"fmt"
	"time"
)

// Errors the HTTP layer maps to statuses with errors.Is / errors.As.
var (
	// ErrNotFound: no such session for this principal (another principal's is reported so too).
	ErrNotFound = errors.New("not found")
	// ErrDraining: the server is shutting down and starts no new turns.
	ErrDraining = errors.New("server is shutting down")
	// ErrInterrupted is the cause a turn is cancelled with by an "interrupt" request.
	ErrInterrupted = errors.New("interrupted by a newer request for this session")
)

// BadRequestError is a request the gateway cannot act on; Param names the field.
type BadRequestError struct {
	Param  string
	Reason string
}

func (e *BadRequestError) Error() string { return e.Reason }

func badRequest(param, format string, args ...any) error {
	return &BadRequestError{Param: param, Reason: fmt.Sprintf(format, args...)}
}

// BusyError: the session's turn is running and the policy said not to wait (longer).
type BusyError struct {
	SessionID  string
	RetryAfter time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %s is busy: another turn is running; retry after %s", e.SessionID, e.RetryAfter)
}

// LimitError: the principal has too many requests running.
type LimitError struct {
	Principal string
	Limit     int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("too many concurrent requests for this key (limit %d)", e.Limit)
}

// IdempotencyConflictError: the key was used before with another request body.
type IdempotencyConflictError struct{ Key string }

func (e *IdempotencyConflictError) Error() string {
	return fmt.Sprintf("Idempotency-Key %q was already used with a different request body", e.Key)
}
