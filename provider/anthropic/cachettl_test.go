package anthropic_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/anthropic"
	"github.com/spoolhq/spool/provider/fake"
)

// A one-hour cache TTL survives a 20-minute pause that the default five minutes does not, is
// asked on every breakpoint, and its writes are reported (and priced) apart.
func TestCacheTTL(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a frozen system prompt that is long enough to be cached. ", 200)
	for _, c := range []struct {
		name      string
		ttl       time.Duration
		wantTTL   int // breakpoints asking for one hour
		cachedHit bool
	}{
		{"default five minutes", 0, 0, false},
		{"one hour", time.Hour, 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := fake.NewManualClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
			h := fake.New(fake.Config{Now: clock.Now}).Handler()
			var mu sync.Mutex
			var bodies [][]byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, body)
				mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(w, r)
			}))
			defer srv.Close()
			cl, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, CacheTTL: c.ttl})
			if err != nil {
				t.Fatal(err)
			}
			req := provider.Request{Model: "claude-sonnet-4-5", System: long, Temperature: -1, Messages: []provider.Message{
				{Role: "user", Content: "first question"}, {Role: "assistant", Content: "first answer"}, {Role: "user", Content: "second question"}}}
			// Streamed, so the usage of message_start is read too.
			first, err := cl.Chat(context.Background(), req, func(provider.Delta) {})
			if err != nil {
				t.Fatal(err)
			}
			if first.Usage.CacheWriteTokens == 0 || (first.Usage.CacheWrite1h > 0) != (c.ttl == time.Hour) {
				t.Errorf("first call usage %+v", first.Usage)
			}
			clock.Advance(20 * time.Minute)
			second, err := cl.Chat(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if hit := second.Usage.CacheReadTokens > 0; hit != c.cachedHit {
				t.Errorf("after a 20-minute pause cache read %d tokens, want a hit: %v", second.Usage.CacheReadTokens, c.cachedHit)
			}
			if n := bytes.Count(bodies[0], []byte(`"ttl":"1h"`)); n != c.wantTTL {
				t.Errorf("%d breakpoints ask for one hour, want %d: %s", n, c.wantTTL, bodies[0])
			}
			if n := bytes.Count(bodies[0], []byte(`"cache_control"`)); n != 4 {
				t.Errorf("%d breakpoints, want 4", n)
			}
		})
	}
	if _, err := anthropic.New(anthropic.Config{CacheTTL: 30 * time.Minute}); err == nil || !strings.Contains(err.Error(), "5m or 1h") {
		t.Errorf("a 30-minute TTL: %v", err)
	}
}

func TestCostOfOneHourWrites(t *testing.T) {
	t.Parallel()
	u := provider.Usage{InputTokens: 1_000_000, CacheWriteTokens: 1_000_000}
	five, _ := provider.EstimateCost("claude-sonnet-4-5", u)
	u.CacheWrite1h = 1_000_000
	hour, _ := provider.EstimateCost("claude-sonnet-4-5", u)
	if five != 3.75 || hour != 6 {
		t.Errorf("a million cache-write tokens cost $%v (5m) and $%v (1h), want $3.75 and $6", five, hour)
	}
}
