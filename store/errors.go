package store

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors callers branch on with errors.Is. Backends wrap them with context.
var (
	ErrNotFound      = errors.New("not found")
	ErrExists        = errors.New("already exists")
	ErrInvalid       = errors.New("invalid input")
	ErrTitleInUse    = errors.New("title already in use")
	ErrSessionClosed = errors.New("session ended by compression")
	// ErrSessionEnded refuses to continue a session that was ended deliberately (a reset, /new).
	ErrSessionEnded    = errors.New("session ended deliberately")
	ErrCompressionBusy = errors.New("compression lock not held")
	ErrBusy            = errors.New("database busy")
	// ErrWriteTimeout: a write waited its whole budget for a lock another process or
	// transaction holds (or for the database server) and gave up; nothing of it landed.
	// errors.Is(err, ErrBusy) is true of it too.
	ErrWriteTimeout = errors.New("database write timed out")
	// ErrReadOnly: the store was opened on a database this process cannot write (read-only
	// file, directory or filesystem); reads work, writes fail with it before touching anything.
	ErrReadOnly = errors.New("database is read-only")
	// ErrDamaged: the database file is corrupt; nothing more is written to it.
	ErrDamaged = errors.New("database is damaged (run 'spool db check')")
)

// DamagedError says which database is damaged and how the engine noticed (errors.Is(err,
// ErrDamaged)). The first one a store returns carries the engine's cause; the store writes
// nothing more after it.
type DamagedError struct {
	Path  string
	Cause string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%s is damaged (%s); nothing more is written to it: run 'spool db check'", e.Path, e.Cause)
}

func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

// WriteTimeoutError is a write that gave up after waiting Waited for what For names (the
// SQLite write lock another process holds, a row another PostgreSQL transaction holds, the
// server). Cause is the engine's last word, kept for errors.As and logs; Error says it in one
// sentence with For, not as a second error appended to the first.
type WriteTimeoutError struct {
	For    string
	Waited time.Duration
	Cause  error
}

func (e *WriteTimeoutError) Error() string {
	return fmt.Sprintf("gave up on a database write after waiting %s for %s", e.Waited.Round(100*time.Millisecond), e.For)
}

// Is makes errors.Is(err, ErrWriteTimeout) and errors.Is(err, ErrBusy) true.
func (e *WriteTimeoutError) Is(target error) bool {
	return target == ErrWriteTimeout || target == ErrBusy
}

// Unwrap exposes the engine's error.
func (e *WriteTimeoutError) Unwrap() error { return e.Cause }

// WaitNoticeAfter is how long a write waits for a lock before the store says what it waits for
// (one warning through its logger, once per write).
const WaitNoticeAfter = time.Second

// AmbiguousError is returned when a session reference matches more than one session.
type AmbiguousError struct {
	Ref     string
	Matches []string
}

func (e *AmbiguousError) Error() string {
	shown := e.Matches
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(e.Matches) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(e.Matches)-len(shown))
	}
	return fmt.Sprintf("%q is ambiguous: matches %s%s", e.Ref, strings.Join(shown, ", "), more)
}

// TitleInUseError names the session that already holds a title.
type TitleInUseError struct {
	Title     string
	SessionID string
}

func (e *TitleInUseError) Error() string {
	return fmt.Sprintf("title %q is already in use by session %s", e.Title, e.SessionID)
}

// Is makes errors.Is(err, ErrTitleInUse) true.
func (e *TitleInUseError) Is(target error) bool { return target == ErrTitleInUse }

// InvalidError describes bad input: which field and why.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalid returns an InvalidError.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
