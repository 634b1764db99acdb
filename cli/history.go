package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// historyKeep is how many entries the history file keeps (older ones are dropped when it is
// rewritten at load).
const historyKeep = 1000

// history is the chat's persistent input history: one JSON string per line in a file under the
// spool home, so a multi-line message is one entry. Entries are appended as they are sent; a
// file that cannot be read or written leaves an in-memory history (the chat goes on).
type history struct {
	mu      sync.Mutex
	path    string
	entries []string // oldest first
}

// loadHistory reads path ("" keeps the history in memory only). Lines that do not decode (a
// hand-edited file) are skipped.
func loadHistory(path string) *history {
	h := &history{path: path}
	if path == "" {
		return h
	}
	f, err := os.Open(path)
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
			h.entries = append(h.entries, s)
		}
	}
	if len(h.entries) > historyKeep {
		h.entries = h.entries[len(h.entries)-historyKeep:]
		h.rewrite()
	}
	return h
}

// rewrite replaces the file with the kept entries (via a temporary file and a rename).
func (h *history) rewrite() {
	tmp := h.path + ".tmp"
	var b strings.Builder
	for _, e := range h.entries {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	if os.WriteFile(tmp, []byte(b.String()), 0o600) == nil {
		_ = os.Rename(tmp, h.path)
	}
}

// add records a sent entry (a repeat of the newest one is not recorded twice).
func (h *history) add(s string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.TrimSpace(s) == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == s) {
		return nil
	}
	h.entries = append(h.entries, s)
	if h.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	f, err := os.OpenFile(h.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	line, _ := json.Marshal(s)
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// len is the number of entries.
func (h *history) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// at is entry i (0 oldest).
func (h *history) at(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i < 0 || i >= len(h.entries) {
		return ""
	}
	return h.entries[i]
}

// search finds the newest entry before index before (len() searches all) that contains q
// (case-insensitive) and returns its index, or -1.
func (h *history) search(q string, before int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	q = strings.ToLower(q)
	for i := min(before, len(h.entries)) - 1; i >= 0; i-- {
		if strings.Contains(strings.ToLower(h.entries[i]), q) {
			return i
		}
	}
	return -1
}
