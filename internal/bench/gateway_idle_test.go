package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/testbin"
)

// TestIdleStreams holds idle streams against the real `spool serve` binary in its own process
// and reads that process's memory. The plain run (a limit no run can pass over, so the verdict
// is on the mechanics: every stream held, none of their turns ended during the hold, every one
// released whole) fills in the figures (how much 40 streams add is within the noise, so it is not
// asserted); the control pads each stream's message by 192 KiB, so the same measurement must see
// at least that much a stream and fail the 1 GiB verdict; and streams the server refuses (a
// message over serve.max_request_bytes) fail it, saying how far it got and why.
func TestIdleStreams(t *testing.T) {
	t.Parallel()
	exe := testbin.Path(t, "github.com/spoolhq/spool/cmd/spool")
	const streams = 40
	plain, err := IdleStreams(context.Background(), IdleConfig{Dir: t.TempDir(), Exe: exe, Streams: streams, Limit: 1 << 50})
	if err != nil {
		t.Fatalf("%v\n%+v", err, plain)
	}
	if plain.Streams != streams || plain.Completed != streams || plain.OpenError != "" || !plain.Extrapolated ||
		plain.Before.RSS <= 0 || plain.Before.PSS <= 0 || plain.Before.GoHeap <= 0 || plain.Held.RSS <= 0 || plain.Held.PSS <= 0 ||
		plain.PerStream.Goroutines < 1 || !plain.WithinLimit {
		t.Fatalf("plain run: %+v", plain)
	}
	const pad = 192 << 10
	fat, err := IdleStreams(context.Background(), IdleConfig{Dir: t.TempDir(), Exe: exe, Streams: streams, Pad: pad})
	if !errors.Is(err, ErrVerify) || fat.WithinLimit || fat.Streams != streams || fat.PerStream.RSS < pad || fat.PerStream.RSS <= plain.PerStream.RSS {
		t.Fatalf("control (%d bytes more a stream): %v\n%+v\nplain: %+v", pad, err, fat, plain)
	}
	refused, err := IdleStreams(context.Background(), IdleConfig{Dir: t.TempDir(), Exe: exe, Streams: streams, Pad: 5 << 20})
	if !errors.Is(err, ErrVerify) || refused.Streams != 0 || !strings.Contains(refused.OpenError, "opened 0 of 40 idle streams") ||
		!strings.Contains(refused.OpenError, "413") {
		t.Fatalf("refused streams: %v\n%+v", err, refused)
	}
	t.Logf("per stream: plain %+v, padded %+v", plain.PerStream, fat.PerStream)
}
