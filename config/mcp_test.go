package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMCPServers(t *testing.T) {
	clearEnv(t)
	home := writeHome(t, `mcp:
  call_timeout: 30s
  servers:
    - name: fs
      command: [npx, -y, "@modelcontextprotocol/server-filesystem", /tmp]
      env:
        DEBUG: "1"
    - name: web
      url: http://127.0.0.1:9000/mcp
`)
	cfg, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{
		{Name: "fs", Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, Env: map[string]string{"DEBUG": "1"}},
		{Name: "web", URL: "http://127.0.0.1:9000/mcp"},
	}
	if !reflect.DeepEqual(cfg.MCP.Servers, want) {
		t.Errorf("servers = %+v, want %+v", cfg.MCP.Servers, want)
	}
	if cfg.MCP.CallTimeout != 30*time.Second || cfg.MCP.ConnectTimeout != 30*time.Second || cfg.MCP.MaxRestarts != 3 {
		t.Errorf("mcp = %+v", cfg.MCP)
	}
}

func TestMCPErrors(t *testing.T) {
	tests := []struct {
		name, file string
		env        map[string]string
		want       []string
	}{
		{"unknown server key", "mcp:\n  servers:\n    - name: a\n      comand: [x]\n", nil, []string{"config.yaml:4", "mcp.servers[0].comand", "unknown key"}},
		{"servers not a list", "mcp:\n  servers: x\n", nil, []string{"config.yaml:2", "mcp.servers", "must be a list"}},
		{"no transport", "mcp:\n  servers:\n    - name: a\n", nil, []string{"config.yaml:3", "mcp.servers[0].command", "needs a command"}},
		{"both transports", "mcp:\n  servers:\n    - name: a\n      command: [x]\n      url: http://h/mcp\n", nil, []string{"config.yaml:5", "mcp.servers[0].url", "keep one"}},
		{"bad name", "mcp:\n  servers:\n    - name: a.b\n      command: [x]\n", nil, []string{"config.yaml:3", "mcp.servers[0].name", "not a server name"}},
		{"duplicate name", "mcp:\n  servers:\n    - name: a\n      command: [x]\n    - name: a\n      command: [y]\n", nil, []string{"config.yaml:5", "mcp.servers[1].name", "unique"}},
		{"bad url", "mcp:\n  servers:\n    - name: a\n      url: ftp://h\n", nil, []string{"config.yaml:4", "mcp.servers[0].url", "http://"}},
		{"command not a list of words", "mcp:\n  servers:\n    - name: a\n      command: [[x]]\n", nil, []string{"config.yaml:4", "mcp.servers[0].command[0]", "single value"}},
		{"env var for the list", "", map[string]string{"SPOOL_MCP_SERVERS": "x"}, []string{"SPOOL_MCP_SERVERS", "config file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeHome(t, tc.file))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}
