package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spoolhq/spool/provider/fake"
)

// Eight tool turns at a 4K window: every turn answers, spool compacts at least once, no prompt
// exceeds the window, and the first order stays searchable after it was compacted away.
func TestAgentTurnCompactsAtA4KWindow(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	c := &myClient{model: fake.New(fake.Config{ContextWindow: window})}
	if err := run(context.Background(), &out, c); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for i := 1; i <= 8; i++ {
		if !strings.Contains(got, "turn "+string(rune('0'+i))+": 2 model calls, 1 tool call\n") {
			t.Fatalf("turn %d did not run its tool and answer:\n%s", i, got)
		}
	}
	for _, want := range []string{"largest prompt within the window: true\n", "the first order still found by search: true\n"} {
		if !strings.Contains(got, want) {
			t.Fatalf("want %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "compactions: 0 ") || c.largestSent == 0 {
		t.Fatalf("no compaction at a 4K window (largest prompt %d):\n%s", c.largestSent, got)
	}
}
