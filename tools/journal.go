package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spoolhq/spool/internal/regfile"
)

// FileChange is what one write_file or edit_file call did to one file: enough to put it back.
type FileChange struct {
	SessionID string    `json:"session_id"`
	CallID    string    `json:"call_id"`
	Tool      string    `json:"tool"`
	Path      string    `json:"path"` // absolute
	Existed   bool      `json:"existed"`
	Kept      bool      `json:"kept"`             // Before is the old content (false: the file was too large to keep)
	Before    []byte    `json:"before,omitempty"` // the content before the call, when Existed and Kept
	After     string    `json:"after_sha256"`     // the SHA-256 of what the call wrote
	Time      time.Time `json:"time"`
}

// Journal keeps the FileChanges of the file tools so a turn can be undone: one JSON file per
// tool call, in Dir/<session id>/. A change outlives the process that made it, and a chat on
// another machine (a shared PostgreSQL store) does not see it.
type Journal struct{ Dir string }

// safeName is a session id usable as a directory name as it is.
var safeName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func (j *Journal) sessionDir(sessionID string) string {
	if !safeName.MatchString(sessionID) {
		sessionID = hashName(sessionID)
	}
	return filepath.Join(j.Dir, sessionID)
}

func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// Record saves a change, replacing an earlier record of the same call.
func (j *Journal) Record(ch FileChange) error {
	dir := j.sessionDir(ch.SessionID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("undo record: %w", err)
	}
	data, err := json.Marshal(ch)
	if err != nil {
		return fmt.Errorf("undo record: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, hashName(ch.CallID)+".json"), data, 0o600); err != nil {
		return fmt.Errorf("undo record: %w", err)
	}
	return nil
}

// Lookup returns the change a call made, if one was recorded: the call is looked for in each
// of sessionIDs in turn (its session, then the sessions it was carried from: compaction and
// branching copy calls into a new session).
func (j *Journal) Lookup(sessionIDs []string, callID string) (FileChange, bool, error) {
	name := hashName(callID) + ".json"
	for _, sid := range sessionIDs {
		p := filepath.Join(j.sessionDir(sid), name)
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return FileChange{}, false, fmt.Errorf("undo record: %w", unwrapPath(err))
		}
		var ch FileChange
		if err := json.Unmarshal(data, &ch); err != nil {
			return FileChange{}, false, fmt.Errorf("undo record %s: %w", p, err)
		}
		if ch.CallID == callID {
			return ch, true, nil
		}
	}
	return FileChange{}, false, nil
}

// Forget removes a change's record; a record already gone is no error.
func (j *Journal) Forget(ch FileChange) {
	_ = os.Remove(filepath.Join(j.sessionDir(ch.SessionID), hashName(ch.CallID)+".json"))
}

// ForgetSession removes every record of a session (the session is being deleted).
func (j *Journal) ForgetSession(sessionID string) error {
	if err := os.RemoveAll(j.sessionDir(sessionID)); err != nil {
		return fmt.Errorf("undo records of %s: %w", sessionID, unwrapPath(err))
	}
	return nil
}

// Prune removes the records written before cutoff, and the session directories left empty,
// and returns how many records it removed.
func (j *Journal) Prune(cutoff time.Time) (int, error) {
	dirs, err := os.ReadDir(j.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("undo records: %w", unwrapPath(err))
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(j.Dir, d.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		left := len(files)
		for _, f := range files {
			if info, err := f.Info(); err == nil && info.ModTime().Before(cutoff) && os.Remove(filepath.Join(dir, f.Name())) == nil {
				n++
				left--
			}
		}
		if left == 0 {
			_ = os.Remove(dir)
		}
	}
	return n, nil
}

// record gives the journal the change a tool call made (after is what it wrote) and returns a
// note for the result when that failed: the write stands, only its undo is lost.
func record(_ context.Context, env Env, tool string, ch FileChange, after string) string {
	if env.Journal == nil || env.CallID == "" || env.SessionID == "" {
		return ""
	}
	ch.SessionID, ch.CallID, ch.Tool, ch.After, ch.Time = env.SessionID, env.CallID, tool, sha256Hex([]byte(after)), time.Now().UTC()
	if !ch.Existed {
		ch.Before = nil
	}
	if err := env.Journal.Record(ch); err != nil {
		return fmt.Sprintf("\n(note: /undo will not be able to restore this file: %v)", err)
	}
	return ""
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Revert is how to put one file back as it was before a run of changes.
type Revert struct {
	Path    string
	Existed bool   // false: the changes created the file, and reverting removes it
	Kept    bool   // the old content is known
	Before  []byte // the content before the first change
	// Changed is set when the file is not what the last change wrote (edited or removed since):
	// reverting it would lose that, so Apply refuses.
	Changed bool
}

// PlanReverts turns changes, in the order they were made, into one Revert per file: back to
// the content before the first change, if the file is still what the last change wrote.
func PlanReverts(changes []FileChange) []Revert {
	var out []Revert
	at := map[string]int{}
	last := map[string]string{}
	for _, ch := range changes {
		if _, ok := at[ch.Path]; !ok {
			at[ch.Path] = len(out)
			out = append(out, Revert{Path: ch.Path, Existed: ch.Existed, Kept: ch.Kept || !ch.Existed, Before: ch.Before})
		}
		last[ch.Path] = ch.After
	}
	for i := range out {
		now, err := regfile.ReadFile(out[i].Path)
		out[i].Changed = err != nil || sha256Hex(now) != last[out[i].Path]
	}
	return out
}

// Apply puts the file back: writes its old content, or removes it when the changes created it.
func (r Revert) Apply() error {
	switch {
	case r.Changed:
		return errors.New("it changed since spool wrote it")
	case !r.Kept:
		return errors.New("it was too large for spool to keep a copy")
	case !r.Existed:
		return unwrapPath(os.Remove(r.Path))
	}
	return writeAtomic(r.Path, r.Before, 0o644)
}
