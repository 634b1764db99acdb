package provider

import (
	"context"
	"errors"
	"testing"
	"time"
)

// scripted fails with the given errors in turn, then answers; deltas are sent before failing
// when sendDelta is set.
type scripted struct {
	errs      []error
	calls     int
	sendDelta bool
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Chat(_ context.Context, _ Request, onDelta func(Delta)) (Response, error) {
	s.calls++
	if s.sendDelta && onDelta != nil {
		onDelta(Delta{Content: "partial"})
	}
	if s.calls <= len(s.errs) {
		return Response{}, s.errs[s.calls-1]
	}
	return Response{Content: "ok"}, nil
}

func newRetry(c Client, p RetryPolicy, jitter float64) (*retryClient, *[]time.Duration) {
	r := WithRetry(c, p).(*retryClient)
	var waits []time.Duration
	r.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	r.jitter = func() float64 { return jitter }
	return r, &waits
}

func classErr(c Class) error { return &Error{Class: c, Provider: "scripted"} }

func TestRetryBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		errs      []error
		policy    RetryPolicy
		jitter    float64
		wantCalls int
		wantWaits []time.Duration
		wantClass Class // "" for success
	}{
		{"server errors then success", []error{classErr(ClassServer), classErr(ClassNetwork)},
			RetryPolicy{BaseDelay: time.Second}, 0, 3, []time.Duration{500 * time.Millisecond, time.Second}, ""},
		{"full jitter doubles", []error{classErr(ClassTimeout), classErr(ClassTimeout)},
			RetryPolicy{BaseDelay: time.Second}, 1, 3, []time.Duration{time.Second, 2 * time.Second}, ""},
		{"capped by MaxDelay", []error{classErr(ClassOverloaded), classErr(ClassOverloaded), classErr(ClassOverloaded)},
			RetryPolicy{BaseDelay: time.Second, MaxDelay: 1500 * time.Millisecond}, 1, 4, []time.Duration{time.Second, 1500 * time.Millisecond, 1500 * time.Millisecond}, ""},
		{"attempts exhausted", []error{classErr(ClassServer), classErr(ClassServer), classErr(ClassServer)},
			RetryPolicy{MaxAttempts: 2, BaseDelay: time.Second}, 0, 2, []time.Duration{500 * time.Millisecond}, ClassServer},
		{"auth not retried", []error{classErr(ClassAuth)}, RetryPolicy{}, 0, 1, nil, ClassAuth},
		{"context length not retried", []error{classErr(ClassContextLength)}, RetryPolicy{}, 0, 1, nil, ClassContextLength},
		{"unclassified not retried", []error{errors.New("boom")}, RetryPolicy{}, 0, 1, nil, ClassUnknown},
		{"retry-after honoured", []error{&Error{Class: ClassRateLimit, RetryAfter: 7 * time.Second}},
			RetryPolicy{BaseDelay: time.Second}, 0, 2, []time.Duration{7 * time.Second}, ""},
		{"retry-after too long gives up", []error{&Error{Class: ClassRateLimit, RetryAfter: 10 * time.Minute}},
			RetryPolicy{}, 0, 1, nil, ClassRateLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &scripted{errs: tt.errs}
			r, waits := newRetry(s, tt.policy, tt.jitter)
			resp, err := r.Chat(context.Background(), Request{}, nil)
			if tt.wantClass == "" && (err != nil || resp.Content != "ok") {
				t.Fatalf("got %q, %v", resp.Content, err)
			}
			if tt.wantClass != "" && ClassOf(err) != tt.wantClass {
				t.Fatalf("err = %v, want class %s", err, tt.wantClass)
			}
			if s.calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", s.calls, tt.wantCalls)
			}
			if len(*waits) != len(tt.wantWaits) {
				t.Fatalf("waits = %v, want %v", *waits, tt.wantWaits)
			}
			for i := range tt.wantWaits {
				if (*waits)[i] != tt.wantWaits[i] {
					t.Errorf("waits = %v, want %v", *waits, tt.wantWaits)
					break
				}
			}
		})
	}
}

func TestRetryNeverAfterDeltas(t *testing.T) {
	t.Parallel()
	s := &scripted{errs: []error{classErr(ClassNetwork)}, sendDelta: true}
	r, waits := newRetry(s, RetryPolicy{}, 0)
	var got []Delta
	_, err := r.Chat(context.Background(), Request{}, func(d Delta) { got = append(got, d) })
	if ClassOf(err) != ClassNetwork || s.calls != 1 || len(*waits) != 0 || len(got) != 1 {
		t.Errorf("err %v, calls %d, waits %v, deltas %v", err, s.calls, *waits, got)
	}
	// Without deltas delivered the same failure is retried.
	s = &scripted{errs: []error{classErr(ClassNetwork)}}
	r, _ = newRetry(s, RetryPolicy{}, 0)
	if _, err := r.Chat(context.Background(), Request{}, func(Delta) {}); err != nil || s.calls != 2 {
		t.Errorf("err %v after %d calls", err, s.calls)
	}
}

func TestRetryRespectsContext(t *testing.T) {
	t.Parallel()
	t.Run("cancelled while waiting", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		s := &scripted{errs: []error{classErr(ClassServer), classErr(ClassServer)}}
		r := WithRetry(s, RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour}).(*retryClient)
		r.policy.OnRetry = func(int, time.Duration, error) { cancel() }
		_, err := r.Chat(ctx, Request{}, nil)
		if !errors.Is(err, context.Canceled) || ClassOf(err) != ClassServer || s.calls != 1 {
			t.Errorf("err = %v after %d calls", err, s.calls)
		}
	})
	t.Run("deadline shorter than the wait", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		s := &scripted{errs: []error{&Error{Class: ClassRateLimit, RetryAfter: 90 * time.Minute}}}
		r, waits := newRetry(s, RetryPolicy{MaxRetryAfter: 2 * time.Hour}, 0)
		_, err := r.Chat(ctx, Request{}, nil)
		if ClassOf(err) != ClassRateLimit || s.calls != 1 || len(*waits) != 0 {
			t.Errorf("err = %v, calls %d, waits %v", err, s.calls, *waits)
		}
	})
	if n := WithRetry(&scripted{}, RetryPolicy{}).Name(); n != "scripted" {
		t.Errorf("Name() = %q", n)
	}
}
