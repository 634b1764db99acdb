package tools

import "testing"

// TestApprovalScope: "always" for one command covers another only when both are simple commands
// with the same program and subcommand; a command with an operator, substitution, redirection
// or assignment is covered only by its own exact text.
func TestApprovalScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		approved, later string
		covered         bool
	}{
		{"ls -la && echo done", "ls >/dev/null; touch FILE", false},
		{"ls -la && echo done", "ls -la && echo done", true},
		{"ls -la && echo done", "ls -la && echo done; touch FILE", false},
		{"git log --oneline", "git push", false},
		{"git log --oneline", "git log -p main", true},
		{"git log --oneline", "git  log", true},
		{"git log --oneline", "git log; touch FILE", false},
		{"git log --oneline", "git log >/tmp/out", false},
		{"git log --oneline", "git log $(touch FILE)", false},
		{"git log --oneline", "git log `touch FILE`", false},
		{"git log --oneline", "git log ${IFS}x", false},
		{"git log --oneline", "git log $'\\073' touch FILE", false},
		{"git log --oneline", "git log <(touch FILE)", false},
		{"git log --oneline", "git log | sh", false},
		{"git log --oneline", "git log & touch FILE", false},
		{"git log --oneline", "git log\ntouch FILE", false},
		{"git log --oneline", "git log $HOME", true},
		{"git log --oneline", "GIT_PAGER=x git log", false},
		{"git log --oneline", "git -c core.pager=x log", false},
		{"go test ./...", "go test -run X ./tools", true},
		{"go test ./...", "go run .", false},
		{"ls -la", "ls -R /", false},
		{"ls -la", "ls -la", true},
		{"ls", "ls /", false},
		{"timeout 5 ls", "timeout 5 touch FILE", false},
		{"eval ls", "eval touch FILE", false},
		{"find . -name x", "find . -delete", false},
		{"FOO=1 make test", "FOO=2 make test", false},
		{"make test", "make install", false},
	} {
		a, _ := ApprovalRequest{Tool: "terminal", Command: tc.approved}.Scope()
		b, _ := ApprovalRequest{Tool: "terminal", Command: tc.later}.Scope()
		if got := a == b; got != tc.covered {
			t.Errorf("always %q then %q: covered = %v, want %v (keys %q, %q)", tc.approved, tc.later, got, tc.covered, a, b)
		}
	}
	// An MCP call names its tool and arguments in Command; "always" covers the tool.
	mcpCall := func(tool, args string) string {
		key, _ := ApprovalRequest{Tool: tool, Command: tool + " " + args}.Scope()
		return key
	}
	if mcpCall("mcp__fs__read", `{"path":"a"}`) != mcpCall("mcp__fs__read", `{"path":"b; x"}`) ||
		mcpCall("mcp__fs__read", `{}`) == mcpCall("mcp__fs__write", `{}`) {
		t.Error("an MCP tool's always must cover that tool, whatever its arguments, and no other tool")
	}
	for _, tc := range []struct {
		req  ApprovalRequest
		text string
	}{
		{ApprovalRequest{Tool: "terminal", Command: "git log --oneline"}, `"git log …" without operators`},
		{ApprovalRequest{Tool: "terminal", Command: "ls -la && echo done"}, "this exact command"},
		{ApprovalRequest{Tool: "write_file", Path: "/w/a"}, "write_file"},
		{ApprovalRequest{Tool: "read_file", Path: "/etc/x", Outside: true}, "read_file outside the workspace"},
		{ApprovalRequest{Tool: "mcp__fs__read", Command: `mcp__fs__read {"path":"a"}`}, "mcp__fs__read"},
	} {
		if _, text := tc.req.Scope(); text != tc.text {
			t.Errorf("%+v offers %q, want %q", tc.req, text, tc.text)
		}
	}
}
