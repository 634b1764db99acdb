package openai_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/internal/testbin"
)

// mcpTestServer builds the MCP test server (tools/mcp/internal/testserver, a real stdio MCP
// server process) once and returns its path.
func mcpTestServer(t *testing.T) string {
	t.Helper()
	return testbin.Path(t, "github.com/spoolhq/spool/tools/mcp/internal/testserver")
}

// TestMCPToolsPerKey: MCP tools in `spool serve`, approved per key by serve.tools and never
// asked about. Alice may call one tool of the server (mcp__t__echo), carol every tool of it
// (mcp__t__*), bob none: alice's echo runs in the real MCP server process and its result is
// stored; her call of a tool she is not given (add) runs nothing; bob's echo runs nothing;
// carol's add runs. Driven with the official OpenAI Go SDK against the real binary.
func TestMCPToolsPerKey(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := fmt.Sprintf("mcp:\n  servers:\n    - name: t\n      command: [%q]\n"+
		"serve:\n  keys:\n    alice: %s\n    bob: %s\n    carol: %s\n  tools:\n    alice: mcp__t__echo\n    carol: mcp__t__*\n",
		mcpTestServer(t), gateway.HashKey("sk-alice"), gateway.HashKey("sk-bob"), gateway.HashKey("sk-carol"))
	s := startServe(t, home, cfg)
	say := func(key, text string) (string, string) {
		t.Helper()
		var resp *http.Response
		c := client(s, option.WithAPIKey(key))
		got, err := c.Chat.Completions.New(bg,
			sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs(text)}, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Get("X-Spool-Session-Id"), got.Choices[0].Message.Content
	}
	toolResult := func(sid string) (string, string) {
		t.Helper()
		_, _, _, msgs := transcript(t, home, sid)
		for _, m := range msgs {
			if m.Role == "tool" {
				return shownRoles(msgs), m.Content
			}
		}
		return shownRoles(msgs), ""
	}

	sid, reply := say("sk-alice", `CALL mcp__t__echo {"text":"hello from alice"}`)
	if roles, res := toolResult(sid); roles != "user assistant(1) tool assistant" || res != "echo: hello from alice" {
		t.Fatalf("alice's echo: %s, result %q, reply %q", roles, res, reply)
	}
	sid, reply = say("sk-alice", `CALL mcp__t__add {"a":2,"b":3}`)
	if roles, _ := toolResult(sid); roles != "user assistant" {
		t.Fatalf("alice's add (not allowed for her) ran: %s, reply %q", roles, reply)
	}
	sid, reply = say("sk-bob", `CALL mcp__t__echo {"text":"bob"}`)
	if roles, _ := toolResult(sid); roles != "user assistant" {
		t.Fatalf("bob's echo (no tools for him) ran: %s, reply %q", roles, reply)
	}
	sid, reply = say("sk-carol", `CALL mcp__t__add {"a":2,"b":3}`)
	if roles, res := toolResult(sid); roles != "user assistant(1) tool assistant" || res != "5" {
		t.Fatalf("carol's add: %s, result %q, reply %q", roles, res, reply)
	}
}

// TestMCPServeToolsConfig: a serve.tools MCP entry naming no configured server, or a wildcard
// inside a tool name, stops spool serve with one line naming the key.
func TestMCPServeToolsConfig(t *testing.T) {
	t.Parallel()
	srv := mcpTestServer(t)
	cases := []struct{ tools, want string }{
		{"local: mcp__nope__echo", `serve.tools.local: "mcp__nope__echo" names no configured MCP server (mcp.servers: t)`},
		{"local: mcp__t__ec*", `serve.tools.local: "mcp__t__ec*": only a whole server may be allowed with * (mcp__t__*)`},
	}
	for _, c := range cases {
		home := t.TempDir()
		cfg := fmt.Sprintf("mcp:\n  servers:\n    - name: t\n      command: [%q]\nserve:\n  tools:\n    %s\n", srv, c.tools)
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(spoolBin, "--home", home, "serve", "--listen", "127.0.0.1:0")
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(strings.SplitN(string(out), "\n", 2)[0], c.want) {
			t.Errorf("%q: %v, first line of\n%s\nwant %q", c.tools, err, out, c.want)
		}
	}
}
