package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/testbin"
)

// mcpHome is a spool home whose config names the test MCP server (a real process built from
// tools/mcp/internal/testserver) as "t", plus extra config lines.
func mcpHome(t *testing.T, extra string) string {
	t.Helper()
	home := t.TempDir()
	cfg := fmt.Sprintf("mcp:\n  servers:\n    - name: t\n      command: [%q]\n%s", mcpServer(t), extra)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// mcpServer builds the test MCP server once and returns its path.
func mcpServer(t *testing.T) string {
	t.Helper()
	return testbin.Path(t, "github.com/spoolhq/spool/tools/mcp/internal/testserver")
}

func TestMCPList(t *testing.T) {
	t.Parallel()
	home := mcpHome(t, fmt.Sprintf("    - name: broken\n      command: [%q, \"-fail-start\"]\n", mcpServer(t)))
	got := decode[struct {
		Servers []struct {
			Name, State, Error string
			Tools              []struct{ Name, Remote string }
		}
	}](t, spool(t, home, "mcp", "list", "--json").ok(t, "mcp list --json"))
	if len(got.Servers) != 2 || got.Servers[0].Name != "t" || got.Servers[0].State != "connected" ||
		got.Servers[1].State != "failed" || !strings.Contains(got.Servers[1].Error, "refusing to start") {
		t.Fatalf("servers = %+v", got.Servers)
	}
	names := []string{}
	for _, tl := range got.Servers[0].Tools {
		names = append(names, tl.Name)
	}
	if len(names) != 9 || names[0] != "mcp__t__add" || !strings.Contains(strings.Join(names, " "), "mcp__t__echo") {
		t.Errorf("tools = %v", names)
	}
	text := spool(t, home, "mcp", "list").ok(t, "mcp list")
	for _, want := range []string{"t (stdio) connected", "  mcp__t__echo  Echo the text back.", "broken (stdio) failed: connect:", "refusing to start"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("mcp list lacks %q:\n%s", want, text.stdout)
		}
	}
	none := spool(t, t.TempDir(), "mcp", "list").ok(t, "mcp list without servers")
	if !strings.Contains(none.stdout, "No MCP servers configured") {
		t.Errorf("no servers: %q", none.stdout)
	}
}

func TestMCPToolsInRun(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := mcpHome(t, "")
	first := decode[runOut](t, spool(t, home, viaFake(url, "--json", "--yes", `CALL mcp__t__echo {"text":"hi"}`)...).ok(t, "echo"))
	if first.ToolCalls != 1 || !strings.Contains(first.Reply, `mcp__t__echo returned "echo: hi"`) {
		t.Fatalf("echo turn: %+v", first)
	}
	// A second process offers the same tools prefix: resuming breaks no cache.
	second := decode[runOut](t, spool(t, home, viaFake(url, "--json", "--yes", "--resume", first.SessionID, `CALL mcp__t__add {"a":2,"b":40}`)...).ok(t, "add"))
	if !strings.Contains(second.Reply, `mcp__t__add returned "42"`) || len(second.CacheBreaks) != 0 || second.Usage.CacheReadTokens == 0 {
		t.Fatalf("resumed turn in a new process: %+v", second)
	}

	cases := []struct {
		name, prompt string
		yes          bool
		want         string
	}{
		{"without --yes the call is refused", `CALL mcp__t__echo {"text":"x"}`, false, "MCP tool not called: not approved"},
		{"a crashing server gives an error result", `CALL mcp__t__crash {}`, true, "MCP server t"},
		{"spool's secrets stay out of the server", `CALL mcp__t__env {"name":"SPOOL_MCP_TEST_TOKEN"}`, true, "SPOOL_MCP_TEST_TOKEN is not set"},
	}
	for _, c := range cases {
		args := []string{"--json", c.prompt}
		if c.yes {
			args = append([]string{"--yes"}, args...)
		}
		r := spoolEnv(t, home, "", []string{"SPOOL_MCP_TEST_TOKEN=hunter2"}, viaFake(url, args...)...).ok(t, c.name)
		out := decode[runOut](t, r)
		if out.ToolCalls != 1 || !strings.Contains(out.Reply, c.want) || strings.Contains(out.Reply, "echo: x") {
			t.Errorf("%s: reply %q, want it to contain %q", c.name, out.Reply, c.want)
		}
	}
}

func TestMCPBadConfig(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("mcp:\n  servers:\n    - name: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := spool(t, home, "mcp", "list")
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "mcp.servers[0].command") {
		t.Fatalf("bad config: exit %d, stderr %q", r.code, r.stderr)
	}
}
