package cli

import (
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

func TestToolCallLine(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, args, want string }{
		{"terminal", `{"command":"ls -la \u0026\u0026 echo done"}`, "terminal ls -la && echo done"},
		{"terminal", `{"command":"make test","timeout":30}`, "terminal make test (timeout=30)"},
		{"edit_file", `{"path":"a.go","old_string":"x := 1","new_string":"x := 2\ny := 3"}`, `edit_file a.go (new_string=2 lines, 13 bytes, old_string="x := 1")`},
		{"edit_file", `{"path":"a.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`, "edit_file a.go (edits=2 items)"},
		{"list_files", `{}`, "list_files"},
		{"read_file", `not json`, "read_file not json"},
		{"mcp_tool", `{"q":"\u001b[2J"}`, `mcp_tool (q="\x1b[2J")`},
	}
	for _, c := range cases {
		got := toolCallLine(store.ToolCall{Function: store.ToolFunction{Name: c.name, Arguments: c.args}})
		if got != c.want {
			t.Errorf("%s %s: %q, want %q", c.name, c.args, got, c.want)
		}
	}
}

func TestResultBlock(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("line\n", 10)
	cases := []struct {
		name   string
		result string
		isErr  bool
		full   bool
		width  int
		want   string
	}{
		{"short", "one\ntwo\n", false, false, 0, "    ↳ one\n      two\n"},
		{"long, compact", long, false, false, 0, "    ↳ line\n      line\n      line\n      line\n      … 6 more lines (/expand shows all)\n"},
		{"long, full", long, false, true, 0, "    ↳ line\n" + strings.Repeat("      line\n", 9)},
		{"error", "tool x failed: boom", true, false, 0, "    ✗ tool x failed: boom\n"},
		{"empty", "", false, false, 0, "    ↳ (no output)\n"},
		{"escapes shown, not obeyed", "\x1b[2Jcleared", false, false, 0, "    ↳ \\x1b[2Jcleared\n"},
		{"a long line is cut", strings.Repeat("x", 300), false, false, 0, "    ↳ " + strings.Repeat("x", resultWidth-1) + "…\n"},
		{"cut to the terminal", strings.Repeat("x", 300), false, false, 40, "    ↳ " + strings.Repeat("x", 33) + "…\n"},
		{"wide characters by columns", strings.Repeat("字", 50), false, false, 40, "    ↳ " + strings.Repeat("字", 16) + "…\n"},
		{"full is not cut", strings.Repeat("x", 300), false, true, 40, "    ↳ " + strings.Repeat("x", 300) + "\n"},
	}
	for _, c := range cases {
		if got := resultBlock(c.result, c.isErr, c.full, c.width, "/expand shows all"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
