package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spoolhq/spool/internal/regfile"
)

// maxResultDiffLines bounds the diff an edit_file result carries back to the model.
const maxResultDiffLines = 40

// EditFile replaces exact strings in an existing file: one edit, or several applied in order
// and written at once (all or none).
func EditFile() Tool {
	return Tool{
		Name: "edit_file",
		Description: "Change an existing file by exact string replacement. Prefer it to write_file for changes to " +
			"existing files: send only what changes. old_string must match the file exactly (whitespace and " +
			"indentation count; no line-number prefixes from read_file) and occur exactly once, unless replace_all; " +
			"include enough surrounding lines to make it unique. For several changes to one file, pass edits: " +
			"they apply in order, each to the result of the one before, and the file is written only if all of " +
			"them apply. Returns the change as a unified diff. Read a file before you edit it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"path":{"type":"string","description":"File path, relative to the working directory or absolute."},
			"old_string":{"type":"string","description":"The exact text to replace (one edit)."},
			"new_string":{"type":"string","description":"The text to put in its place."},
			"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string (default false: it must occur once)."},
			"edits":{"type":"array","description":"Several edits, applied in order, all or none (instead of old_string and new_string).","items":{"type":"object","properties":{
				"old_string":{"type":"string"},
				"new_string":{"type":"string"},
				"replace_all":{"type":"boolean"}
			},"required":["old_string","new_string"],"additionalProperties":false}}
		},"required":["path"],"additionalProperties":false}`),
		Run: editFile,
	}
}

// edit is one replacement.
type edit struct {
	Old        *string `json:"old_string"`
	New        *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

// editArgs are edit_file's arguments.
type editArgs struct {
	Path string `json:"path"`
	edit
	Edits []edit `json:"edits"`
}

// list is the edits asked for, in either form.
func (a editArgs) list() ([]edit, error) {
	single := a.Old != nil || a.New != nil
	switch {
	case single && len(a.Edits) > 0:
		return nil, errors.New("pass either old_string and new_string, or edits, not both")
	case len(a.Edits) > 0:
		return a.Edits, nil
	case a.Old == nil || a.New == nil:
		return nil, errors.New("old_string and new_string are required (or edits)")
	}
	return []edit{a.edit}, nil
}

func editFile(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a editArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	p, err := resolvePath(env, a.Path)
	if err != nil {
		return "", err
	}
	name := display(env, p)
	edits, err := a.list()
	if err != nil {
		return "", fmt.Errorf("edit %s: %w", name, err)
	}
	before, err := readForEdit(p, name)
	if err != nil {
		return "", err
	}
	after, err := applyEdits(string(before), edits)
	if err != nil {
		return "", fmt.Errorf("edit %s: %w (nothing was changed)", name, err)
	}
	diff := unifiedDiff(name, string(before), after)
	if err := allowWrite(ctx, env, "edit_file", p, diff); err != nil {
		return "", fmt.Errorf("edit %s: %w", name, err)
	}
	// The approval may have taken a while: a file changed meanwhile is not overwritten.
	now, err := readForEdit(p, name)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(now, before) {
		return "", fmt.Errorf("edit %s: the file changed since it was read for this edit; read it again (nothing was changed)", name)
	}
	if err := writeAtomic(p, []byte(after), 0o644); err != nil {
		return "", fmt.Errorf("edit %s: %w", name, err)
	}
	note := record(ctx, env, "edit_file", FileChange{Path: p, Existed: true, Kept: true, Before: before}, after)
	plural := "s"
	if len(edits) == 1 {
		plural = ""
	}
	// The model gets the change back in short: one line of context, no file header.
	short := contextDiff(name, string(before), after, 1)
	short = strings.TrimPrefix(short, fmt.Sprintf("--- %s\n+++ %s\n", name, name))
	added, removed := diffStat(short)
	return fmt.Sprintf("edited %s: %d edit%s, +%d -%d lines\n%s%s", name, len(edits), plural, added, removed,
		cutDiff(short, maxResultDiffLines), note), nil
}

// readForEdit reads the regular file an edit starts from.
func readForEdit(p, name string) ([]byte, error) {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("edit %s: no such file; use write_file to create a file", name)
	case err != nil:
		return nil, fmt.Errorf("edit %s: %w", name, unwrapPath(err))
	case st.IsDir():
		return nil, fmt.Errorf("edit %s: is a directory", name)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("edit %s: %w", name, &regfile.NotRegularError{Mode: st.Mode()})
	case st.Size() > MaxWriteBytes:
		return nil, fmt.Errorf("edit %s: file is %d bytes, over the %d byte limit", name, st.Size(), MaxWriteBytes)
	}
	data, err := regfile.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", name, unwrapPath(err))
	}
	if isBinary(data[:min(len(data), binarySniff)]) {
		return nil, fmt.Errorf("edit %s: binary file; not edited", name)
	}
	return data, nil
}

// applyEdits applies the edits in order to text, each to the result of the one before. The
// first that does not apply is the error, naming it when there are several.
func applyEdits(text string, edits []edit) (string, error) {
	crlf := strings.Contains(text, "\r\n")
	for i, e := range edits {
		out, err := applyEdit(text, *e.Old, *e.New, e.ReplaceAll, crlf)
		if err != nil {
			if len(edits) > 1 {
				return "", fmt.Errorf("edit %d of %d: %w", i+1, len(edits), err)
			}
			return "", err
		}
		text = out
	}
	if len(text) > MaxWriteBytes {
		return "", fmt.Errorf("the result would be %d bytes, over the %d byte limit", len(text), MaxWriteBytes)
	}
	return text, nil
}

// applyEdit replaces old with new in text: old must occur exactly once unless all. A file with
// CRLF line ends also matches an old string written with LF ones (and gets new with CRLF).
func applyEdit(text, old, new string, all, crlf bool) (string, error) {
	switch {
	case old == "":
		return "", errors.New("old_string is empty; to create a file use write_file")
	case old == new:
		return "", errors.New("old_string and new_string are the same")
	}
	n := strings.Count(text, old)
	if n == 0 && crlf && !strings.Contains(old, "\r\n") && strings.Contains(old, "\n") {
		old, new = toCRLF(old), toCRLF(new)
		n = strings.Count(text, old)
	}
	switch {
	case n == 0:
		return "", errors.New("old_string not found; read the file again and copy the text exactly (whitespace and indentation count)")
	case n > 1 && !all:
		return "", fmt.Errorf("old_string is not unique: it occurs %d times (on %s); add surrounding lines to make it unique, or set replace_all",
			n, occurrenceLines(text, old, 5))
	case all:
		return strings.ReplaceAll(text, old, new), nil
	}
	return strings.Replace(text, old, new, 1), nil
}

func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// occurrenceLines says on which lines s occurs in text ("line 4", "lines 4, 8"), listing at most
// limit lines.
func occurrenceLines(text, s string, limit int) string {
	var lines []string
	more := false
	line, from, last := 1, 0, 0
	for {
		i := strings.Index(text[from:], s)
		if i < 0 {
			break
		}
		line += strings.Count(text[from:from+i], "\n")
		if line != last {
			if len(lines) == limit {
				more = true
				break
			}
			lines = append(lines, fmt.Sprint(line))
			last = line
		}
		line += strings.Count(s, "\n")
		from += i + len(s)
	}
	out := strings.Join(lines, ", ")
	if more {
		out += ", …"
	}
	if len(lines) == 1 {
		return "line " + out
	}
	return "lines " + out
}

// diffStat counts the added and removed lines of a unified diff.
func diffStat(diff string) (added, removed int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
	}
	return added, removed
}

// cutDiff keeps the first n lines of a diff and says how many it left out.
func cutDiff(diff string, n int) string {
	lines := strings.SplitAfter(strings.TrimSuffix(diff, "\n"), "\n")
	if len(lines) <= n {
		return strings.TrimSuffix(diff, "\n") + "\n"
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("(… %d more diff lines)\n", len(lines)-n)
}
