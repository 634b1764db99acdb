package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/internal/regfile"
)

// File tool limits.
const (
	// MaxReadBytes is the largest file read_file opens; bigger files are refused with advice.
	MaxReadBytes = 10 << 20
	// DefaultReadLines is how many lines read_file returns without a limit.
	DefaultReadLines = 2000
	// maxLineChars cuts very long lines (minified files) in read_file and search_files output.
	maxLineChars = 2000
	// MaxWriteBytes bounds write_file content.
	MaxWriteBytes = 10 << 20
	// DefaultListLimit and MaxListLimit bound list_files.
	DefaultListLimit = 200
	MaxListLimit     = 2000
	// DefaultSearchMatches and MaxSearchMatches bound search_files.
	DefaultSearchMatches = 100
	MaxSearchMatches     = 1000
	// maxSearchFileBytes skips files too large to be source; binarySniff is how much of a file
	// is checked for NUL bytes.
	maxSearchFileBytes = 5 << 20
	binarySniff        = 8000
)

// workDir is the directory relative paths resolve against.
func workDir(env Env) (string, error) {
	dir := env.WorkDir
	if dir == "" {
		d, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		}
		dir = d
	}
	return filepath.Abs(dir)
}

// resolvePath makes p absolute: "~/" is the user's home, relative paths are under Env.WorkDir.
func resolvePath(env Env, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand %s: %w", p, err)
		}
		p = filepath.Join(home, p[1:])
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	dir, err := workDir(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, p), nil
}

// display shows a path relative to the working directory when it is inside it.
func display(env Env, abs string) string {
	dir, err := workDir(env)
	if err != nil {
		return abs
	}
	if rel, err := filepath.Rel(dir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return abs
}

func isBinary(head []byte) bool { return bytes.IndexByte(head, 0) >= 0 }

// ReadFile reads a text file, optionally a range of lines.
func ReadFile() Tool {
	return Tool{
		Name: "read_file",
		Description: "Read a text file. Lines are numbered (line number, a tab, the text). Returns at most " +
			"2000 lines per call; use offset and limit to page through longer files. Binary files and files " +
			"over 10 MB are refused.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"path":{"type":"string","description":"File path, relative to the working directory or absolute."},
			"offset":{"type":"integer","minimum":1,"description":"First line to return, 1-based (default 1)."},
			"limit":{"type":"integer","minimum":1,"description":"Maximum number of lines to return (default 2000)."}
		},"required":["path"],"additionalProperties":false}`),
		Run: readFile,
	}
}

func readFile(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	p, err := resolvePath(env, a.Path)
	if err != nil {
		return "", err
	}
	if err := allowRead(ctx, env, "read_file", p); err != nil {
		return "", err
	}
	name := display(env, p)
	f, st, err := regfile.Open(p)
	var nr *regfile.NotRegularError
	if errors.As(err, &nr) && nr.Mode.IsDir() {
		return "", fmt.Errorf("read %s: is a directory (use list_files)", name)
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, unwrapPath(err))
	}
	defer f.Close()
	if st.Size() > MaxReadBytes {
		return "", fmt.Errorf("read %s: file is %d bytes, over the %d byte limit; use search_files or terminal (head, sed -n) to read parts of it",
			name, st.Size(), MaxReadBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, unwrapPath(err))
	}
	if isBinary(data[:min(len(data), binarySniff)]) {
		return "", fmt.Errorf("read %s: binary file (%d bytes); not shown", name, len(data))
	}
	if len(data) == 0 {
		return fmt.Sprintf("(%s is empty)", name), nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	offset := max(a.Offset, 1)
	limit := a.Limit
	if limit <= 0 {
		limit = DefaultReadLines
	}
	if offset > len(lines) {
		return "", fmt.Errorf("read %s: offset %d is past the end of the file (%d lines)", name, offset, len(lines))
	}
	end := min(offset-1+limit, len(lines))
	var b strings.Builder
	for i := offset - 1; i < end; i++ {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		line := strings.TrimRight(lines[i], "\r\n")
		if !utf8.ValidString(line) {
			line = strings.ToValidUTF8(line, "\uFFFD")
		}
		if len(line) > maxLineChars {
			line = cutBack(line[:maxLineChars]) + fmt.Sprintf(" [... line cut, %d bytes]", len(line))
		}
		fmt.Fprintf(&b, "%d\t%s\n", i+1, line)
	}
	if offset > 1 || end < len(lines) {
		fmt.Fprintf(&b, "(lines %d-%d of %d", offset, end, len(lines))
		if end < len(lines) {
			fmt.Fprintf(&b, "; continue with offset=%d", end+1)
		}
		b.WriteString(")\n")
	}
	return b.String(), nil
}

// unwrapPath drops the *PathError wrapper, whose text repeats the absolute path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteFile writes a whole file, creating parent directories.
func WriteFile() Tool {
	return Tool{
		Name: "write_file",
		Description: "Write content to a file, replacing it if it exists and creating parent directories. " +
			"Read a file before you replace it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"path":{"type":"string","description":"File path, relative to the working directory or absolute."},
			"content":{"type":"string","description":"The complete new content of the file."}
		},"required":["path","content"],"additionalProperties":false}`),
		Run: writeFile,
	}
}

