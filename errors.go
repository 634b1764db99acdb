package spool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// Class says what kind of failure an Error is, for a program to decide what to do.
type Class string

// Error classes.
const (
	ClassNotFound  Class = "not_found"  // no such session (or message)
	ClassInvalid   Class = "invalid"    // bad input: an empty message, a title in use, a bad DSN
	ClassBusy      Class = "busy"       // another turn holds the session (its lease); try again later
	ClassClosed    Class = "closed"     // the session was ended (by compaction rotation or on purpose)
	ClassProvider  Class = "provider"   // the model's API failed; ProviderClass says how
	ClassNoCompact Class = "no_compact" // nothing to compact, or compaction is disabled
	ClassStorage   Class = "storage"    // the database failed: busy past the write budget, read-only, damaged
	ClassCanceled  Class = "canceled"   // the context ended
	ClassInternal  Class = "internal"   // anything else
)

// Error is every error this package returns: what was being done, on which session, the
// class, and the cause (errors.Is and errors.As see through it to the store's and the
// provider's errors).
type Error struct {
	Op        string // "append", "run", "compact", ...
	SessionID string // "" when no session is concerned
	Class     Class
	// ProviderClass is the model API's failure class (rate_limit, auth, context_length, ...)
	// when Class is ClassProvider.
	ProviderClass provider.Class
	// RetryAfter, for ClassBusy, is how long the holder's lease still runs.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	s := "spool: " + e.Op
	if e.SessionID != "" {
		s += " " + e.SessionID
	}
	return fmt.Sprintf("%s: %s: %v", s, e.Class, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

var errEmptyDSN = errors.New("empty DSN: give a file path, a postgres:// URL or \":memory:\"")

func newError(op, session string, c Class, err error) *Error {
	return &Error{Op: op, SessionID: session, Class: c, Err: err}
}

// wrap classifies err (nil stays nil; an *Error keeps its class).
func wrap(op, session string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	e = newError(op, session, classOf(err), err)
	if e.Class == ClassProvider {
		e.ProviderClass = provider.ClassOf(err)
	}
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		e.RetryAfter = max(0, time.Until(held.ExpiresAt))
	}
	return e
}

func classOf(err error) Class {
	var pe *provider.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ClassCanceled
	case errors.As(err, &pe):
		return ClassProvider
	case isNotFound(err):
		return ClassNotFound
	case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrCompressionBusy):
		return ClassBusy
	case errors.Is(err, store.ErrSessionClosed), errors.Is(err, store.ErrSessionEnded):
		return ClassClosed
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrTitleInUse), errors.Is(err, store.ErrExists),
		errors.Is(err, agent.ErrEmptyInput), errors.Is(err, agent.ErrToolResult):
		return ClassInvalid
	case errors.Is(err, compress.ErrNothingToCompress), errors.Is(err, agent.ErrCompressionDisabled):
		return ClassNoCompact
	case errors.Is(err, store.ErrBusy), errors.Is(err, store.ErrWriteTimeout), errors.Is(err, store.ErrReadOnly),
		errors.Is(err, store.ErrDamaged), errors.Is(err, store.ErrLeaseLost):
		return ClassStorage
	}
	return ClassInternal
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
