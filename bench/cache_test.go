package bench

import (
	"context"
	"strings"
	"testing"
)

func TestCacheBenchScaledDown(t *testing.T) {
	t.Parallel()
	rep, err := RunCache(context.Background(), CacheConfig{Turns: 80, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"openai", "anthropic"} {
		p := rep.Providers[name]
		if p == nil {
			t.Fatalf("no %s figures", name)
		}
		t.Logf("%s: %+v", name, *p)
		if p.Requests <= p.Turns || p.PromptTokens == 0 || p.CachedTokens == 0 {
			t.Errorf("%s: %d requests for %d turns, %d prompt, %d cached", name, p.Requests, p.Turns, p.PromptTokens, p.CachedTokens)
		}
		if p.Compactions == 0 {
			t.Errorf("%s: the session never compacted", name)
		}
		if p.Efficiency < 0.99 || p.Efficiency > 1.0001 {
			t.Errorf("%s: efficiency %.4f, want within [0.99, 1]", name, p.Efficiency)
		}
		if p.NaiveEfficiency >= p.Efficiency-0.2 {
			t.Errorf("%s: the naive baseline (%.3f) is not clearly worse than spool (%.3f)", name, p.NaiveEfficiency, p.Efficiency)
		}
		for reason := range p.CacheBreaks.Reasons {
			if !strings.HasPrefix(reason, "compaction") {
				t.Errorf("%s: a cache break not caused by a compaction: %q", name, reason)
			}
		}
	}
}
