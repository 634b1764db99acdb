package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/spoolhq/spool/gateway"
)

// apiError is OpenAI's error object.
type apiError struct {
	Status int               `json:"-"`
	Header map[string]string `json:"-"`
	Msg    string            `json:"message"`
	Type   string            `json:"type"`
	Param  *string           `json:"param"`
	Code   *string           `json:"code"`
}

func (e *apiError) Error() string { return e.Msg }

func newError(status int, typ, code, msg string) *apiError {
	e := &apiError{Status: status, Type: typ, Msg: msg, Header: map[string]string{}}
	if code != "" {
		e.Code = &code
	}
	return e
}

func (e *apiError) param(p string) *apiError {
	if p != "" {
		e.Param = &p
	}
	return e
}

// noRetry marks an error no retry can fix, so the SDKs do not retry it (they retry 409 and 5xx).
func (e *apiError) noRetry() *apiError {
	e.Header["x-should-retry"] = "false"
	return e
}

func (e *apiError) retryAfter(d time.Duration) *apiError {
	e.Header["Retry-After"] = strconv.Itoa(int(math.Ceil(d.Seconds())))
	e.Header["retry-after-ms"] = strconv.FormatInt(d.Milliseconds(), 10)
	return e
}

// errorOf maps a gateway or turn error to its HTTP answer.
func errorOf(err error) *apiError {
	var ae *apiError
	var bad *gateway.BadRequestError
	var busy *gateway.BusyError
	var lim *gateway.LimitError
	var conflict *gateway.IdempotencyConflictError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &tooBig):
		return newError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
			fmt.Sprintf("request body is larger than serve.max_request_bytes (%d bytes)", tooBig.Limit)).noRetry()
	case errors.As(err, &bad):
		return newError(http.StatusBadRequest, "invalid_request_error", "invalid_value", bad.Reason).param(bad.Param).noRetry()
	case errors.As(err, &busy):
		return newError(http.StatusConflict, "conflict_error", "session_busy", busy.Error()).retryAfter(busy.RetryAfter)
	case errors.As(err, &lim):
		return newError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded", lim.Error()).retryAfter(time.Second)
	case errors.As(err, &conflict):
		return newError(http.StatusConflict, "invalid_request_error", "idempotency_key_conflict", conflict.Error()).noRetry()
	case errors.Is(err, gateway.ErrNoCompaction):
		return newError(http.StatusBadRequest, "invalid_request_error", "compaction_unavailable", err.Error()).noRetry()
	case errors.Is(err, gateway.ErrNotFound):
		return newError(http.StatusNotFound, "invalid_request_error", "not_found", err.Error()).noRetry()
	case errors.Is(err, gateway.ErrDraining):
		return newError(http.StatusServiceUnavailable, "server_error", "shutting_down", "the server is shutting down; retry on another replica or after the restart").retryAfter(time.Second)
	case errors.Is(err, context.DeadlineExceeded):
		return newError(http.StatusGatewayTimeout, "server_error", "timeout", err.Error()).noRetry()
	}
	// A failed turn: the user message is stored, so a blind retry would say it twice.
	return newError(http.StatusBadGateway, "server_error", "turn_failed", err.Error()).noRetry()
}

// writeError sends e as OpenAI's error JSON.
func writeError(w http.ResponseWriter, e *apiError) {
	for k, v := range e.Header {
		w.Header().Set(k, v)
	}
	writeJSON(w, e.Status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encode response","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
