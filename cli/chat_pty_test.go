package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"github.com/spoolhq/spool/provider/fake"
)

// ptyScreen is what a person at the terminal would see: everything the program wrote to the
// pty, read by a goroutine that ends when the program closes its side, is fed to a terminal
// emulator (charmbracelet/x/vt) whose screen and scrollback are what the tests read. The
// emulator's answers to the program's queries go back to the program, as a terminal's would.
type ptyScreen struct {
	t    testing.TB
	tty  *os.File
	mu   sync.Mutex
	buf  bytes.Buffer
	vt   *vt.Emulator
	seen int // expect looks only past what earlier expects matched
	done chan struct{}
	// probe, when set, is checked against the screen after every read from the program; the
	// read that makes it true closes probed at that moment (the latency benchmarks' clock).
	probe  func(screen string) bool
	probed chan time.Time
	// cast, when set, records every read as an asciicast event at its time since castStart
	// plus castShift (the recording's typing pauses).
	cast      *[]castEvent
	castStart time.Time
	castShift time.Duration
}

// castEvent is one asciicast v2 output event.
type castEvent struct {
	at   time.Duration
	data string
}

func (s *ptyScreen) read() {
	defer close(s.done)
	b := make([]byte, 4096)
	for {
		n, err := s.tty.Read(b)
		s.mu.Lock()
		s.buf.Write(b[:n])
		s.vt.Write(b[:n])
		if s.cast != nil && n > 0 {
			*s.cast = append(*s.cast, castEvent{at: time.Since(s.castStart) + s.castShift, data: string(b[:n])})
		}
		if s.probe != nil && s.probe(s.vt.String()) {
			s.probed <- time.Now()
			s.probe = nil
		}
		s.mu.Unlock()
		if err != nil {
			if pw, ok := s.vt.InputPipe().(*io.PipeWriter); ok {
				pw.Close() // ends answer
			}
			return // EIO once the program exited
		}
	}
}

// answer forwards the emulator's replies (cursor position, modes) to the program.
func (s *ptyScreen) answer() {
	b := make([]byte, 256)
	for {
		n, err := s.vt.Read(b)
		if n > 0 {
			s.tty.Write(b[:n])
		}
		if err != nil {
			return
		}
	}
}

