package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/internal/regfile"
)

// Memory file caps in characters, whole file: both stay below the prompt's per-file bound
// (prompt.DefaultMaxMemoryChars), so the prompt never has to cut a saved entry.
const (
	MemoryCharLimit = 4000
	UserCharLimit   = 2000
)

// MemorySeparator sits on its own line between two entries of a memory file.
const MemorySeparator = "§"

// memoryTarget is one memory file.
type memoryTarget struct {
	file  string
	limit int
}

var memoryTargets = map[string]memoryTarget{
	"memory": {"MEMORY.md", MemoryCharLimit},
	"user":   {"USER.md", UserCharLimit},
}

// Memory edits the durable memory files the system prompt shows at its next build.
func Memory() Tool {
	return Tool{
		Name: "memory",
		Description: "Save durable facts for later sessions. target \"memory\" (MEMORY.md, 4000 characters) " +
			"holds facts about the work and environment; target \"user\" (USER.md, 2000 characters) holds " +
			"the user's preferences and profile. action add saves content as a new entry; replace swaps " +
			"the one entry containing old_text for content; remove deletes the one entry containing " +
			"old_text. Keep entries short; never store secrets. Changes appear in the system prompt " +
			"when it is next built (a new session or a compaction), not in this conversation.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"action":{"type":"string","enum":["add","replace","remove"]},
			"target":{"type":"string","enum":["memory","user"],"description":"Which file (default memory)."},
			"content":{"type":"string","description":"The entry text, for add and replace."},
			"old_text":{"type":"string","description":"A unique piece of the entry to replace or remove."}
		},"required":["action"],"additionalProperties":false}`),
		Run: runMemory,
	}
}

func runMemory(_ context.Context, env Env, raw json.RawMessage) (string, error) {
	var a struct {
		Action  string `json:"action"`
		Target  string `json:"target"`
		Content string `json:"content"`
		OldText string `json:"old_text"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	if a.Target == "" {
		a.Target = "memory"
	}
	t, ok := memoryTargets[a.Target]
	if !ok {
		return "", fmt.Errorf("target %q: want memory or user", a.Target)
	}
	if env.Home == "" {
		return "", errors.New("memory is unavailable: no spool home directory is configured")
	}
	content := strings.TrimSpace(a.Content)
	oldText := strings.TrimSpace(a.OldText)
	switch a.Action {
	case "add", "replace":
		if content == "" {
			return "", fmt.Errorf("%s needs content", a.Action)
		}
		if hasSeparatorLine(content) {
			return "", fmt.Errorf("content may not contain a line holding only %q (it separates entries)", MemorySeparator)
		}
	}
	if (a.Action == "replace" || a.Action == "remove") && oldText == "" {
		return "", fmt.Errorf("%s needs old_text: a unique piece of the entry", a.Action)
	}

	dir := filepath.Join(env.Home, "memories")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("memory: %w", err)
	}
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", fmt.Errorf("memory: lock: %w", err)
	}
	defer unlock()

	path := filepath.Join(dir, t.file)
	entries, err := readEntries(path)
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %w", t.file, err)
	}
	var done string
	switch a.Action {
	case "add":
		for _, e := range entries {
			if e == content {
				return report(t, entries, "Already saved in "+t.file+"; nothing changed."), nil
			}
		}
		entries = append(entries, content)
		done = "Added an entry to " + t.file + "."
	case "replace", "remove":
		i, err := findEntry(t.file, entries, oldText)
		if err != nil {
			return "", err
		}
		if a.Action == "replace" {
			entries[i] = content
			done = "Replaced an entry in " + t.file + "."
		} else {
			entries = append(entries[:i], entries[i+1:]...)
			done = "Removed an entry from " + t.file + "."
		}
	default:
		return "", fmt.Errorf("action %q: want add, replace or remove", a.Action)
	}
	text := joinEntries(entries)
	if n := utf8.RuneCountInString(text); n > t.limit {
		return "", fmt.Errorf("%s would hold %d characters, over its %d character limit (%d used now); "+
			"shorten the entry, or replace or remove older entries first", t.file, n, t.limit, utf8.RuneCountInString(joinEntries(mustEntries(path))))
	}
	if err := writeAtomic(path, []byte(text), 0o600); err != nil {
		return "", fmt.Errorf("memory: write %s: %w", t.file, err)
	}
	return report(t, entries, done+" It takes effect when the system prompt is next built (a new session or a compaction)."), nil
}

