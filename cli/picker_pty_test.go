package cli_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// TestChatResumePickerOldBranch: the picker lists a branch under its root however old the
// branch's activity, even behind more newer sessions than the picker lists (it lists branch
// trees, not sessions), and a filter matching only the branch shows it under its root.
func TestChatResumePickerOldBranch(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	now := time.Now()
	withStore(t, home, func(st store.Backend) {
		mk := func(ns store.NewSession) {
			t.Helper()
			if _, err := st.CreateSession(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
		}
		mk(store.NewSession{ID: "tree-root", Title: "the root", StartedAt: now.Add(-time.Minute)})
		// More newer sessions than the picker lists (its limit, pickLimit, is 500 trees).
		for i := 0; i < 505; i++ {
			mk(store.NewSession{ID: fmt.Sprintf("other-%03d", i), Title: fmt.Sprintf("other %03d", i),
				StartedAt: now.Add(-time.Duration(10+i) * time.Minute)})
		}
		mk(store.NewSession{ID: "old-branch", Title: "the old branch", ParentID: "tree-root",
			Relation: store.RelationBranch, StartedAt: now.Add(-30 * 24 * time.Hour)})
	})
	model := []string{"chat", "--provider", "openai", "--base-url", url + "/v1", "--model", fakeModelArg}
	s, cmd := startPTY(t, home, nil, append(model, "--resume", "other-003")...)
	s.prompt()
	s.press("/resume", keyEnter)
	s.onScreen("Resume a session:")
	scr := s.onScreen("msgs")
	nested := regexp.MustCompile(`the root  tree-root[^\n]*\n[ >]+└ the old branch  old-branch`)
	if !nested.MatchString(scr) {
		t.Errorf("old branch not listed under its root:\n%s", scr)
	}
	// A filter that matches only the branch shows it under its root, the cursor on it.
	s.press("old bra")
	scr = s.onScreen("old bra▏  (1 of ")
	if !nested.MatchString(scr) || strings.Contains(scr[strings.Index(scr, "Resume a session:"):], "other") {
		t.Errorf("filter: want the root and its branch alone:\n%s", scr)
	}
	s.press(keyEnter)
	s.expect("Resumed old-branch")
	s.prompt()
	s.press("/exit", keyEnter)
	waitExit(t, s, cmd)
}
