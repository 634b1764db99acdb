package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ClassifyHTTP turns a failed HTTP exchange (status >= 400) into a classified *Error. It reads
// the error shapes of OpenAI and compatible servers ({"error":{...}}, vLLM's {"object":"error"},
// Ollama's {"error":"text"}), of Anthropic ({"type":"error","error":{...}}) and plain text bodies
// from proxies. Status 0 classifies an error event that arrived inside a 200 stream.
func ClassifyHTTP(providerName string, status int, header http.Header, body []byte) *Error {
	errType, code, msg := parseErrorBody(body)
	e := &Error{
		Provider:   providerName,
		StatusCode: status,
		Message:    msg,
		Class:      classOf(status, errType, code, msg),
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(http.StatusText(status))
	}
	e.RetryAfter = ParseRetryAfter(header, time.Now())
	if e.RetryAfter == 0 && e.Class == ClassRateLimit {
		e.RetryAfter = retryHintInMessage(msg)
	}
	return e
}

// ClassifyTransport classifies an error that happened while sending a request or reading its
// response: a deadline is a timeout, a cancelled context stays unclassified (the caller gave
// up; retrying would be wrong), anything else on the wire is a network failure.
func ClassifyTransport(providerName string, err error) *Error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	e := &Error{Provider: providerName, Err: err, Class: ClassNetwork}
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		e.Class = ClassUnknown
	case errors.Is(err, context.DeadlineExceeded):
		e.Class = ClassTimeout
	case errors.As(err, &ne) && ne.Timeout():
		e.Class = ClassTimeout
	}
	return e
}

// StreamCut is the error for a stream that ended before the provider said it was complete.
func StreamCut(providerName string, cause error) *Error {
	msg := "stream ended before the response was complete"
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &Error{Provider: providerName, Class: ClassNetwork, Message: msg, Err: cause}
}

// ParseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an HTTP date).
// It returns 0 when neither is present or usable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// retryHint matches OpenAI's "Please try again in 84ms" / "in 1.5s" inside 429 messages.
var retryHint = regexp.MustCompile(`(?i)try again in (\d+(?:\.\d+)?)\s*(ms|s)\b`)

func retryHintInMessage(msg string) time.Duration {
	m := retryHint.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	if strings.EqualFold(m[2], "ms") {
		return time.Duration(n * float64(time.Millisecond))
	}
	return time.Duration(n * float64(time.Second))
}

// errorEnvelope covers the error bodies of every supported server.
type errorEnvelope struct {
	Error   json.RawMessage `json:"error"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	Detail  string          `json:"detail"`
}

type errorDetail struct {
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// parseErrorBody extracts the error type, code and message; a body that is not JSON becomes the
// message itself (trimmed and cut short: proxies send whole HTML pages).
func parseErrorBody(body []byte) (errType, code, msg string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return "", "", ""
	}
	var env errorEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		return "", "", shorten(string(body), 300)
	}
	errType, code, msg = env.Type, rawString(env.Code), env.Message
	if msg == "" {
		msg = env.Detail
	}
	if len(env.Error) > 0 {
		var d errorDetail
		var s string
		switch {
		case json.Unmarshal(env.Error, &d) == nil:
			if d.Type != "" {
				errType = d.Type
			}
			if c := rawString(d.Code); c != "" {
				code = c
			}
			if d.Message != "" {
				msg = d.Message
			}
		case json.Unmarshal(env.Error, &s) == nil:
			msg = s
		}
	}
	return errType, code, msg
}

// rawString renders a JSON string or number code as text.
func rawString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var (
	quotaMarkers = []string{
		"insufficient_quota", "exceeded your current quota", "quota exceeded", "out of credits",
		"credit balance is too low", "insufficient credits", "insufficient_credits", "billing_error",
		"payment required",
	}
	contextMarkers = []string{
		"context_length_exceeded", "prompt is too long", "maximum context length",
		"context length", "context window", "exceed_context_size", "too many tokens",
		"input is too long", "reduce the length of the messages", "request_too_large",
		"exceed context limit",
	}
	overloadMarkers = []string{"overloaded", "at capacity"}
	authTypes       = []string{"authentication_error", "permission_error", "invalid_api_key"}
)

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func classOf(status int, errType, code, msg string) Class {
	hay := strings.ToLower(errType + " " + code + " " + msg)
	clientSide := status == 0 || (status >= 400 && status < 500)
	switch {
	case status == http.StatusPaymentRequired, clientSide && containsAny(hay, quotaMarkers):
		return ClassQuota
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		clientSide && containsAny(hay, authTypes):
		return ClassAuth
	case status == http.StatusRequestEntityTooLarge, clientSide && containsAny(hay, contextMarkers):
		return ClassContextLength
	case status == 529, containsAny(hay, overloadMarkers):
		return ClassOverloaded
	case status == http.StatusTooManyRequests, status == 0 && strings.Contains(hay, "rate_limit"):
		return ClassRateLimit
	case clientSide && (code == "model_not_found" || status == http.StatusNotFound && strings.Contains(hay, "model")):
		return ClassModelNotFound
	case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		return ClassTimeout
	case status >= 500, status == 0 && (strings.Contains(hay, "api_error") || strings.Contains(hay, "server_error")):
		return ClassServer
	case status >= 400:
		return ClassBadRequest
	}
	return ClassUnknown
}
