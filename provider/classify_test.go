package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// Bodies here are synthetic shapes; the recorded provider bodies are exercised through the real
// adapters in provider/openai and provider/anthropic.
func TestClassifyHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   Class
		msg    string
	}{
		{"401", 401, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`, ClassAuth, "bad key"},
		{"403 permission", 403, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, ClassAuth, "no"},
		{"429 quota", 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, ClassQuota, "You exceeded your current quota"},
		{"429 rate", 429, `{"error":{"message":"slow down","type":"tokens","code":"rate_limit_exceeded"}}`, ClassRateLimit, "slow down"},
		{"402", 402, `{"error":{"code":402,"message":"Insufficient credits"}}`, ClassQuota, "Insufficient credits"},
		{"529", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, ClassOverloaded, "Overloaded"},
		{"503 at capacity", 503, `{"error":{"message":"Model is at capacity"}}`, ClassOverloaded, "Model is at capacity"},
		{"400 context", 400, `{"error":{"message":"maximum context length is 8192 tokens","code":"context_length_exceeded"}}`, ClassContextLength, "maximum context length is 8192 tokens"},
		{"400 anthropic too long", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208538 tokens > 200000 maximum"}}`, ClassContextLength, "prompt is too long: 208538 tokens > 200000 maximum"},
		{"400 anthropic max_tokens overflow", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"input length and max_tokens exceed context limit: 198000 + 8192 > 200000"}}`, ClassContextLength, "input length and max_tokens exceed context limit: 198000 + 8192 > 200000"},
		{"413", 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`, ClassContextLength, "Request exceeds the maximum size"},
		{"400 other", 400, `{"error":{"message":"Unsupported parameter","code":"unsupported_parameter"}}`, ClassBadRequest, "Unsupported parameter"},
		{"404 ollama", 404, `{"error":"model 'x' not found"}`, ClassModelNotFound, "model 'x' not found"},
		{"404 openai model_not_found", 404, `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, ClassModelNotFound, "The model `gpt-9` does not exist or you do not have access to it."},
		{"400 responses model_not_found", 400, `{"error":{"message":"The requested model 'x' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"}}`, ClassModelNotFound, "The requested model 'x' does not exist."},
		{"404 anthropic model", 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`, ClassModelNotFound, "model: claude-9"},
		{"404 wrong path stays bad request", 404, `404 page not found`, ClassBadRequest, "404 page not found"},
		{"422 vllm detail", 422, `{"detail":"field required"}`, ClassBadRequest, "field required"},
		{"500", 500, `{"error":{"message":"oops","type":"server_error","code":null}}`, ClassServer, "oops"},
		{"502 html", 502, "<html>Bad Gateway</html>\n", ClassServer, "<html>Bad Gateway</html>"},
		{"504 empty", 504, ``, ClassTimeout, "Gateway Timeout"},
		{"408", 408, ``, ClassTimeout, "Request Timeout"},
		{"500 mentioning quota stays server", 500, `{"error":{"message":"quota service exceeded its deadline"}}`, ClassServer, "quota service exceeded its deadline"},
		{"stream event overloaded", 0, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, ClassOverloaded, "Overloaded"},
		{"stream event api_error", 0, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, ClassServer, "Internal server error"},
		{"stream event rate limit", 0, `{"type":"error","error":{"type":"rate_limit_error","message":"later"}}`, ClassRateLimit, "later"},
		{"stream event unknown", 0, `{"error":{"message":"???"}}`, ClassUnknown, "???"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := ClassifyHTTP("p", tt.status, nil, []byte(tt.body))
			if e.Class != tt.want || e.Message != tt.msg || e.StatusCode != tt.status || e.Provider != "p" {
				t.Errorf("got %+v, want class %s message %q", e, tt.want, tt.msg)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassifyTransport(t *testing.T) {
	t.Parallel()
	already := &Error{Class: ClassQuota, Provider: "x"}
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, ClassNetwork},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), ClassNetwork},
		{"unexpected EOF", io.ErrUnexpectedEOF, ClassNetwork},
		{"deadline", fmt.Errorf("post: %w", context.DeadlineExceeded), ClassTimeout},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, ClassTimeout},
		{"canceled", context.Canceled, ClassUnknown},
		{"already classified", fmt.Errorf("wrapped: %w", already), ClassQuota},
	}
	for _, tt := range tests {
		e := ClassifyTransport("p", tt.err)
		if e.Class != tt.want {
			t.Errorf("%s: class %s, want %s", tt.name, e.Class, tt.want)
		}
		if tt.want != ClassQuota && !errors.Is(e, tt.err) {
			t.Errorf("%s: cause not wrapped", tt.name)
		}
	}
	if ClassifyTransport("p", nil) != nil {
		t.Error("nil error classified")
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 2, 10, 18, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"30"}}, 30 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"3"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-4"}}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := ParseRetryAfter(tt.h, now); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.h, got, tt.want)
		}
	}
	if e := ClassifyHTTP("p", 429, nil, []byte(`{"error":{"message":"Please try again in 1.5s.","code":"rate_limit_exceeded"}}`)); e.RetryAfter != 1500*time.Millisecond {
		t.Errorf("message hint: %v", e.RetryAfter)
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	e := ClassifyHTTP("openai", 429, nil, []byte(`{"error":{"message":"slow down"}}`))
	if got := e.Error(); got != "openai: rate_limit (HTTP 429): slow down" {
		t.Errorf("Error() = %q", got)
	}
}

// The fallback policy per class (documented on Class.Fallback): what will not clear by retrying
// the same endpoint moves to a fallback model; a bad key, a bad request, an overflow and an
// unknown failure do not.
func TestClassFallback(t *testing.T) {
	t.Parallel()
	want := map[Class]bool{
		ClassAuth: false, ClassQuota: true, ClassRateLimit: true, ClassOverloaded: true, ClassNetwork: true,
		ClassTimeout: true, ClassContextLength: false, ClassBadRequest: false, ClassServer: true,
		ClassModelNotFound: true, ClassUnknown: false,
	}
	for c, w := range want {
		if got := c.Fallback(); got != w {
			t.Errorf("%s.Fallback() = %v, want %v", c, got, w)
		}
	}
	if ClassModelNotFound.Retryable() {
		t.Error("model_not_found must not be retried on the same endpoint")
	}
}
