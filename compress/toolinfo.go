package compress

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"
)

// toolKind groups tools by what their calls mean for the working set.
type toolKind int

const (
	kindOther toolKind = iota
	kindCommand
	kindRead
	kindWrite
)

func classifyTool(name string) toolKind {
	n := strings.ToLower(name)
	switch {
	case containsAny(n, "terminal", "shell", "bash", "exec", "run_command", "command", "process"):
		return kindCommand
	case containsAny(n, "write", "edit", "patch", "create", "replace", "apply", "insert", "delete", "move", "rename"):
		return kindWrite
	case containsAny(n, "read", "view", "cat", "open", "list", "ls", "glob", "grep", "search_files", "find"):
		return kindRead
	}
	return kindOther
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// callArgs is the decoded, flat view of a tool call's arguments.
type callArgs struct {
	Command string
	Paths   []string
}

var pathKeys = []string{"path", "file_path", "filepath", "file", "filename", "target", "target_file", "source", "destination", "dir", "directory"}

// parseArgs decodes the command and paths of a tool call's arguments. Only those keys are
// decoded (a write_file call's content is skipped, not unquoted).
func parseArgs(raw string) callArgs {
	var a callArgs
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil {
		return a
	}
	str := func(k string) (string, bool) {
		v, ok := m[k]
		if !ok || len(v) == 0 || v[0] != '"' {
			return "", false
		}
		var s string
		return s, json.Unmarshal(v, &s) == nil
	}
	strs := func(k string) ([]string, bool) {
		v, ok := m[k]
		if !ok || len(v) == 0 || v[0] != '[' {
			return nil, false
		}
		var arr []any
		if json.Unmarshal(v, &arr) != nil {
			return nil, false
		}
		var out []string
		for _, p := range arr {
			if s, ok := p.(string); ok {
				out = append(out, s)
			}
		}
		return out, len(arr) > 0
	}
	for _, k := range []string{"command", "cmd", "script"} {
		if s, ok := str(k); ok && s != "" {
			a.Command = s
			break
		}
		if parts, ok := strs(k); ok {
			a.Command = strings.Join(parts, " ")
			break
		}
	}
	for _, k := range pathKeys {
		if s, ok := str(k); ok && s != "" {
			a.Paths = append(a.Paths, s)
		}
	}
	if ps, ok := strs("paths"); ok {
		for _, p := range ps {
			if p != "" {
				a.Paths = append(a.Paths, p)
			}
		}
	}
	return a
}

const exitScanTail = 4096

var exitRe = regexp.MustCompile(`(?i)(?:exit(?:ed)?(?: with)?(?:[ _](?:code|status))?["']?\s*[:= ]\s*|returncode\s*[:= ]\s*)(-?\d{1,3})\b`)

// exitStatus finds the last exit status reported in a command's output. The expression only
// runs on short windows that start at a candidate keyword, so huge outputs stay cheap.
func exitStatus(out string) (string, bool) {
	if len(out) > exitScanTail {
		// Shells and tools report the status at the end.
		out = out[len(out)-exitScanTail:]
	}
	for i := len(out) - 4; i >= 0; i-- {
		switch out[i] | 0x20 {
		case 'e':
			if !hasPrefixLowerASCII(out[i:], "exit") {
				continue
			}
		case 'r':
			if !hasPrefixLowerASCII(out[i:], "returncode") {
				continue
			}
		default:
			continue
		}
		if m := exitRe.FindStringSubmatch(out[i:min(len(out), i+48)]); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// clip shortens s to at most n runes, adding "…" when cut, and folds it onto one line.
func clip(s string, n int) string {
	if len(s) <= n && foldedLine(s) {
		return s
	}
	if len(s) > 8*n {
		s = headRunes(s, 4*n) // whitespace folding below never needs more
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// headRunes returns the first n runes of s.
func headRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// tailRunes returns the last n runes of s.
func tailRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// cutBytes returns the longest prefix of s of at most n bytes that ends on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// foldedLine reports whether s is ASCII with single spaces between words and no other
// whitespace: folding it (strings.Fields, joined by spaces) would give s back.
func foldedLine(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return s == ""
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x80, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			return false
		case c == ' ' && s[i-1] == ' ':
			return false
		}
	}
	return true
}