// text is the screen so far as a person reads it: the scrollback, then the screen, each line
// without trailing blanks, trailing empty lines dropped.
func (s *ptyScreen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lines []string
	if sb := s.vt.Scrollback(); sb != nil {
		for _, l := range sb.Lines() {
			lines = append(lines, strings.TrimRight(l.String(), " "))
		}
	}
	for _, l := range strings.Split(s.vt.String(), "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// screen is what the terminal shows now (no scrollback), trailing blanks dropped.
func (s *ptyScreen) screen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := strings.Split(s.vt.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// raw is every byte the program wrote, escape sequences and all.
func (s *ptyScreen) raw() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// The sequences spool draws with: the spinner's line clear and the markdown styles.
const (
	clearLine = "\r\x1b[2K"
	boldOn    = "\x1b[1m"
	boldOff   = "\x1b[22m"
	codeOn    = "\x1b[36m"
	codeOff   = "\x1b[39m"
)

// waitFor waits until ok holds for the screen (scrollback included) and returns that screen.
// The deadline only guards against a hung program; it measures nothing.
func (s *ptyScreen) waitFor(what string, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		txt := s.text()
		if ok(txt) {
			return txt
		}
		select {
		case <-s.done:
			if txt := s.text(); ok(txt) {
				return txt
			}
			s.t.Fatalf("the program ended before %s; screen:\n%s", what, s.text())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("never %s; screen:\n%s", what, txt)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expect waits until want appears past the last match and returns the screen up to it.
func (s *ptyScreen) expect(want string) string {
	s.t.Helper()
	var from, at int
	s.waitFor(fmt.Sprintf("showed %q", want), func(txt string) bool {
		s.seen = min(s.seen, len(txt)) // the view at the bottom can shrink
		i := strings.Index(txt[s.seen:], want)
		if i < 0 {
			return false
		}
		from, at = s.seen, s.seen+i+len(want)
		s.seen = at
		return true
	})
	txt := s.text()
	return txt[from:min(at, len(txt))]
}

// arm sets the probe: the returned channel gets the time of the read after which ok holds.
func (s *ptyScreen) arm(ok func(screen string) bool) <-chan time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probed = make(chan time.Time, 1)
	s.probe = ok
	return s.probed
}

// onScreen waits until want shows on the screen now (the live view: spinner, question, picker)
// and leaves the scrollback position of expect alone, since the view is redrawn in place.
func (s *ptyScreen) onScreen(want string) string {
	s.t.Helper()
	s.waitFor(fmt.Sprintf("showed %q on screen", want), func(string) bool { return strings.Contains(s.screen(), want) })
	return s.screen()
}

// prompt waits until the editor waits for a message: its last line is the bare prompt.
func (s *ptyScreen) prompt() {
	s.t.Helper()
	s.waitFor("back at an empty prompt", func(txt string) bool {
		return strings.HasSuffix(txt, "\n›") || txt == "›"
	})
	// What comes next (the echo of the next message) is drawn where the editor is now.
	s.seen = max(len(s.text())-len("›"), 0)
}

// typeLine types a line and presses Enter, as a person would.
func (s *ptyScreen) typeLine(line string) {
	s.t.Helper()
	if _, err := s.tty.Write([]byte(line + "\r")); err != nil {
		s.t.Fatalf("type %q: %v", line, err)
	}
}

// startPTY runs spool with a pseudo-terminal as its stdin, stdout and stderr (and controlling
// terminal, so Ctrl-C is a real SIGINT from the line discipline).
func startPTY(t testing.TB, home string, env []string, args ...string) (*ptyScreen, *exec.Cmd) {
	t.Helper()
	return startPTYSize(t, 160, 50, home, env, args...)
}

// startPTYSize is startPTY on a terminal of cols × rows.
func startPTYSize(t testing.TB, cols, rows int, home string, env []string, args ...string) (*ptyScreen, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(spoolBin, append([]string{"--home", home}, args...)...)
	cmd.Env = append(append(cleanEnv(), "TERM=xterm-256color"), env...)
	// The approved terminal command runs here, not in the source tree; one directory per home,
	// so --continue (the most recent session of this directory) finds the earlier process's.
	cmd.Dir = filepath.Join(home, "work")
	if err := os.MkdirAll(cmd.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)})
	if err != nil {
		t.Skipf("cannot allocate a pseudo-terminal here (%v); the test needs /dev/ptmx", err)
	}
	s := &ptyScreen{t: t, tty: tty, vt: vt.NewEmulator(cols, rows), done: make(chan struct{})}
	s.vt.SetScrollbackSize(100000)
	go s.read()
	go s.answer()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = tty.Close()
		<-s.done
	})
	return s, cmd
}

// waitExit waits for the program to leave by itself (and its output to be read to the end)
// and fails unless it exited 0.
func waitExit(t testing.TB, s *ptyScreen, cmd *exec.Cmd) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("spool chat ended with %v; screen:\n%s", err, s.text())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("spool chat did not exit; screen:\n%s", s.text())
	}
	// What the program wrote last (the resume line) may still be in the pty: the reader sees
	// all of it before it reads the end.
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the pty never reported the end after spool chat exited; screen:\n%s", s.text())
	}
}

