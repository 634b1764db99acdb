package compress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/spoolhq/spool/provider"
)

// FailureClass groups summary-call failures by what the failure policy does.
type FailureClass string

// Failure classes.
const (
	FailNoProvider FailureClass = "no_provider" // no summariser configured: fallback, 600 s cooldown
	FailAuth       FailureClass = "auth"        // abort, history untouched
	FailQuota      FailureClass = "quota"       // abort
	FailNetwork    FailureClass = "network"     // abort
	FailOverloaded FailureClass = "overloaded"  // abort
	FailTimeout    FailureClass = "timeout"     // fallback, 60 → 300 → 900 s
	FailDecode     FailureClass = "decode"      // bad JSON or stream closed early: fallback, 30 s
	FailEmpty      FailureClass = "empty"       // empty summary: fallback, 60 s
	FailOther      FailureClass = "other"       // fallback, 60 s
)

// ErrNoSummarizer is returned by a Summarizer that has no provider behind it.
var ErrNoSummarizer = errors.New("no summary provider configured")

// Aborts reports whether a failure of class c must leave the history untouched.
func (c FailureClass) Aborts() bool {
	switch c {
	case FailAuth, FailQuota, FailNetwork, FailOverloaded:
		return true
	}
	return false
}

var timeoutLadder = []time.Duration{60 * time.Second, 300 * time.Second, 900 * time.Second}

// cooldown is the pause after a failure of class c; strikes counts consecutive timeouts
// including this one.
func (c FailureClass) cooldown(strikes int) time.Duration {
	switch c {
	case FailNoProvider:
		return 600 * time.Second
	case FailTimeout:
		return timeoutLadder[min(max(strikes, 1), len(timeoutLadder))-1]
	case FailDecode:
		return 30 * time.Second
	}
	return 60 * time.Second
}

// Classify maps a summary-call error to its failure class. Provider errors are classified by
// provider.ClassOf (and the HTTP status where the reference distinguishes it); other errors by
// their type and, last, by well-known message markers.
func Classify(err error) FailureClass {
	if err == nil {
		return ""
	}
	if errors.Is(err, ErrNoSummarizer) {
		return FailNoProvider
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		switch pe.StatusCode {
		case 401, 402, 403:
			if pe.Class != provider.ClassRateLimit {
				return FailAuth
			}
		case 408, 429, 502, 504:
			return FailTimeout
		case 529:
			return FailOverloaded
		}
		switch pe.Class {
		case provider.ClassAuth:
			return FailAuth
		case provider.ClassQuota:
			return FailQuota
		case provider.ClassNetwork:
			return FailNetwork
		case provider.ClassOverloaded:
			return FailOverloaded
		case provider.ClassTimeout, provider.ClassRateLimit:
			return FailTimeout
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return FailTimeout
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) || errors.Is(err, io.ErrUnexpectedEOF) {
		return FailDecode
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return FailNetwork
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return FailTimeout
		}
		return FailNetwork
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return FailNetwork
	}
	msg := strings.ToLower(err.Error())
	switch {
	case containsAny(msg, "insufficient_quota", "quota exceeded", "out of credits", "billing"):
		return FailQuota
	case containsAny(msg, "overloaded", "at capacity"):
		return FailOverloaded
	case containsAny(msg, "invalid api key", "unauthorized", "missing credential", "no api key"):
		return FailAuth
	case containsAny(msg, "timeout", "timed out"):
		return FailTimeout
	case containsAny(msg, "json", "stream closed", "premature", "unexpected eof"):
		return FailDecode
	case containsAny(msg, "connection refused", "connection reset", "no such host", "network is unreachable",
		"peer closed connection", "closed connection", "connection closed", "broken pipe", "host is unreachable"),
		msg == "eof", strings.HasSuffix(msg, ": eof"):
		return FailNetwork
	}
	return FailOther
}

// AbortError is returned by Compress when the summary failed in a way that must leave the
// history untouched (or abort_on_summary_failure is set). No plan is returned.
type AbortError struct {
	Class    FailureClass
	Cooldown time.Duration
	Err      error
}

func (e *AbortError) Error() string {
	return fmt.Sprintf("compaction aborted, history unchanged: summary failed (%s, automatic compaction paused %s): %v", e.Class, e.Cooldown, e.Err)
}

func (e *AbortError) Unwrap() error { return e.Err }

// ErrNothingToCompress means the history has no middle worth summarising; it counts as an
// ineffective compaction. Compress returns it as a *NothingError saying why.
var ErrNothingToCompress = errors.New("nothing to compress: history too short for a head, a middle and a tail")

// NothingError is ErrNothingToCompress with its reason, in words for the person who asked.
type NothingError struct{ Reason string }

func (e *NothingError) Error() string { return "nothing to compact: " + e.Reason }

// Is makes errors.Is(err, ErrNothingToCompress) hold.
func (e *NothingError) Is(target error) bool { return target == ErrNothingToCompress }

func nothing(format string, args ...any) error {
	return &NothingError{Reason: fmt.Sprintf(format, args...)}
}
