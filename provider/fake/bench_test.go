package fake

import (
	"context"
	"fmt"
	"testing"

	"github.com/spoolhq/spool/provider"
)

// BenchmarkConversation runs a 40-turn conversation with a 2k-token system prompt through the
// in-process client and reports the share of prompt tokens served from the cache.
func BenchmarkConversation(b *testing.B) {
	for _, style := range []CacheStyle{CacheOpenAI, CacheAnthropic} {
		b.Run(string(style), func(b *testing.B) {
			ctx := context.Background()
			var s Stats
			for b.Loop() {
				m := New(Config{InProcessCache: style})
				req := provider.Request{Model: "fake", System: padding(2000), Tools: tools}
				for turn := range 40 {
					req.Messages = append(req.Messages, provider.Message{Role: "user", Content: fmt.Sprintf("turn %d %s", turn, padding(80))})
					resp, err := m.Chat(ctx, req, nil)
					if err != nil {
						b.Fatal(err)
					}
					req.Messages = append(req.Messages, provider.Message{Role: "assistant", Content: resp.Content})
				}
				s = m.Stats()
			}
			b.ReportMetric(100*s.CacheHitRate(), "cached-%")
			b.ReportMetric(float64(s.PromptTokens), "prompt-tokens/run")
		})
	}
}
