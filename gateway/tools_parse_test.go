package gateway

import (
	"strings"
	"testing"
)

// serve.tools MCP entries: one tool or a whole server of the configured ones; a wildcard that
// would reach into another server's tools, a wildcard inside a name, or an unknown server is
// refused naming the key. ToolAllowed matches exactly or under a server's wildcard.
func TestParseToolsMCP(t *testing.T) {
	t.Parallel()
	servers := []string{"fs", "web", "fs__x"}
	cases := []struct {
		list, err string
	}{
		{"mcp__fs__read_file memory", ""},
		{"mcp__web__*", ""},
		{"mcp__fs__*", `would also allow the tools of MCP server fs__x`},
		{"mcp__web__get*", "only a whole server may be allowed with *"},
		{"mcp__nope__x", "names no configured MCP server"},
		{"terminal", "is not one of spool's tools for API sessions"},
	}
	for _, c := range cases {
		got, err := ParseTools(map[string]string{"local": c.list}, Keys{}, servers)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.list, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "serve.tools.local: ")):
			t.Errorf("%q: error %v, want %q", c.list, err, c.err)
		case c.err == "" && len(got[Local]) == 0:
			t.Errorf("%q: nothing allowed", c.list)
		}
	}
	allow := []string{"mcp__fs__read_file", "mcp__web__*", "memory"}
	for name, want := range map[string]bool{
		"mcp__fs__read_file": true, "mcp__fs__write_file": false, "mcp__web__get": true,
		"mcp__webx__get": false, "memory": true, "session_search": false,
	} {
		if got := ToolAllowed(allow, name); got != want {
			t.Errorf("ToolAllowed(%s) = %v, want %v", name, got, want)
		}
	}
}
