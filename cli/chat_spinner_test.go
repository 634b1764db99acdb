package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a writer the spinner goroutine and the test can share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSpinnerErasesItsLine: however the spinner ends (stopped, or its turn interrupted), its
// goroutine has exited and the last thing on the line is the erase, so output starts clean.
func TestSpinnerErasesItsLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		end  func(cancel context.CancelFunc, s *spinner)
	}{
		{"stopped", func(_ context.CancelFunc, s *spinner) { s.stop() }},
		{"stopped twice", func(_ context.CancelFunc, s *spinner) { s.stop(); s.stop() }},
		{"turn interrupted", func(cancel context.CancelFunc, s *spinner) { cancel(); <-s.done }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out lockedBuffer
			s := startSpinner(ctx, &out, "thinking")
			tc.end(cancel, s)
			select {
			case <-s.done:
			default:
				t.Fatal("the spinner goroutine is still running")
			}
			got := out.String()
			if !strings.HasPrefix(got, clearLine+spinnerFrames[0]+" thinking…") || !strings.HasSuffix(got, clearLine) {
				t.Errorf("spinner wrote %q", got)
			}
			if strings.Contains(got, "\n") {
				t.Errorf("the spinner left its line: %q", got)
			}
		})
	}
	var nothing *spinner
	nothing.stop() // no spinner (not a terminal): stopping is a no-op
}