// TestChatThroughPTY drives the real binary on a pseudo-terminal: typed turns with streamed
// replies, a terminal command approved at the prompt, the slash commands, Ctrl-C during a slow
// model call, /exit; then a second process resumes with --continue and leaves on Ctrl-D.
func TestChatThroughPTY(t *testing.T) {
	t.Parallel()
	slowSeen := make(chan struct{})
	var once sync.Once
	h := fake.New(fake.Config{}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("FAULT slow")) {
			once.Do(func() { close(slowSeen) })
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	home := t.TempDir()
	model := []string{"chat", "--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "fake-model"}

	s, cmd := startPTY(t, home, nil, model...)
	s.expect("spool chat: type a message, /help for commands, Ctrl-D to leave.")
	s.prompt()

	s.typeLine("/help")
	s.expect("/undo                take back your last message")
	s.prompt()

	s.typeLine("hello from a terminal")
	s.expect(`you said "hello from a terminal".`)
	s.expect("[fake-model · ")
	s.prompt()

	s.typeLine(`CALL terminal {"command":"echo shell-was-here"}`)
	s.expect("⚙ terminal ")
	s.expect("? [y/N/a=always \"echo shell-was-here …\" without operators this session]")
	s.press("y")       // one key answers, no Enter
	s.expect(" yes\n") // the scrollback keeps the answer
	s.expect(`terminal returned "shell-was-here`)
	s.prompt()

	s.typeLine("/title pty chat")
	s.expect(`is now "pty chat".`)

	s.typeLine("/usage")
	s.expect(" calls, ")
	s.expect("prompt tokens (")

	// Replies are rendered as markdown on a terminal: the stars become bold.
	s.typeLine("SAY a **bold** claim with `code`")
	s.expect("\na bold claim with code\n")
	s.prompt()
	if !strings.Contains(s.raw(), "a "+boldOn+"bold"+boldOff+" claim with "+codeOn+"code"+codeOff) {
		t.Errorf("no bold or code styling on the terminal:\n%q", s.raw())
	}

	s.typeLine("SAY this one goes away")
	s.expect("\nthis one goes away\n")
	s.prompt()
	s.typeLine("/undo")
	s.expect(`Undid your last message "SAY this one goes away" and 1 message(s) after it.`)

	s.typeLine("/branch pty side")
	branched := s.expect("; the parent stays resumable.")
	m := regexp.MustCompile(`Branched (\S+) into (\S+);`).FindStringSubmatch(branched)
	if m == nil {
		t.Fatalf("no branch ids in %q", branched)
	}
	parent, child := m[1], m[2]

	s.typeLine("/sessions")
	s.expect("* " + child + "  pty side")
	s.expect("  " + parent + "  pty chat")
	s.prompt()

	// Ctrl-C while the model is thinking interrupts the turn, not the chat.
	s.typeLine("FAULT slow 60s")
	select {
	case <-slowSeen:
	case <-time.After(30 * time.Second):
		t.Fatalf("the slow request never reached the model; screen:\n%s", s.text())
	}
	// While the model thinks a spinner turns on one line; Ctrl-C stops and erases it.
	s.onScreen("⠋ thinking…")
	if _, err := s.tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	s.expect("(interrupted: what was said is kept)")
	s.prompt()
	if strings.Contains(s.text(), "thinking…") {
		t.Errorf("the spinner was left on the screen:\n%s", s.text())
	}
	s.typeLine("SAY still here")
	s.expect("\nstill here\n")
	s.typeLine("/exit")
	waitExit(t, s, cmd)

	// The branch keeps what was said on it, the interrupted ask included; the undone turn is gone.
	branch := decode[shownMessages](t, spool(t, home, "sessions", "show", child, "--json").ok(t, "show branch"))
	var users []string
	for _, msg := range branch.Messages {
		if msg.Role == "user" {
			users = append(users, msg.Content)
		}
	}
	want := []string{"hello from a terminal", `CALL terminal {"command":"echo shell-was-here"}`, "SAY a **bold** claim with `code`", "FAULT slow 60s", "SAY still here"}
	if strings.Join(users, "|") != strings.Join(want, "|") {
		t.Errorf("user messages on the branch %q, want %q", users, want)
	}

	// A second process resumes the most recent session with a recap; Ctrl-D leaves.
	s2, cmd2 := startPTY(t, home, nil, append(model, "--continue")...)
	s2.expect("Resumed " + child + ` "pty side": `)
	s2.expect("last answer: still here")
	s2.prompt()
	if _, err := s2.tty.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	waitExit(t, s2, cmd2)
	if strings.Contains(s2.text(), "spool: ") {
		t.Errorf("errors on the resumed chat:\n%s", s2.text())
	}
}

// TestChatStylingOnlyOnATerminal: with NO_COLOR the terminal gets the reply as typed (the
// spinner stays: it is motion, not colour), and piped output carries neither spinner nor styling.
func TestChatStylingOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	model := []string{"chat", "--provider", "openai", "--base-url", url + "/v1", "--model", "fake-model"}
	replies := []string{"# A **bold** title", "**bold** text, `code` and [a link](https://example.com)", "- a bullet"}

	var stdin, typed strings.Builder
	for _, r := range replies {
		stdin.WriteString("SAY " + r + "\n")
		typed.WriteString(r + "\n")
	}
	piped := spoolIn(t, t.TempDir(), stdin.String(), model...).ok(t, "piped chat")
	if piped.stdout != typed.String() {
		t.Errorf("piped chat stdout %q, want the replies byte for byte %q", piped.stdout, typed.String())
	}
	if strings.Contains(piped.stdout+piped.stderr, "\x1b") || strings.Contains(piped.stdout+piped.stderr, "thinking") {
		t.Errorf("escape sequences or a spinner in piped output:\nstdout %q\nstderr %q", piped.stdout, piped.stderr)
	}

	s, cmd := startPTY(t, t.TempDir(), []string{"NO_COLOR=1"}, model...)
	for _, r := range replies {
		s.prompt()
		s.typeLine("SAY " + r)
		s.expect("\n" + r + "\n")
	}
	s.prompt()
	if _, err := s.tty.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	waitExit(t, s, cmd)
	if strings.Contains(s.raw(), boldOn) || strings.Contains(s.raw(), codeOn) {
		t.Errorf("NO_COLOR terminal: styling in %q", s.raw())
	}
}

// TestChatAlwaysIsNarrow: "always" for a command with shell operators covers that exact
// command only, so the model cannot reuse it for another (the same first word, an operator and
// a second command); "always" for a simple command covers its program and subcommand, not the
// program's other subcommands. A question refused is a command not run.
func TestChatAlwaysIsNarrow(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	s, cmd := startPTY(t, home, []string{"NO_COLOR=1"}, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "fake-model")
	created := filepath.Join(home, "work", "FILE")
	steps := []struct {
		command, question, key, result string
	}{
		{"ls -la && echo done", "[y/N/a=always this exact command this session]", "a", `terminal returned "`},
		{"ls >/dev/null; touch FILE", "Run `ls >/dev/null; touch FILE` in ", "n", "the user said no"},
		{"ls -la && echo done", "", "", `terminal returned "`}, // allowed: no question
		{"git log --oneline", `[y/N/a=always "git log …" without operators this session]`, "a", `terminal returned "`},
		{"git log -p", "", "", `terminal returned "`},
		{"git push", "Run `git push` in ", "n", "the user said no"},
	}
	for _, st := range steps {
		s.prompt()
		s.typeLine(fmt.Sprintf(`CALL terminal {"command":%q}`, st.command))
		if st.question != "" {
			s.expect(st.question)
			s.press(st.key)
		}
		s.expect(st.result)
	}
	s.prompt()
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("the refused command ran: %s exists (%v)", created, err)
	}
	if n := strings.Count(s.text(), "[y/N/a=always"); n != 4 {
		t.Errorf("asked %d times, want 4 (the two allowed repeats ask nothing):\n%s", n, s.text())
	}
	if _, err := s.tty.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	waitExit(t, s, cmd)
}

