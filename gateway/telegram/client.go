package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// DefaultBaseURL is Telegram's Bot API.
const DefaultBaseURL = "https://api.telegram.org"

// APIError is an answer with ok=false.
type APIError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// Client calls the Bot API.
type Client struct {
	base  string
	token string
	http  *http.Client
	// Sleep waits between retries (a fake clock in tests).
	sleep func(ctx context.Context, d time.Duration) error
	// Retries bounds the retries of 5xx answers, timeouts and network errors (retry_after
	// waits are not counted against it).
	retries int
}

type envelope struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// redact removes the token from s.
func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "<token>")
}

// call posts params as JSON to method and decodes the result into out (nil: ignore it).
// A 429 (or any error with retry_after) waits exactly retry_after and tries again, however
// long and however often; 5xx, timeouts and network errors are retried up to c.retries
// times: the first retry at once (a lost request or a passing 5xx costs no wait: a long
// poll's failure used to hold every update behind it for the 500 ms backoff), then after an
// exponential backoff with jitter (Backoff); other errors return an *APIError. before, when
// set, runs before every attempt (the per-chat cadence: a retry is a call Telegram counts).
func (c *Client) call(ctx context.Context, method string, params, out any) error {
	return c.paced(ctx, method, params, out, nil)
}

func (c *Client) paced(ctx context.Context, method string, params, out any, before func(context.Context) error) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: encode: %w", method, err)
	}
	failures := 0
	for {
		if before != nil {
			if err := before(ctx); err != nil {
				return fmt.Errorf("telegram %s: %w", method, err)
			}
		}
		err := c.once(ctx, method, body, out)
		var api *APIError
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("telegram %s: %w", method, context.Cause(ctx))
		case errors.As(err, &api) && api.RetryAfter > 0:
			if serr := c.sleep(ctx, api.RetryAfter); serr != nil {
				return fmt.Errorf("telegram %s: %w", method, serr)
			}
			continue
		case errors.As(err, &api) && api.Code < 500:
			return err
		}
		// 5xx, a timeout, a connection error: retry, at once the first time, then backing off.
		if failures++; failures > c.retries {
			return err
		}
		if d := Backoff(failures, rand.Float64()); d > 0 {
			if serr := c.sleep(ctx, d); serr != nil {
				return fmt.Errorf("telegram %s: %w", method, serr)
			}
		}
	}
}

// Backoff is the wait before retry n (1-based) of a failed call: none before the first,
// then 500 ms doubling to at most 30 s, each scaled by a jitter in [0.5, 1) from u in
// [0, 1), so clients that failed together do not retry together.
func Backoff(n int, u float64) time.Duration {
	if n <= 1 {
		return 0
	}
	d := 500 * time.Millisecond
	for i := 2; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	d = min(d, 30*time.Second)
	return time.Duration(float64(d) * (0.5 + u/2))
}

func (c *Client) once(ctx context.Context, method string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bot"+c.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return errors.New(c.redact(fmt.Sprintf("telegram %s: %v", method, err)))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		// The error names the URL, which holds the token.
		return errors.New(c.redact(fmt.Sprintf("telegram %s: %v", method, err)))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return errors.New(c.redact(fmt.Sprintf("telegram %s: read the answer: %v", method, err)))
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return &APIError{Method: method, Code: max(resp.StatusCode, 500), Description: fmt.Sprintf("unreadable answer (HTTP %d)", resp.StatusCode)}
	}
	if !env.OK {
		code := env.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return &APIError{Method: method, Code: code, Description: c.redact(env.Description),
			RetryAfter: time.Duration(env.Parameters.RetryAfter) * time.Second}
	}
	if out != nil {
		if err := json.Unmarshal(env.Result, out); err != nil {
			return fmt.Errorf("telegram %s: decode the result: %w", method, err)
		}
	}
	return nil
}
