package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// long and however often; 5xx, timeouts and network errors are retried with backoff up to
// c.retries times; other errors return an *APIError.
func (c *Client) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: encode: %w", method, err)
	}
	backoff := 500 * time.Millisecond
	failures := 0
	for {
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
		// 5xx, a timeout, a connection error: back off and retry.
		if failures++; failures > c.retries {
			return err
		}
		if serr := c.sleep(ctx, backoff); serr != nil {
			return fmt.Errorf("telegram %s: %w", method, serr)
		}
		backoff = min(2*backoff, 30*time.Second)
	}
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
