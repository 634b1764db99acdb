package prompt

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/internal/regfile"
)

// Project rule file names, in the order they are tried.
var (
	// SpoolRuleFiles are looked for in the working directory and each parent up to the git root.
	SpoolRuleFiles = []string{"SPOOL.md", ".spool.md"}
	// FallbackRuleFiles are looked for in the working directory only, when no spool file exists.
	FallbackRuleFiles = []string{"AGENTS.md", "CLAUDE.md"}
)

// maxReadBytes caps how much of one file a build reads: larger files contribute their first and
// last halves of this, which the character bound then cuts further.
const maxReadBytes = 1 << 20

// FindRuleFile returns the project rule file for workDir, or "" when there is none. Only one
// file is used: SPOOL.md or .spool.md in workDir or a parent up to the git root (the nearest
// wins; outside a git repository only workDir is searched), else AGENTS.md, else CLAUDE.md in
// workDir.
func FindRuleFile(workDir string) (string, error) {
	dir, err := filepath.Abs(workDir)
	if err != nil {
		return "", fmt.Errorf("find rule file from %q: %w", workDir, err)
	}
	root := gitRoot(dir)
	for d := dir; ; {
		if p, err := firstFile(d, SpoolRuleFiles); p != "" || err != nil {
			return p, err
		}
		parent := filepath.Dir(d)
		if root == "" || d == root || parent == d {
			break
		}
		d = parent
	}
	return firstFile(dir, FallbackRuleFiles)
}

// gitRoot is the nearest directory at or above dir holding a .git entry (a directory, or the
// file a worktree uses), or "".
func gitRoot(dir string) string {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func firstFile(dir string, names []string) (string, error) {
	for _, name := range names {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", fmt.Errorf("check rule file %s: %w", p, err)
		case fi.Mode().IsRegular():
			return p, nil
		}
	}
	return "", nil
}

// readBounded returns the trimmed text of path, cut to limit characters with a marker, or ""
// when the file does not exist.
func readBounded(path string, limit int) (string, error) {
	f, fi, err := regfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	var text string
	unread := 0
	if fi.Size() <= maxReadBytes {
		b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		text = string(b)
	} else {
		half := int64(maxReadBytes / 2)
		head := make([]byte, half)
		tail := make([]byte, half)
		if _, err := f.ReadAt(head, 0); err != nil {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		if _, err := f.ReadAt(tail, fi.Size()-half); err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		// The middle is never read: force the character cut, which drops it anyway.
		text = trimPartialRunes(string(head)) + "\n" + trimPartialRunes(string(tail))
		limit = min(limit, utf8.RuneCountInString(text)-1)
		unread = int(fi.Size() - 2*half) // counted as characters: exact for ASCII, close otherwise
	}
	return truncate(strings.TrimSpace(text), limit, unread, filepath.Base(path)), nil
}

// trimPartialRunes drops the bytes of runes cut by a byte-offset read at either end.
func trimPartialRunes(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		if r, n := utf8.DecodeRuneInString(s); r != utf8.RuneError || n != 1 {
			break
		}
		s = s[1:]
	}
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		if r, n := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || n != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// truncate keeps text whole when it has at most limit characters; otherwise it keeps the first
// 70% and the last 20% of limit around a marker naming the file.
func truncate(text string, limit, unread int, name string) string {
	if limit <= 0 || utf8.RuneCountInString(text) <= limit {
		return text
	}
	r := []rune(text)
	head := limit * 7 / 10
	tail := limit * 2 / 10
	omitted := len(r) - head - tail + unread
	return string(r[:head]) + "\n\n" + TruncationMarker(name, omitted) + "\n\n" + string(r[len(r)-tail:])
}

// TruncationMarker is the line that stands where the middle of a long file was cut.
func TruncationMarker(name string, omitted int) string {
	return fmt.Sprintf("[... %s truncated: %d characters omitted here; read the file for the full text ...]", name, omitted)
}
