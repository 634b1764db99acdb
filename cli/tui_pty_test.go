package cli_test

import (
	"encoding/json"
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
	"syscall"
	"testing"
	"time"
)

// Keys as a terminal sends them.
const (
	keyEnter     = "\r"
	keyAltEnter  = "\x1b\r"
	keyLeft      = "\x1b[D"
	keyUp        = "\x1b[A"
	keyDown      = "\x1b[B"
	keyTab       = "\t"
	keyCtrlR     = "\x12"
	keyCtrlD     = "\x04"
	keyCtrlC     = "\x03"
	keyEsc       = "\x1b"
	pasteStart   = "\x1b[200~"
	pasteEnd     = "\x1b[201~"
	fakeModelArg = "fake-model"
)

// press sends keys to the program as typed.
func (s *ptyScreen) press(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		if _, err := s.tty.Write([]byte(k)); err != nil {
			s.t.Fatalf("press %q: %v", k, err)
		}
	}
}

// editorShows waits until the editor (the screen's last lines) holds want.
func (s *ptyScreen) editorShows(want string) {
	s.t.Helper()
	s.waitFor(fmt.Sprintf("the editor held %q", want), func(string) bool {
		return strings.HasSuffix(s.screen(), want)
	})
}

// userMessages are the user messages stored in a session, in order.
func userMessages(t *testing.T, home, sid string) []string {
	t.Helper()
	shown := decode[shownMessages](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show"))
	var users []string
	for _, m := range shown.Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	return users
}

var resumeLine = regexp.MustCompile(`Resume with: spool chat --resume (\S+)`)

// TestChatLineEditor drives the real binary's line editor through a pty: a bracketed paste of
// five lines is one message, Alt-Enter makes a line break, a 6,003-character line stays whole,
// arrow keys edit, Tab completes slash commands and session ids, history persists across
// processes and Ctrl-R finds an entry in it.
func TestChatLineEditor(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	model := []string{"chat", "--provider", "openai", "--base-url", url + "/v1", "--model", fakeModelArg}
	s, cmd := startPTY(t, home, nil, model...)
	s.prompt()

	paste := "line one\nline two\nline three\nline four\nline five"
	s.press(pasteStart + paste + pasteEnd)
	s.editorShows("› line one\n  line two\n  line three\n  line four\n  line five")
	s.press(keyEnter)
	s.expect(`you said "line one`)
	s.prompt()

	s.press("first", keyAltEnter, "second", keyEnter)
	s.expect("› first\n  second")
	s.prompt()

	// A long line (pasted: typing 6,003 keys one by one redraws the editor 6,003 times).
	long := strings.Repeat("0123456789", 600) + "end"
	s.press(pasteStart + long + pasteEnd)
	s.editorShows("› [pasted text #1: 1 line, 6003 characters]")
	s.press(keyEnter)
	s.expect("you said")
	s.prompt()

	// More lines than the editor widget holds (10,000), around typed text: one message, whole.
	var huge strings.Builder
	for i := range 12000 {
		fmt.Fprintf(&huge, "row %05d\n", i)
	}
	s.press("before ", pasteStart+huge.String()+pasteEnd, " after")
	s.editorShows("› before [pasted text #1: 12001 lines, 120000 characters] after")
	s.press(keyEnter)
	s.expect("  row 00019\n  … (11981 more lines)") // the scrollback shows the head of it
	s.expect("you said")
	s.prompt()

	s.press("helo", keyLeft, "l", keyEnter)
	s.expect("› hello")
	s.prompt()

	// Up recalls the last message, Down goes back to the (empty) new one.
	s.press(keyUp)
	s.editorShows("› hello")
	s.press(keyDown)
	s.editorShows("\n›")

	s.press("/us", keyTab)
	s.editorShows("› /usage")
	s.press(keyEnter)
	s.expect(" calls, ")
	s.prompt()

	s.press("/exit", keyEnter)
	waitExit(t, s, cmd)
	sid := resumeLine.FindStringSubmatch(s.text())
	if sid == nil {
		t.Fatalf("no resume line:\n%s", s.text())
	}
	want := []string{paste, "first\nsecond", long, "before " + huge.String() + " after", "hello"}
	if got := userMessages(t, home, sid[1]); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("stored user messages %q\nwant %q", got, want)
	}

	// A second process has the history: Up shows the newest entry, Ctrl-R finds the paste.
	s2, cmd2 := startPTY(t, home, nil, model...)
	s2.prompt()
	s2.press(keyUp)
	s2.editorShows("› /exit")
	s2.press(keyCtrlD) // not empty: Ctrl-D deletes forward, the chat stays
	s2.press(keyDown)
	s2.editorShows("\n›")
	s2.press(keyCtrlR, "line thr")
	s2.onScreen("(history search) `line thr': line one ⏎ line two ⏎ line three")
	s2.press(keyEnter)
	s2.editorShows("› line one\n  line two\n  line three\n  line four\n  line five")
	s2.press(keyEnter)
	s2.expect(`you said "line one`)
	s2.prompt()

	// Session ids complete after /resume.
	s2.press("/resume "+sid[1][:len(sid[1])-3], keyTab)
	s2.editorShows("› /resume " + sid[1])
	s2.press(keyEnter)
	s2.expect("Resumed " + sid[1])
	s2.prompt()
	s2.press(keyCtrlD)
	waitExit(t, s2, cmd2)

	raw, err := os.ReadFile(filepath.Join(home, "history"))
	if err != nil {
		t.Fatal(err)
	}
	b := string(raw)
	var entries []string
	for _, l := range strings.Split(strings.TrimSpace(b), "\n") {
		var e string
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("history line %q: %v", l, err)
		}
		entries = append(entries, e)
	}
	if len(entries) < 7 || entries[0] != paste || entries[2] != long {
		t.Errorf("history file entries %q", entries)
	}
}

