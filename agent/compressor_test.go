package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
)

// The compressor the agent builds (and the benchmarks measure) counts tokens as the agent's
// request estimate does, not with compress's default character estimate.
func TestNewCompressorCountsLikeTheAgent(t *testing.T) {
	t.Parallel()
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	c := agent.NewCompressor(compress.DefaultConfig(), nil, now)
	if !c.Now().Equal(now()) {
		t.Fatalf("clock not used: %v", c.Now())
	}
	ms := []store.Message{
		{Role: store.RoleUser, Content: "Läuft der Build? 日本語のテキスト " + strings.Repeat("{\"k\":[1,2,3]} ", 40)},
		{Role: store.RoleAssistant, Content: "ok", ToolCalls: []store.ToolCall{{ID: "c1", Type: "function",
			Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"go test ./..."}`}}}},
		{Role: store.RoleTool, ToolCallID: "c1", ToolName: "terminal", Content: strings.Repeat("ok  \tpkg/x\t0.1s\n", 30)},
	}
	want := 0
	for _, m := range ms {
		want += tokens.EstimateMessage(m)
	}
	if got := compress.EstimateTokens(c.Estimator, ms); got != want {
		t.Fatalf("compressor estimate %d, agent estimate %d", got, want)
	}
	if def := compress.EstimateTokens(nil, ms); def == want {
		t.Fatalf("the default estimate equals the agent's (%d): this test cannot tell them apart", def)
	}
}