// mustEntries rereads a file for an error message; a failure there only loses the count.
func mustEntries(path string) []string {
	e, _ := readEntries(path)
	return e
}

func hasSeparatorLine(s string) bool {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(line) == MemorySeparator {
			return true
		}
	}
	return false
}

// readEntries splits a memory file into its entries (ReadMemoryFile).
func readEntries(path string) ([]string, error) {
	data, err := regfile.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return SplitMemory(string(data)), nil
}

// SplitMemory splits the text of a memory file into its entries: separated by lines holding only
// MemorySeparator, trimmed, empty ones dropped. A hand-written file without separators is one
// entry.
func SplitMemory(text string) []string {
	var entries []string
	var cur []string
	flush := func() {
		if e := strings.TrimSpace(strings.Join(cur, "\n")); e != "" {
			entries = append(entries, e)
		}
		cur = cur[:0]
	}
	for line := range strings.SplitSeq(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == MemorySeparator {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return entries
}

// MemoryMerge is what MergeMemory did to one memory file.
type MemoryMerge struct {
	File    string   // MEMORY.md or USER.md
	Added   int      // entries appended
	Present int      // entries the file already held, word for word
	Over    []string // entries left out: the file would have gone over its character limit
}

// MergeMemory appends entries to home's memory file of target ("memory" or "user") under the
// memory tool's lock: an entry the file already holds is not added again, the file's own entries
// are kept as they are, and entries that would take the file over its limit are left out (Over),
// in order, so a later shorter one may still fit.
func MergeMemory(home, target string, entries []string) (MemoryMerge, error) {
	t, ok := memoryTargets[target]
	if !ok {
		return MemoryMerge{}, fmt.Errorf("memory target %q: want memory or user", target)
	}
	m := MemoryMerge{File: t.file}
	dir := filepath.Join(home, "memories")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return m, fmt.Errorf("memory: %w", err)
	}
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return m, fmt.Errorf("memory: lock: %w", err)
	}
	defer unlock()
	path := filepath.Join(dir, t.file)
	have, err := readEntries(path)
	if err != nil {
		return m, fmt.Errorf("memory: read %s: %w", t.file, err)
	}
	held := make(map[string]bool, len(have))
	for _, e := range have {
		held[e] = true
	}
	for _, e := range entries {
		switch e = strings.TrimSpace(e); {
		case e == "":
		case held[e]:
			m.Present++
		case hasSeparatorLine(e) || utf8.RuneCountInString(joinEntries(append(have, e))) > t.limit:
			m.Over = append(m.Over, e)
		default:
			have, held[e] = append(have, e), true
			m.Added++
		}
	}
	if m.Added == 0 {
		return m, nil
	}
	if err := writeAtomic(path, []byte(joinEntries(have)), 0o600); err != nil {
		return m, fmt.Errorf("memory: write %s: %w", t.file, err)
	}
	return m, nil
}

func joinEntries(entries []string) string {
	if len(entries) == 0 {
		return ""
	}
	return strings.Join(entries, "\n"+MemorySeparator+"\n") + "\n"
}

func findEntry(file string, entries []string, oldText string) (int, error) {
	found := -1
	for i, e := range entries {
		if strings.Contains(e, oldText) {
			if found >= 0 && entries[found] != e {
				return 0, fmt.Errorf("old_text %q matches more than one entry in %s; give a longer, unique piece of the entry", oldText, file)
			}
			if found < 0 {
				found = i
			}
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("no entry in %s contains %q", file, oldText)
	}
	return found, nil
}

// report tells the model what changed and what the file now holds.
func report(t memoryTarget, entries []string, done string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s now has %d entries, %d/%d characters.", done, t.file, len(entries),
		utf8.RuneCountInString(joinEntries(entries)), t.limit)
	for i, e := range entries {
		fmt.Fprintf(&b, "\n%d. %s", i+1, e)
	}
	return b.String()
}

// WriteAtomic replaces path with data through a temporary file and a rename, so a crash never
// leaves half a file; an existing file keeps its permissions, a new one gets mode.
func WriteAtomic(path string, data []byte, mode os.FileMode) error {
	return writeAtomic(path, data, mode)
}
