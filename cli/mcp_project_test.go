package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// spoolAt runs spool in dir (the project it is started from).
func spoolAt(t *testing.T, dir, home string, args ...string) result {
	t.Helper()
	return spoolAtIn(t, dir, home, "", args...)
}

// spoolAtIn runs spool in dir with stdin piped in.
func spoolAtIn(t *testing.T, dir, home, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(spoolBin, append([]string{"--home", home}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, cleanEnv(), strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// A project's .spool/config.yaml adds MCP servers, found from a subdirectory up to the git root,
// only when the home config allows project servers; a project server with a home server's name
// replaces it; a project file that sets anything but mcp.servers is an error naming its line.
func TestMCPProjectServers(t *testing.T) {
	t.Parallel()
	bin := mcpServer(t)
	proj := t.TempDir()
	sub := filepath.Join(proj, "pkg", "deep")
	for _, d := range []string{filepath.Join(proj, ".git"), filepath.Join(proj, ".spool"), sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	projFile := filepath.Join(proj, ".spool", "config.yaml")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(projFile, fmt.Sprintf("mcp:\n  servers:\n    - name: t\n      command: [%q]\n    - name: p\n      command: [%q]\n", bin, bin))
	homeCfg := fmt.Sprintf("mcp:\n  servers:\n    - name: t\n      command: [%q, \"-fail-start\"]\n", bin)

	type listed struct {
		Servers []struct{ Name, State string }
	}
	// Not allowed: the home servers only, and a line naming the project file.
	home := writeConfig(t, homeCfg)
	r := spoolAt(t, sub, home, "--json", "mcp", "list")
	got := decode[listed](t, r.ok(t, "mcp list"))
	if len(got.Servers) != 1 || got.Servers[0].State != "failed" || !strings.Contains(r.stderr, "MCP servers t, p of "+projFile+" are not started") ||
		!strings.Contains(r.stderr, "mcp.project_servers: true") {
		t.Errorf("project servers not allowed: %+v\nstderr: %s", got.Servers, r.stderr)
	}
	// Allowed: the project's t replaces the home one, p joins.
	home = writeConfig(t, homeCfg+"  project_servers: true\n")
	got = decode[listed](t, spoolAt(t, sub, home, "--json", "mcp", "list").ok(t, "mcp list"))
	if len(got.Servers) != 2 || got.Servers[0].Name != "t" || got.Servers[0].State != "connected" || got.Servers[1].Name != "p" || got.Servers[1].State != "connected" {
		t.Errorf("project servers allowed: %+v", got.Servers)
	}
	// Outside the project (no .spool above the git root of another tree) nothing is found.
	other := t.TempDir()
	got = decode[listed](t, spoolAt(t, other, home, "--json", "mcp", "list").ok(t, "mcp list elsewhere"))
	if len(got.Servers) != 1 || got.Servers[0].State != "failed" {
		t.Errorf("outside the project: %+v", got.Servers)
	}
	// A project file may set mcp.servers only.
	write(projFile, "mcp:\n  servers: []\nprovider:\n  name: openai\n")
	r = spoolAt(t, sub, home, "mcp", "list")
	if r.code == 0 || !strings.Contains(r.stderr, projFile+":4") || !strings.Contains(r.stderr, "mcp.servers only") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("bad project file: exit %d, stderr %q", r.code, r.stderr)
	}
}