// TestChatApprovals: a write shows its diff and asks; one key answers (no Enter): "n" refuses
// and the model is told, a key that is no answer only says which keys are, "a" allows that tool
// for the rest of the session; Ctrl-C at the prompt refuses at once and the next line typed is
// a message, not an answer; a stored escape sequence in the question is shown, not obeyed.
func TestChatApprovals(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	s, cmd := startPTY(t, home, []string{"NO_COLOR=1"}, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "fake-model")
	s.prompt()

	s.typeLine(`CALL write_file {"path":"notes.txt","content":"one\ntwo\n"}`)
	s.expect("+++ notes.txt\n@@ -1,0 +1,2 @@\n+one\n+two\n")
	s.expect("Write ")
	s.expect("notes.txt? [y/N/a=always write_file this session]")
	s.onScreen("(one key: y, n or a; Ctrl-C refuses)")
	s.press("x")
	s.onScreen("press y (yes), n (no) or a (always)")
	s.press("n")
	s.expect(" no\n")
	s.expect(`write_file returned "`)
	s.expect("the user said no")
	s.prompt()
	if _, err := os.Stat(filepath.Join(home, "work", "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("the refused write happened: %v", err)
	}

	s.typeLine(`CALL write_file {"path":"notes.txt","content":"one\ntwo\n"}`)
	s.expect("notes.txt? [y/N/a=always write_file this session]")
	s.press("a")
	s.expect(" always\n")
	s.expect(`write_file returned "created notes.txt`)
	s.prompt()

	// Allowed for the session now: the second write does not ask.
	s.typeLine(`CALL write_file {"path":"notes.txt","content":"one\nTWO\n"}`)
	s.expect(`write_file returned "updated notes.txt`)
	s.prompt()
	if n := strings.Count(s.text(), "[y/N/a=always write_file"); n != 2 {
		t.Errorf("asked %d times for write_file, want twice (refused, then always):\n%s", n, s.text())
	}

	s.typeLine(`CALL terminal {"command":"echo \u001b[2Jcleared"}`)
	s.expect("Run `echo \\x1b[2Jcleared` in ")
	if _, err := s.tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	s.expect("(interrupted: what was said is kept)")
	s.prompt()
	s.typeLine("SAY the next line is a message")
	s.expect("\nthe next line is a message\n")
	s.prompt()
	// Ctrl-C at an idle prompt leaves with the shell's interrupt status and says how to come back.
	if _, err := s.tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	s.expect("Resume with: spool chat --resume ")
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("Ctrl-C at the prompt: exit %v, want status 130", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("spool chat did not leave on Ctrl-C; screen:\n%s", s.text())
	}
	if strings.Contains(s.raw(), "\x1b[2J") {
		t.Error("an escape sequence from the model reached the terminal raw")
	}
}