func writeFile(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	p, err := resolvePath(env, a.Path)
	if err != nil {
		return "", err
	}
	name := display(env, p)
	if len(a.Content) > MaxWriteBytes {
		return "", fmt.Errorf("write %s: content is %d bytes, over the %d byte limit", name, len(a.Content), MaxWriteBytes)
	}
	// Only a regular file is replaced: reading a named pipe for the diff would wait for a writer
	// forever, and a device or socket is not something to swap for a file.
	st, err := os.Stat(p)
	if err == nil && !st.Mode().IsRegular() {
		return "", fmt.Errorf("write %s: %w", name, &regfile.NotRegularError{Mode: st.Mode()})
	}
	created := errors.Is(err, fs.ErrNotExist)
	var before []byte
	kept := false
	if err == nil && st.Size() <= MaxReadBytes {
		// For the diff a person is shown and the undo record; a file swapped for a pipe
		// meanwhile is refused.
		if before, err = regfile.ReadFile(p); errors.As(err, new(*regfile.NotRegularError)) {
			return "", fmt.Errorf("write %s: %w", name, unwrapPath(err))
		}
		kept = err == nil
	}
	if err := allowWrite(ctx, env, "write_file", p, unifiedDiff(name, string(before), a.Content)); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("write %s: create parent directories: %w", name, unwrapPath(err))
	}
	if err := writeAtomic(p, []byte(a.Content), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	note := record(ctx, env, "write_file", FileChange{Path: p, Existed: !created, Kept: created || kept, Before: before}, a.Content)
	return fmt.Sprintf("%s %s: wrote %d bytes (%d lines)%s", verb, name, len(a.Content), countLines(a.Content), note), nil
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// writeAtomic replaces path through a temporary file and a rename, so a crash never leaves half
// a file; an existing file keeps its permissions.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return unwrapPath(err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return unwrapPath(os.Rename(name, path))
}

// ListFiles lists a directory, optionally recursively and filtered by a glob.
func ListFiles() Tool {
	return Tool{
		Name: "list_files",
		Description: "List files and directories (directories end with /). With recursive, walks " +
			"subdirectories (skipping .git and node_modules). glob filters by name (\"*.go\"), or by relative " +
			"path when it contains a slash (\"cmd/*/main.go\"). Results are sorted and bounded by limit.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"dir":{"type":"string","description":"Directory to list (default: the working directory)."},
			"glob":{"type":"string","description":"Only entries matching this pattern."},
			"recursive":{"type":"boolean","description":"Walk subdirectories (default false)."},
			"limit":{"type":"integer","minimum":1,"description":"Maximum entries (default 200, at most 2000)."}
		},"additionalProperties":false}`),
		Run: listFiles,
	}
}

// skipDir names directories whose content is never worth walking.
func skipDir(name string) bool { return name == ".git" || name == "node_modules" }

func listFiles(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a struct {
		Dir       string `json:"dir"`
		Glob      string `json:"glob"`
		Recursive bool   `json:"recursive"`
		Limit     int    `json:"limit"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	if a.Dir == "" {
		a.Dir = "."
	}
	root, err := resolvePath(env, a.Dir)
	if err != nil {
		return "", err
	}
	if err := allowRead(ctx, env, "list_files", root); err != nil {
		return "", err
	}
	name := display(env, root)
	if st, err := os.Stat(root); err != nil {
		return "", fmt.Errorf("list %s: %w", name, unwrapPath(err))
	} else if !st.IsDir() {
		return "", fmt.Errorf("list %s: not a directory", name)
	}
	if a.Glob != "" {
		if _, err := filepath.Match(a.Glob, ""); err != nil {
			return "", fmt.Errorf("glob %q: %w", a.Glob, err)
		}
	}
	limit := a.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	var out []string
	more := false
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if err != nil {
			out = append(out, rel+" (unreadable: "+unwrapPath(err).Error()+")")
			return nil
		}
		if matchGlob(a.Glob, rel) {
			if len(out) == limit {
				more = true
				return filepath.SkipAll
			}
			entry := filepath.ToSlash(rel)
			if d.IsDir() {
				entry += "/"
			}
			out = append(out, entry)
		}
		if d.IsDir() && (skipDir(d.Name()) || !a.Recursive) {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", name, unwrapPath(err))
	}
	if len(out) == 0 {
		if a.Glob != "" {
			return fmt.Sprintf("(no entries in %s match %q)", name, a.Glob), nil
		}
		return fmt.Sprintf("(%s is empty)", name), nil
	}
	text := strings.Join(out, "\n") + "\n"
	if more {
		text += fmt.Sprintf("(stopped at %d entries; narrow with glob or dir, or raise limit)\n", limit)
	}
	return text, nil
}

