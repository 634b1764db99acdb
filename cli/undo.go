package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
)

// fileJournal is where write_file and edit_file record what they change, so /undo can restore
// it: $SPOOL_HOME/undo, one small JSON file per call.
func fileJournal(cfg config.Config) *tools.Journal {
	return &tools.Journal{Dir: filepath.Join(cfg.Home, "undo")}
}

// fileRecordAge is how long a file's undo record is kept: a chat start drops older ones.
const fileRecordAge = 30 * 24 * time.Hour

// forgetFileRecords removes the undo records of a deleted session.
func (a *app) forgetFileRecords(sid string) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	return fileJournal(cfg).ForgetSession(sid)
}

// pruneFileRecords removes the undo records written before cutoff.
func (a *app) pruneFileRecords(cutoff time.Time) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	_, err = fileJournal(cfg).Prune(cutoff)
	return err
}

// fileTools are the tools whose calls the journal records.
var fileTools = map[string]bool{"write_file": true, "edit_file": true}

// lastExchange returns the last message of the user's in ms and the file-writing tool calls
// made after it, in order: what /undo takes back.
func lastExchange(ms []store.Message) (ask string, writes []store.ToolCall) {
	from := -1
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == store.RoleUser && !ms[i].Summary {
			from = i
			break
		}
	}
	if from < 0 {
		return "", nil
	}
	for _, m := range ms[from+1:] {
		for _, tc := range m.ToolCalls {
			if fileTools[tc.Function.Name] {
				writes = append(writes, tc)
			}
		}
	}
	return ms[from].Content, writes
}

// sessionChain is sid and the sessions it came from (compaction and branches copy calls into a
// new session), nearest first.
func sessionChain(ctx context.Context, st store.Sessions, sid string) []string {
	chain := []string{sid}
	for len(chain) < 64 {
		s, err := st.GetSession(ctx, chain[len(chain)-1])
		if err != nil || s.ParentID == "" {
			break
		}
		chain = append(chain, s.ParentID)
	}
	return chain
}

// restoreFiles offers to put back the files the undone calls wrote, as they were before, and
// says exactly what it did. A file changed since spool wrote it is left alone.
func (c *chat) restoreFiles(ctx context.Context, sid string, writes []store.ToolCall) error {
	if len(writes) == 0 || c.journal == nil {
		return nil
	}
	chain := sessionChain(ctx, c.st, sid)
	var changes []tools.FileChange
	for _, tc := range writes {
		ch, ok, err := c.journal.Lookup(chain, tc.ID)
		if err != nil {
			return err
		}
		if ok {
			changes = append(changes, ch)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	defer func() {
		for _, ch := range changes {
			c.journal.Forget(ch)
		}
	}()
	reverts := tools.PlanReverts(changes)
	var what []string
	for _, r := range reverts {
		switch {
		case r.Changed:
			what = append(what, c.fileName(r.Path)+" (changed since)")
		case !r.Existed:
			what = append(what, c.fileName(r.Path)+" (created)")
		default:
			what = append(what, c.fileName(r.Path))
		}
	}
	fmt.Fprintf(c.a.stdout, "The undone turn wrote %s.\n", strings.Join(what, ", "))
	ok, err := c.confirm(ctx, "Restore the files as they were before it? [y/N]")
	if err != nil || !ok {
		fmt.Fprintln(c.a.stdout, "Left the files as they are.")
		return nil
	}
	fmt.Fprintln(c.a.stdout, revertAll(reverts, c.fileName)+".")
	return nil
}

// revertAll applies the reverts and says what each did, in one sentence.
func revertAll(reverts []tools.Revert, name func(string) string) string {
	var done []string
	for _, r := range reverts {
		err := r.Apply()
		switch {
		case err != nil:
			done = append(done, fmt.Sprintf("left %s: %v", name(r.Path), err))
		case !r.Existed:
			done = append(done, fmt.Sprintf("removed %s (it did not exist before)", name(r.Path)))
		default:
			done = append(done, "restored "+name(r.Path))
		}
	}
	s := strings.Join(done, "; ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// fileName shows a path relative to the working directory when it is inside it.
func (c *chat) fileName(p string) string {
	wd, err := os.Getwd()
	if err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return visible(rel)
		}
	}
	return visible(p)
}

// confirm asks a yes/no question: on the terminal ("y" or "a" is yes); without one, --yes
// answers yes and anything else no.
func (c *chat) confirm(ctx context.Context, question string) (bool, error) {
	if !c.tty {
		if c.yes {
			return true, nil
		}
		fmt.Fprintln(c.a.stdout, "(no terminal to ask; start spool chat with --yes to restore without asking)")
		return false, nil
	}
	line, err := c.askLine(ctx, question)
	if err != nil && err != io.EOF {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes", "a", "always":
		return true, nil
	}
	return false, nil
}

// expand shows the last turn's tool calls with their results in full.
func (c *chat) expand() {
	if len(c.lastTools) == 0 {
		fmt.Fprintln(c.a.stdout, "No tool output to show: the last turn called no tools.")
		return
	}
	for _, t := range c.lastTools {
		fmt.Fprintf(c.a.stdout, "  ⚙ %s\n", toolCallLine(t.call))
		fmt.Fprint(c.a.stdout, resultBlock(t.result, t.isErr, true, 0, ""))
	}
}
