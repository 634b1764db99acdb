package gateway

import (
	"testing"
	"time"
)

// TestKeyLimiterTableBounded: the table of counted addresses never exceeds MaxTracked.
func TestKeyLimiterTableBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lim := NewKeyLimiter(KeyLimitOptions{Attempts: 2, Window: time.Minute, MaxTracked: 4, Now: func() time.Time { return now }})
	for i := 0; i < 20; i++ {
		lim.Fail("10.0.0." + string(rune('a'+i)))
		now = now.Add(time.Second)
	}
	if n := len(lim.addrs); n > 4 {
		t.Fatalf("%d addresses tracked, want at most 4", n)
	}
}
