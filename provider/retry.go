package provider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds how WithRetry sends a failed call again. Zero fields take the defaults of
// DefaultRetryPolicy.
type RetryPolicy struct {
	MaxAttempts int           // tries in all, the first included
	BaseDelay   time.Duration // wait before the second try; doubles each time
	MaxDelay    time.Duration // cap on one backoff wait
	// MaxRetryAfter is the longest Retry-After the wrapper waits out; a provider asking for more
	// ends the retries so the caller can fall back instead of hanging.
	MaxRetryAfter time.Duration
	// OnRetry, when set, hears about each retry before its wait (for a "retrying in 4s" notice).
	OnRetry func(attempt int, wait time.Duration, err error)
}

// DefaultRetryPolicy: four tries, 1 s doubling to at most 30 s, Retry-After honoured up to 2 min.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:   4,
	BaseDelay:     time.Second,
	MaxDelay:      30 * time.Second,
	MaxRetryAfter: 2 * time.Minute,
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = d.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = d.MaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = d.MaxRetryAfter
	}
	return p
}

// WithRetry returns a Client that sends a call again when it fails with a retryable class, with
// exponential backoff and jitter, never past ctx, and never once a streamed delta has reached the
// caller (a replay would duplicate text the user already saw).
func WithRetry(c Client, p RetryPolicy) Client {
	return &retryClient{next: c, policy: p.withDefaults(), sleep: sleepCtx, jitter: rand.Float64}
}

type retryClient struct {
	next   Client
	policy RetryPolicy
	sleep  func(context.Context, time.Duration) error
	jitter func() float64 // in [0,1)
}

func (r *retryClient) Name() string { return r.next.Name() }

// CanCompact forwards to the wrapped client.
func (r *retryClient) CanCompact() bool {
	c, ok := r.next.(Compactor)
	return ok && c.CanCompact()
}

// Compact forwards to the wrapped client's provider compaction, retried like Chat; a client
// without one answers ErrNoCompaction.
func (r *retryClient) Compact(ctx context.Context, req Request) (Compacted, error) {
	c, ok := r.next.(Compactor)
	if !ok {
		return Compacted{}, ErrNoCompaction
	}
	for attempt := 1; ; attempt++ {
		out, err := c.Compact(ctx, req)
		if err == nil || ctx.Err() != nil || !ClassOf(err).Retryable() || attempt >= r.policy.MaxAttempts {
			return out, err
		}
		wait, ok := r.wait(attempt, err)
		if !ok {
			return out, err
		}
		if dl, has := ctx.Deadline(); has && time.Until(dl) < wait {
			return out, err
		}
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(attempt, wait, err)
		}
		if serr := r.sleep(ctx, wait); serr != nil {
			return out, fmt.Errorf("waiting to retry: %w: %w", serr, err)
		}
	}
}

func (r *retryClient) Chat(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	delivered := false
	var tracked func(Delta)
	if onDelta != nil {
		tracked = func(d Delta) {
			delivered = true
			onDelta(d)
		}
	}
	for attempt := 1; ; attempt++ {
		resp, err := r.next.Chat(ctx, req, tracked)
		if err == nil {
			return resp, nil
		}
		if delivered || ctx.Err() != nil || !ClassOf(err).Retryable() || attempt >= r.policy.MaxAttempts {
			return resp, err
		}
		wait, ok := r.wait(attempt, err)
		if !ok {
			return resp, err
		}
		if dl, has := ctx.Deadline(); has && time.Until(dl) < wait {
			return resp, err
		}
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(attempt, wait, err)
		}
		if serr := r.sleep(ctx, wait); serr != nil {
			return resp, fmt.Errorf("waiting to retry: %w: %w", serr, err)
		}
	}
}

// wait is the pause before try attempt+1: the provider's Retry-After when it sent one, else
// equal-jitter exponential backoff. ok is false when Retry-After exceeds MaxRetryAfter.
func (r *retryClient) wait(attempt int, err error) (time.Duration, bool) {
	p := r.policy
	backoff := p.BaseDelay << (attempt - 1)
	if backoff > p.MaxDelay || backoff <= 0 {
		backoff = p.MaxDelay
	}
	backoff = backoff/2 + time.Duration(r.jitter()*float64(backoff/2))
	var pe *Error
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		if pe.RetryAfter > p.MaxRetryAfter {
			return 0, false
		}
		return pe.RetryAfter, true
	}
	return backoff, true
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
