package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/spoolhq/spool/store"
)

// How tool activity is shown in `spool chat` and `spool run`'s text output.
const (
	// resultLines is how many lines of a tool's result show unless --verbose.
	resultLines = 4
	// resultWidth cuts a shown result line (a minified file, a long log line), in columns,
	// when the terminal's width is not known.
	resultWidth = 200
)

// headArgs are the arguments that say what a call is about, in order of preference: the first
// present is shown as plain text after the tool's name.
var headArgs = []string{"command", "path", "pattern", "query", "dir", "goal", "action", "session_id"}

// toolCallLine is a tool call as a person reads it: the tool, its main argument as plain text
// (a command as typed, not JSON with \u0026 escapes), and the other arguments in short.
func toolCallLine(tc store.ToolCall) string {
	name := tc.Function.Name
	dec := json.NewDecoder(strings.NewReader(tc.Function.Arguments))
	dec.UseNumber()
	var args map[string]any
	if dec.Decode(&args) != nil {
		return truncate(name+" "+tc.Function.Arguments, 160)
	}
	line := name
	for _, k := range headArgs {
		if s, ok := args[k].(string); ok && s != "" {
			line += " " + s
			delete(args, k)
			break
		}
	}
	var rest []string
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		rest = append(rest, k+"="+argText(args[k]))
	}
	if len(rest) > 0 {
		line += " (" + strings.Join(rest, ", ") + ")"
	}
	return truncate(line, 160)
}

// argText is one argument's value in short: a short string quoted, a long one by its size, a
// list by its length.
func argText(v any) string {
	switch v := v.(type) {
	case string:
		if n := strings.Count(v, "\n"); n > 0 || len(v) > 40 {
			return fmt.Sprintf("%d lines, %d bytes", n+1, len(v))
		}
		return strconv.Quote(v)
	case []any:
		return fmt.Sprintf("%d items", len(v))
	case map[string]any:
		return fmt.Sprintf("{%d fields}", len(v))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// resultBlock is a tool's result as shown under its call: all of it when full, else its first
// resultLines lines, each cut to fit width columns (0: unknown), and a marker saying how many
// more there are and how to see them (more). Control characters are shown escaped, never sent
// to the terminal.
func resultBlock(result string, isErr, full bool, width int, more string) string {
	text := strings.TrimRight(result, "\n")
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
	}
	lines := strings.Split(text, "\n")
	shown := lines
	if !full && len(lines) > resultLines {
		shown = lines[:resultLines]
	}
	cut := resultWidth
	if width > 0 {
		cut = min(cut, max(width-len("      "), 20))
	}
	var b strings.Builder
	for i, l := range shown {
		l = visible(strings.ReplaceAll(strings.TrimRight(l, "\r"), "\t", "    "))
		if !full {
			l = ansi.Truncate(l, cut, "…")
		}
		switch {
		case i == 0 && isErr:
			b.WriteString("    ✗ ")
		case i == 0:
			b.WriteString("    ↳ ")
		default:
			b.WriteString("      ")
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if n := len(lines) - len(shown); n > 0 {
		fmt.Fprintf(&b, "      … %d more lines (%s)\n", n, more)
	}
	return b.String()
}

// shownTool is one tool call of the last turn and its whole result, for /expand.
type shownTool struct {
	call   store.ToolCall
	result string
	isErr  bool
}

// terminalWidth is w's width in columns when it is a terminal, else 0.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			return cols
		}
	}
	return 0
}