// gatedModel is an OpenAI-compatible model whose reply streams one delta at a time, each only
// when the test sends it: the test sees what the screen shows between deltas.
type gatedModel struct {
	deltas chan string // "" ends the reply
	asked  chan struct{}
}

func startGatedModel(t testing.TB) (*gatedModel, string) {
	t.Helper()
	g := &gatedModel{deltas: make(chan string), asked: make(chan struct{}, 8)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(delta string, finish string) {
			d := map[string]any{"content": delta}
			c := map[string]any{"index": 0, "delta": d, "finish_reason": nil}
			if finish != "" {
				c["delta"] = map[string]any{}
				c["finish_reason"] = finish
			}
			b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gated", "choices": []any{c}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		}
		chunk("", "")
		g.asked <- struct{}{}
		for {
			select {
			case d := <-g.deltas:
				if d == "" {
					chunk("", "stop")
					b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gated", "choices": []any{},
						"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
					fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
					fl.Flush()
					return
				}
				chunk(d, "")
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return g, srv.URL
}

// TestChatStreamsMarkdownLive: with colour on, text shows as its deltas arrive (before its line
// ends), styled as markdown; a long unfinished line is printed once when it ends; an escape
// sequence in a delta is shown, not obeyed.
func TestChatStreamsMarkdownLive(t *testing.T) {
	t.Parallel()
	g, url := startGatedModel(t)
	home := t.TempDir()
	s, cmd := startPTY(t, home, nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "gated")
	s.prompt()
	s.press("tell me", keyEnter)
	<-g.asked

	g.deltas <- "Some **bold** te"
	s.onScreen("\nSome bold te\n")
	if !strings.Contains(s.raw(), "Some "+boldOn+"bold") {
		t.Errorf("the unfinished line is not styled: %q", s.raw())
	}
	g.deltas <- "xt and `code`\n- item one\n"
	s.expect("Some bold text and code\n• item one")
	if !strings.Contains(s.raw(), codeOn+"code"+codeOff) {
		t.Errorf("inline code not styled: %q", s.raw())
	}

	// A long line streamed in pieces is printed once, whole (narrowing the terminal meanwhile is
	// TestChatNarrowingReflows, in a terminal that re-flows).
	words := strings.Repeat("wrapping words ", 8) + "tail"
	g.deltas <- words
	s.onScreen("tail")
	g.deltas <- " end\n"
	g.deltas <- "esc \x1b[2J shown"
	s.onScreen(`esc \x1b[2J shown`)
	g.deltas <- ""
	s.prompt()

	txt := s.text()
	if n := strings.Count(txt, "tail end"); n != 1 {
		t.Errorf("the long line shows %d times, want once:\n%s", n, txt)
	}
	// Wrapped rows joined read the line once.
	if got, want := strings.Join(strings.Fields(between(txt, "• item one", "esc")), ""), strings.ReplaceAll(words+" end", " ", ""); got != want {
		t.Errorf("after the resize the line reads %q, want %q", got, want)
	}
	if strings.Contains(txt, "thinking…") {
		t.Errorf("a spinner was left behind:\n%s", txt)
	}
	if !strings.Contains(txt, "spool chat: type a message") {
		t.Errorf("the screen was cleared:\n%s", txt)
	}
	s.press(keyCtrlD)
	waitExit(t, s, cmd)
}

// between is the text of s after the first from and before the next to.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestChatResumePicker: /resume without an argument opens a picker of the sessions (branches
// under their root, message counts, relative times, cwd); typing filters, arrows move, Enter
// resumes, Esc closes without switching.
func TestChatResumePicker(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	run := []string{"run", "--provider", "openai", "--base-url", url + "/v1", "--model", fakeModelArg}
	ids := map[string]string{}
	for _, ask := range []string{"alpha question", "beta question", "gamma question"} {
		out := decode[struct {
			SessionID string `json:"session_id"`
		}](t, spool(t, home, append(run, "--json", ask)...).ok(t, "run"))
		ids[ask] = out.SessionID
	}
	model := []string{"chat", "--provider", "openai", "--base-url", url + "/v1", "--model", fakeModelArg}
	s, cmd := startPTY(t, home, nil, append(model, "--resume", ids["beta question"])...)
	s.prompt()
	s.press("/branch beta side", keyEnter)
	s.expect("the parent stays resumable.")
	s.prompt()

	s.press("/resume", keyEnter)
	scr := s.onScreen("Resume a session:")
	s.onScreen("msgs")
	scr = s.screen()
	for _, want := range []string{"Alpha question  " + ids["alpha question"] + " · 2 msgs · just now · ", "Gamma question", "└ beta side", "(current)"} {
		if !strings.Contains(scr, want) {
			t.Errorf("picker lacks %q:\n%s", want, scr)
		}
	}
	// The branch is listed right under its root.
	if !regexp.MustCompile(`Beta question[^\n]*\n\s+└ beta side`).MatchString(scr) {
		t.Errorf("branch not under its root:\n%s", scr)
	}
	s.press("gam")
	s.onScreen("(1 of 4")
	s.press(keyEnter)
	s.expect("Resumed " + ids["gamma question"])
	s.prompt()

	// Esc closes the picker and stays on the session.
	s.press("/resume", keyEnter)
	s.onScreen("Resume a session:")
	s.press(keyDown, keyEsc)
	s.prompt()
	s.press("/exit", keyEnter)
	waitExit(t, s, cmd)
	if !strings.Contains(s.text(), "Resume with: spool chat --resume "+ids["gamma question"]) {
		t.Errorf("Esc switched sessions:\n%s", s.text())
	}
}

// TestChatEditorEscapes: Shift-Enter (as a terminal with the kitty keyboard protocol sends it)
// and a trailing backslash make line breaks, /paste collects lines until Ctrl-D, and Ctrl-G
// edits the message in $EDITOR (which gets the terminal in its ordinary mode); each ends as one
// message.
func TestChatEditorEscapes(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	editor := filepath.Join(home, "editor.sh")
	// The editor also notes the terminal's mode it got: the chat gives it back cooked (line
	// editing and echo on), not in the chat's raw mode.
	modes := filepath.Join(home, "stty.txt")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nstty -a > "+modes+" 2>&1\nprintf 'written in the editor\\nsecond line\\n' > \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, cmd := startPTY(t, home, []string{"EDITOR=" + editor, "VISUAL="}, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", fakeModelArg)
	s.prompt()

	s.press("shift", "\x1b[13;2u", "enter")
	s.editorShows("› shift\n  enter")
	s.press(keyEnter)
	s.prompt()

	s.press(`back\`, keyEnter, "slash", keyEnter)
	s.expect("› back\n  slash")
	s.prompt()

	s.press("/paste", keyEnter)
	s.onScreen("(paste mode: Enter is a new line, Ctrl-D sends, Esc leaves)")
	s.press("pasted one", keyEnter, "pasted two", keyCtrlD)
	s.expect("› pasted one\n  pasted two")
	s.prompt()

	s.press("draft", "\x07") // Ctrl-G
	s.editorShows("› written in the editor\n  second line")
	if b, err := os.ReadFile(modes); err != nil {
		t.Errorf("the editor did not run stty: %v", err)
	} else if m := string(b); !regexp.MustCompile(`(^|\s)icanon\b`).MatchString(m) || !regexp.MustCompile(`(^|\s)echo\b`).MatchString(m) {
		t.Errorf("the editor got the terminal in raw mode:\n%s", m)
	}
	s.press(keyEnter)
	s.expect("› written in the editor\n  second line")
	s.prompt()

	s.press("/exit", keyEnter)
	waitExit(t, s, cmd)
	sid := resumeLine.FindStringSubmatch(s.text())
	if sid == nil {
		t.Fatalf("no resume line:\n%s", s.text())
	}
	want := []string{"shift\nenter", "back\nslash", "pasted one\npasted two", "written in the editor\nsecond line"}
	if got := userMessages(t, home, sid[1]); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("stored user messages %q\nwant %q", got, want)
	}
}

// TestChatLeavesOnSIGTERM: a termination signal ends the chat with the terminal restored (the
// editor's modes switched off), not a chat that goes on in raw mode.
func TestChatLeavesOnSIGTERM(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	s, cmd := startPTY(t, t.TempDir(), nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", fakeModelArg)
	s.prompt()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("SIGTERM: exit %v, want status 130", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("spool chat did not leave on SIGTERM; screen:\n%s", s.text())
	}
	<-s.done
	if raw := s.raw(); !strings.Contains(raw[strings.LastIndex(raw, "\x1b[?2004h"):], "\x1b[?2004l") {
		t.Errorf("bracketed paste left on after exit: %q", raw[max(len(raw)-200, 0):])
	}
}

// TestChatPrintTallerThanTheScreen: output taller than the terminal (/help on 8 rows) scrolls
// into the scrollback right under the echoed message, with no copy of the editor or blank rows
// left between them.
func TestChatPrintTallerThanTheScreen(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	s, cmd := startPTYSize(t, 80, 8, t.TempDir(), nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", fakeModelArg)
	s.prompt()
	s.typeLine("/help")
	s.expect("/exit                leave")
	s.prompt()
	if txt := s.text(); !strings.Contains(txt, "\n› /help\nCommands:\n  /new ") || strings.Count(txt, "\n›") != 2 {
		t.Errorf("the scrollback between the message and its output:\n%s", txt)
	}
	s.press(keyCtrlD)
	waitExit(t, s, cmd)
}

// TestChatPasteWithCRLineEnds pastes as real terminals do (line ends sent as CR, or CR LF): a
// small paste and a big one (60 lines, 5,871 characters) each become one message stored with LF
// line ends, and the big one's placeholder counts its lines.
func TestChatPasteWithCRLineEnds(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	s, cmd := startPTY(t, home, nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", fakeModelArg)
	s.prompt()

	rows := make([]string, 60)
	for i := range rows {
		rows[i] = fmt.Sprintf("%02d %s", i, strings.Repeat("x", 94))
	}
	rows[59] = rows[59][:len(rows[59])-8] // 60 rows, 5,871 characters with their line ends
	bigPaste := strings.Join(rows, "\n")
	if n := len(bigPaste); n != 5871 {
		t.Fatalf("the big paste has %d characters", n)
	}
	cases := []struct {
		name, sent, stored, editor string
	}{
		{"small CR", "one\rtwo\rthree", "one\ntwo\nthree", "› one\n  two\n  three"},
		{"small CR LF", "one\r\ntwo", "one\ntwo", "› one\n  two"},
		{"big CR", strings.ReplaceAll(bigPaste, "\n", "\r"), bigPaste, "› [pasted text #1: 60 lines, 5871 characters]"},
		{"big CR LF", strings.ReplaceAll(bigPaste, "\n", "\r\n"), bigPaste, "› [pasted text #1: 60 lines, 5871 characters]"},
	}
	for _, c := range cases {
		s.press(pasteStart + c.sent + pasteEnd)
		s.editorShows(c.editor)
		s.press(keyEnter)
		s.expect("you said")
		s.prompt()
	}
	s.press("/exit", keyEnter)
	waitExit(t, s, cmd)
	sid := resumeLine.FindStringSubmatch(s.text())
	if sid == nil {
		t.Fatalf("no resume line:\n%s", s.text())
	}
	got := userMessages(t, home, sid[1])
	if len(got) != len(cases) {
		t.Fatalf("stored %d user messages, want %d: %q", len(got), len(cases), got)
	}
	for i, c := range cases {
		if got[i] != c.stored {
			t.Errorf("%s: stored %q, want %q", c.name, got[i], c.stored)
		}
	}
}

// TestChatRendersBlocks drives a reply at 80 columns: blank lines between blocks stay, a pipe
// table is drawn with its columns aligned by display width, a CJK bullet wraps between
// characters under its text (the bullet never alone on a row), the spinner counts the seconds,
// and /search shows its hits highlighted, without the store's >>> <<< markers.
func TestChatRendersBlocks(t *testing.T) {
	t.Parallel()
	g, url := startGatedModel(t)
	s, cmd := startPTYSize(t, 80, 40, t.TempDir(), nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "gated")
	s.prompt()
	s.press("compare the tools", keyEnter)
	<-g.asked
	s.waitFor("the spinner with its seconds", func(scr string) bool {
		return regexp.MustCompile(`thinking… \d+s`).MatchString(scr)
	})
	cjk := strings.Repeat("使用正则表达式搜索文本", 8) // 176 columns, no spaces
	g.deltas <- "Intro paragraph.\n\n| Tool | 用途 |\n|---|---|\n| grep | 搜索 |\n"
	g.deltas <- "| sed | 编辑文本 |\n\n- " + cjk + "\n\nEnd of reply.\n"
	g.deltas <- ""
	s.expect("End of reply.")
	s.prompt()
	txt := s.text()
	for _, want := range []string{"Intro paragraph.\n\nTool │ 用途\n─────┼─────────\ngrep │ 搜索\nsed  │ 编辑文本\n\n• 使用",
		"\n\nEnd of reply."} {
		if !strings.Contains(txt, want) {
			t.Errorf("the reply lacks %q:\n%s", want, txt)
		}
	}
	bullet := between(txt, "• ", "End of reply.")
	rows := strings.Split(strings.TrimRight(bullet, "\n"), "\n")
	if len(rows) != 3 || strings.Join(strings.Fields(bullet), "") != cjk {
		t.Errorf("the CJK bullet reads %q in %d rows, want the text in 3", bullet, len(rows))
	}
	for _, r := range rows[1:] {
		if !strings.HasPrefix(r, "  使") && !strings.HasPrefix(r, "  ") {
			t.Errorf("continuation row %q does not hang under the bullet's text", r)
		}
	}
	s.typeLine("/search paragraph")
	s.expect("assistant: Intro")
	if scr := s.text(); strings.Contains(scr, ">>>") || strings.Contains(scr, "<<<") {
		t.Errorf("/search shows raw markers:\n%s", scr)
	}
	if !strings.Contains(s.raw(), "\x1b[1;33mparagraph") {
		t.Errorf("/search does not highlight the match: %q", s.raw())
	}
	s.press(keyCtrlD)
	waitExit(t, s, cmd)
}

// TestChatRetryNoticeInPlace: a rate-limited call's retry shows on the spinner's row, replaced
// when the answer streams; no retry lines are left in the scrollback.
func TestChatRetryNoticeInPlace(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t, "-fail", "rate_limit", "-fail-count", "1")
	s, cmd := startPTYSize(t, 80, 24, t.TempDir(), nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", fakeModelArg)
	s.prompt()
	s.press("SAY answered after the retry", keyEnter)
	s.waitFor("the retry notice on the spinner row", func(scr string) bool {
		return regexp.MustCompile(`rate_limit \(HTTP 429\); retry 1 in [0-9.]+m?s… \d+s`).MatchString(scr)
	})
	s.expect("answered after the retry")
	s.prompt()
	if txt := s.text(); strings.Contains(txt, "retry 1") || strings.Contains(txt, "rate_limit") {
		t.Errorf("retry notices left in the scrollback:\n%s", txt)
	}
	s.press(keyCtrlD)
	waitExit(t, s, cmd)
}

// TestChatClearScreen: Ctrl-L empties the screen and keeps the draft in the editor; /clear
// empties it too and starts a new session, the old one left resumable.
func TestChatClearScreen(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	s, cmd := startPTY(t, home, nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", fakeModelArg)
	s.prompt()
	s.press("SAY the first answer", keyEnter)
	s.expect("the first answer")
	s.prompt()

	s.press("a draft", "\x0c") // Ctrl-L
	s.waitFor("a cleared screen with the draft", func(string) bool {
		return s.screen() == "› a draft"
	})
	s.press(keyCtrlC) // clears the draft
	s.editorShows("›")

	s.press("/clear", keyEnter)
	s.waitFor("a cleared screen after /clear", func(string) bool {
		scr := s.screen()
		return !strings.Contains(scr, "the first answer") && strings.Contains(scr, "New session: it starts with your next message (/resume ")
	})
	s.press("SAY the second answer", keyEnter)
	s.expect("the second answer")
	s.prompt()
	s.press("/exit", keyEnter)
	waitExit(t, s, cmd)
	ls := decode[[]struct {
		ID string `json:"id"`
	}](t, spool(t, home, "sessions", "list", "--json").ok(t, "list"))
	if len(ls) != 2 {
		t.Fatalf("want the cleared session and the new one, got %+v", ls)
	}
}
