package provider

import (
	"errors"
	"fmt"
	"time"
)

// Class groups provider failures by what a caller should do about them.
type Class string

// Error classes.
const (
	ClassAuth          Class = "auth"            // bad or missing credentials: abort
	ClassQuota         Class = "quota"           // out of credits: abort
	ClassRateLimit     Class = "rate_limit"      // retry after a pause
	ClassOverloaded    Class = "overloaded"      // provider at capacity: retry, then abort
	ClassNetwork       Class = "network"         // connection failed or cut
	ClassTimeout       Class = "timeout"         // no answer in time
	ClassContextLength Class = "context_length"  // prompt too long: compress
	ClassBadRequest    Class = "bad_request"     // the request is wrong: do not retry
	ClassServer        Class = "server"          // 5xx without a more specific class
	ClassModelNotFound Class = "model_not_found" // the endpoint does not serve this model: do not retry
	ClassUnknown       Class = "unknown"
)

// Retryable reports whether a call failing with c may succeed if sent again unchanged.
func (c Class) Retryable() bool {
	switch c {
	case ClassRateLimit, ClassOverloaded, ClassNetwork, ClassTimeout, ClassServer:
		return true
	}
	return false
}

// Fallback reports whether a call failing with c (after WithRetry's retries, for the retryable
// classes) should move to a fallback model: the failure will not clear by sending the same call
// to the same endpoint again soon. Auth does not fall back: a bad or revoked key is a
// configuration mistake the user must see, and moving on silently would hide it while billing
// another account. Context length is compaction's business, a bad request would be refused by
// any model, and an unknown failure (a cancelled call among them) is not a provider's fault.
func (c Class) Fallback() bool {
	switch c {
	case ClassOverloaded, ClassServer, ClassQuota, ClassModelNotFound, ClassRateLimit, ClassNetwork, ClassTimeout:
		return true
	}
	return false
}

// ErrNoCompaction: the client's provider does not compact conversations itself (Compactor).
var ErrNoCompaction = errors.New("the provider offers no compaction of its own")

// Error is a classified provider failure.
type Error struct {
	Class      Class
	Provider   string
	StatusCode int           // 0 when no HTTP response arrived
	Message    string        // the provider's own message, when it gave one
	RetryAfter time.Duration // from Retry-After, when sent
	Err        error         // underlying transport error, if any
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d): %s", e.Provider, e.Class, e.StatusCode, msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Provider, e.Class, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err, ClassUnknown for unclassified errors.
func ClassOf(err error) Class {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Class
	}
	return ClassUnknown
}