// matchGlob matches a pattern against the base name, or the relative path when the pattern
// has a slash.
func matchGlob(pattern, rel string) bool {
	if pattern == "" {
		return true
	}
	target := filepath.Base(rel)
	if strings.Contains(pattern, "/") {
		target = filepath.ToSlash(rel)
	}
	ok, _ := filepath.Match(pattern, target)
	return ok
}

// SearchFiles searches file contents under a directory.
func SearchFiles() Tool {
	return Tool{
		Name: "search_files",
		Description: "Search file contents under a directory for a regular expression (RE2 syntax) or, with " +
			"literal, a plain string. Prints path:line: text for each matching line. Skips .git, " +
			"node_modules, binary files and files over 5 MB. glob limits which file names are searched.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"Regular expression, or plain text with literal=true."},
			"dir":{"type":"string","description":"Directory to search (default: the working directory); may also be one file."},
			"glob":{"type":"string","description":"Only files whose name matches, e.g. \"*.go\"."},
			"literal":{"type":"boolean","description":"Treat pattern as plain text (default false)."},
			"ignore_case":{"type":"boolean","description":"Case-insensitive match (default false)."},
			"max_matches":{"type":"integer","minimum":1,"description":"Stop after this many matching lines (default 100, at most 1000)."}
		},"required":["pattern"],"additionalProperties":false}`),
		Run: searchFiles,
	}
}

func searchFiles(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a struct {
		Pattern    string `json:"pattern"`
		Dir        string `json:"dir"`
		Glob       string `json:"glob"`
		Literal    bool   `json:"literal"`
		IgnoreCase bool   `json:"ignore_case"`
		MaxMatches int    `json:"max_matches"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	if a.Pattern == "" {
		return "", errors.New("pattern is empty")
	}
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", fmt.Errorf("pattern %q is not a valid regular expression (%v); set literal=true to search for it as text", a.Pattern, err)
	}
	if a.Glob != "" {
		if _, err := filepath.Match(a.Glob, ""); err != nil {
			return "", fmt.Errorf("glob %q: %w", a.Glob, err)
		}
	}
	if a.Dir == "" {
		a.Dir = "."
	}
	root, err := resolvePath(env, a.Dir)
	if err != nil {
		return "", err
	}
	if err := allowRead(ctx, env, "search_files", root); err != nil {
		return "", err
	}
	if _, err := os.Stat(root); err != nil {
		return "", fmt.Errorf("search %s: %w", display(env, root), unwrapPath(err))
	}
	limit := a.MaxMatches
	if limit <= 0 {
		limit = DefaultSearchMatches
	}
	limit = min(limit, MaxSearchMatches)
	var b strings.Builder
	matches, files, skipped := 0, 0, 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			skipped++
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || (a.Glob != "" && !matchGlob(a.Glob, d.Name())) {
			return nil
		}
		n, err := grepFile(path, display(env, path), re, limit-matches, &b)
		if err != nil {
			skipped++
			return nil
		}
		files++
		matches += n
		if matches >= limit {
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("search %s: %w", display(env, root), err)
	}
	if matches == 0 {
		return fmt.Sprintf("no matches for %q in %d files under %s", a.Pattern, files, display(env, root)), nil
	}
	if matches >= limit {
		fmt.Fprintf(&b, "(stopped at %d matches; narrow the pattern, dir or glob)\n", limit)
	}
	return b.String(), nil
}

// errSkip marks a file search_files does not search (binary, too large).
var errSkip = errors.New("skipped")

// grepFile writes up to limit matching lines of one file to b and returns how many it wrote.
func grepFile(path, name string, re *regexp.Regexp, limit int, b *strings.Builder) (int, error) {
	f, st, err := regfile.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if st.Size() > maxSearchFileBytes {
		return 0, errSkip
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if head, _ := r.Peek(binarySniff); isBinary(head) {
		return 0, errSkip
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSearchFileBytes)
	n := 0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !re.MatchString(text) {
			continue
		}
		if len(text) > maxLineChars/4 {
			text = cutBack(text[:maxLineChars/4]) + " [...]"
		}
		fmt.Fprintf(b, "%s:%d: %s\n", filepath.ToSlash(name), line, strings.ToValidUTF8(text, "\uFFFD"))
		n++
		if n >= limit {
			break
		}
	}
	return n, sc.Err()
}
