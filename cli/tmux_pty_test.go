package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tmuxScreen runs spool in a tmux pane: a real terminal that re-flows its lines when it gets
// narrower, as most terminals do (the emulator of ptyScreen cuts them instead). The tests read
// the pane with capture-pane.
type tmuxScreen struct {
	t    testing.TB
	sock string
}

// startTmux runs spool with args in a detached tmux session of cols × rows, or skips the test
// when tmux is not installed.
func startTmux(t testing.TB, cols, rows int, home string, args ...string) *tmuxScreen {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	s := &tmuxScreen{t: t, sock: filepath.Join(t.TempDir(), "tmux")}
	dir := filepath.Join(home, "work")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	argv := []string{"new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), "-c", dir, "--", "env", "-i"}
	argv = append(argv, cleanEnv()...)
	argv = append(argv, "TERM=screen-256color", spoolBin, "--home", home)
	s.tmux(append(argv, args...)...)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	return s
}

func (s *tmuxScreen) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture is the pane's text, its history included when all is set; trailing blanks dropped.
func (s *tmuxScreen) capture(all bool) string {
	args := []string{"capture-pane", "-p"}
	if all {
		args = append(args, "-S", "-")
	}
	lines := strings.Split(s.tmux(args...), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// waitFor polls the pane's screen until ok holds. The bound on polls only guards against a hung
// program; nothing is timed.
func (s *tmuxScreen) waitFor(what string, ok func(screen string) bool) {
	s.t.Helper()
	for range 6000 {
		if ok(s.capture(false)) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Fatalf("never %s; pane:\n%s", what, s.capture(true))
}

// send types text as keys.
func (s *tmuxScreen) send(text string) { s.t.Helper(); s.tmux("send-keys", "-l", text) }

// key sends named keys (Enter, C-c, ...).
func (s *tmuxScreen) key(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys"}, keys...)...)
}

var wholeWord = func(w string) *regexp.Regexp { return regexp.MustCompile(`(^|[^0-9a-z])` + w + `([^0-9a-z]|$)`) }

// TestChatNarrowingReflows: narrowing a terminal that re-flows its lines (tmux here) while a
// reply's line streams with a long draft typed ahead, and again at the prompt with the draft in
// the editor, redraws the view at the new width with nothing of the old view left above it:
// every word of the reply and of the draft shows exactly once.
func TestChatNarrowingReflows(t *testing.T) {
	t.Parallel()
	g, url := startGatedModel(t)
	s := startTmux(t, 100, 20, t.TempDir(), "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "gated")
	s.waitFor("at the prompt", func(scr string) bool { return strings.HasSuffix(scr, "\n›") })
	// The chat at the bottom of the screen, as it is after a while: the rows a narrower terminal
	// adds above the cursor stay on the screen (tmux keeps the cursor's row and pushes what does
	// not fit into its scrollback, where nothing can erase it).
	s.send("/help")
	s.key("Enter")
	s.waitFor("the help, then the prompt", func(scr string) bool {
		return strings.Count(scr, "\n") >= 19 && strings.HasSuffix(scr, "\n›")
	})
	s.send("tell me")
	s.key("Enter")
	<-g.asked
	var reply, draft []string
	for i := 1; i <= 40; i++ {
		reply = append(reply, fmt.Sprintf("z%02d", i))
	}
	for i := 1; i <= 22; i++ {
		draft = append(draft, fmt.Sprintf("d%02d", i))
	}
	s.send(strings.Join(draft, " ")) // typed ahead while the reply streams: 90 columns with its mark
	g.deltas <- strings.Join(reply, " ")
	s.waitFor("the reply's line and the draft", func(scr string) bool {
		return strings.Contains(scr, "z40") && strings.Contains(scr, "d22")
	})

	once := func(when string, words []string) {
		t.Helper()
		all := s.capture(true)
		for _, w := range words {
			if n := len(wholeWord(w).FindAllString(all, -1)); n != 1 {
				t.Errorf("%s: %q shows %d times, want once:\n%s", when, w, n, all)
				return
			}
		}
	}
	// Each width cuts the old rows mid-word when the terminal re-flows them ("z1" | "3"); the
	// words whole again at the new width mean the view was redrawn.
	for _, c := range []struct {
		cols    int
		redrawn func(scr string) bool
	}{
		{50, func(scr string) bool { return wholeWord("z13").MatchString(scr) }},
		{120, func(scr string) bool { return regexp.MustCompile(`(?m)^z01 .* z30$`).MatchString(scr) }},
		{38, func(scr string) bool { return wholeWord("z10").MatchString(scr) }},
	} {
		s.tmux("resize-window", "-x", fmt.Sprint(c.cols), "-y", "30")
		s.waitFor(fmt.Sprintf("the view redrawn at %d columns", c.cols), c.redrawn)
		once(fmt.Sprintf("at %d columns while the reply streams", c.cols), append(reply, draft...))
	}

	g.deltas <- " end\n"
	g.deltas <- ""
	s.waitFor("the draft in the editor", func(scr string) bool { return strings.Contains(scr, "› d01") })
	// At 31 columns the editor's first row (37 columns) is cut after "d"; "d08" whole is the redraw.
	s.tmux("resize-window", "-x", "31", "-y", "30")
	s.waitFor("the editor redrawn at 31 columns", func(scr string) bool { return wholeWord("d08").MatchString(scr) })
	once("narrowed at the prompt", draft)
	s.key("C-c")
	s.key("C-d")
}
