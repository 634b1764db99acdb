package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/internal/testbin"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
)

// The MCP tool lists are listed again between turns, never within one, and a change names the
// server on stderr.
func TestMCPToolListRefreshBetweenTurns(t *testing.T) {
	t.Parallel()
	bin := testbin.Path(t, "github.com/spoolhq/spool/tools/mcp/internal/testserver")
	var stderr bytes.Buffer
	a := &app{stderr: &stderr}
	defer a.closeMCP()
	cfg := config.Default(t.TempDir())
	cfg.MCP.Servers = []config.MCPServer{{Name: "t", Command: []string{bin}}, {Name: "u", Command: []string{bin}}}
	live, err := a.agentTools(context.Background(), cfg, tools.Env{Approver: tools.AutoApprove})
	if err != nil {
		t.Fatal(err)
	}
	defs := func() []byte {
		b, _ := json.Marshal(live.Definitions())
		return b
	}
	turn1 := defs()
	if !bytes.Contains(turn1, []byte("mcp__t__echo")) || !bytes.Contains(turn1, []byte(`"read_file"`)) {
		t.Fatalf("turn 1 tools lack the MCP or built-in tools: %s", turn1)
	}
	call := func(name string) string {
		text, isErr := live.Call(context.Background(), "s", store.ToolCall{Function: store.ToolFunction{Name: name, Arguments: "{}"}})
		if isErr {
			t.Fatalf("%s: %s", name, text)
		}
		return text
	}
	if turn2 := defs(); !bytes.Equal(turn2, turn1) || stderr.Len() != 0 {
		t.Fatalf("unchanged servers changed the tools prefix (stderr %q)", stderr.String())
	}
	call("mcp__u__grow") // within this turn the tools stay as they are
	turn3 := defs()
	if bytes.Equal(turn3, turn1) || !bytes.Contains(turn3, []byte("mcp__u__extra")) {
		t.Fatalf("turn 3 tools: %s", turn3)
	}
	if got := call("mcp__u__extra"); got != "extra" {
		t.Errorf("new tool answered %q", got)
	}
	if s := stderr.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "cache break: MCP server u changed its tool list") {
		t.Errorf("stderr = %q, want one line naming server u", s)
	}
}
