package cli_test

import (
	"encoding/json"
	"fmt"
	"html"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
)

// TestRecordChat writes the README's terminal recording: a real spool chat on a pty (offline
// model, colour on) typing a message, streaming a markdown reply, approving two file writes
// with their diffs, and compacting. It writes docs/chat.cast (asciicast v2, playable with
// `asciinema play docs/chat.cast`) and docs/chat.svg (the last screen). Typing pauses are added
// to the recording's clock, not slept.
//
//	SPOOL_RECORD_DIR=$PWD/docs go test ./cli -run TestRecordChat
func TestRecordChat(t *testing.T) {
	dir := os.Getenv("SPOOL_RECORD_DIR")
	if dir == "" {
		t.Skip("writes the README's recording; set SPOOL_RECORD_DIR=$PWD/docs to make it")
	}
	const cols, rows = 100, 34
	url := startFakeLLM(t)
	home := t.TempDir()
	s, cmd := startPTYSize(t, cols, rows, home, nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "fake-model", "--context-length", "4000")
	var events []castEvent
	s.mu.Lock()
	s.cast, s.castStart = &events, time.Now()
	s.mu.Unlock()
	pause := func(d time.Duration) {
		s.mu.Lock()
		s.castShift += d
		s.mu.Unlock()
	}
	// Keys go one at a time, each once the last shows, so the recording has the typing.
	current := ""
	typeText := func(text string) {
		for _, r := range text {
			s.press(string(r))
			current += string(r)
			want := strings.TrimRight(current, " ")
			s.waitFor("the key showed", func(string) bool {
				return strings.HasSuffix(strings.ReplaceAll(s.screen(), "\n", ""), want)
			})
			pause(45 * time.Millisecond)
		}
	}
	newLine := func(key string) {
		s.press(key)
		current = ""
	}
	s.prompt()
	pause(time.Second)

	typeText("SAY ## What I will do")
	newLine(keyAltEnter)
	typeText("SAY 1. read **parser.go** with `read_file`")
	newLine(keyAltEnter)
	typeText("SAY 2. write *notes.md* with what I find")
	newLine(keyEnter)
	s.expect("write notes.md with what I find")
	s.prompt()
	pause(1500 * time.Millisecond)

	typeText(`CALL write_file {"path":"notes.md","content":"# Notes\n- parser: done\n"}`)
	newLine(keyEnter)
	s.waitFor("asked", func(string) bool { return lastLine(s.screen()) == "?" })
	pause(1500 * time.Millisecond)
	s.press("y") // one key answers
	s.expect(`write_file returned "created notes.md`)
	s.prompt()

	typeText(`CALL write_file {"path":"notes.md","content":"# Notes\n- parser: done, 3 bugs\n- lexer: next\n"}`)
	newLine(keyEnter)
	s.waitFor("asked", func(string) bool { return lastLine(s.screen()) == "?" })
	pause(2 * time.Second)
	s.press("y")
	s.expect(`write_file returned "updated notes.md`)
	s.prompt()
	shot := screenSVG(s, cols, rows) // the screenshot: the reply and the second diff
	pause(time.Second)

	// Long pasted messages fill the small window until the session compacts on its own.
	para := "The parser keeps a table of the tokens it has seen, the positions where each one starts, " +
		"and the rules that matched; a failed match rewinds to the last good position and tries the next rule. "
	for i := 0; i < 12 && !strings.Contains(s.text(), "\n(Compacted"); i++ {
		s.press(pasteStart + "SAY " + strings.Repeat(para, 2) + pasteEnd)
		pause(800 * time.Millisecond)
		newLine(keyEnter)
		s.prompt()
		pause(800 * time.Millisecond)
	}
	pause(2 * time.Second)
	typeText("/exit")
	newLine(keyEnter)
	waitExit(t, s, cmd)

	// asciicast v2: a header line, then [seconds, "o", data] per output.
	var b strings.Builder
	hdr, _ := json.Marshal(map[string]any{"version": 2, "width": cols, "height": rows, "timestamp": 1764590400,
		"title": "spool chat: typing, streaming markdown, a write approved with its diff, compaction",
		"env":   map[string]string{"TERM": "xterm-256color", "SHELL": "/bin/sh"}})
	b.Write(hdr)
	b.WriteByte('\n')
	for _, e := range events {
		line, _ := json.Marshal([]any{e.at.Seconds(), "o", e.data})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "chat.cast"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat.svg"), []byte(shot), 0o644); err != nil {
		t.Fatal(err)
	}
}

// screenSVG draws the emulator's scrollback tail and screen as an SVG: one text row a line,
// runs of cells with one style as tspans (foreground colour, bold, italic).
func screenSVG(s *ptyScreen, cols, rows int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lines [][]*uv.Cell
	if sb := s.vt.Scrollback(); sb != nil {
		for _, l := range sb.Lines() {
			row := make([]*uv.Cell, len(l))
			for i := range l {
				row[i] = &l[i]
			}
			lines = append(lines, row)
		}
	}
	for y := 0; y < s.vt.Height(); y++ {
		row := make([]*uv.Cell, s.vt.Width())
		for x := range row {
			row[x] = s.vt.CellAt(x, y)
		}
		lines = append(lines, row)
	}
	for len(lines) > 0 && strings.TrimSpace(cellText(lines[len(lines)-1])) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > rows+10 {
		lines = lines[len(lines)-rows-10:]
	}
	const cw, ch = 8.4, 18
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%d" font-family="DejaVu Sans Mono, Menlo, monospace" font-size="14">`+"\n", float64(cols)*cw+20, len(lines)*ch+20)
	b.WriteString(`<rect width="100%" height="100%" fill="#1e1e1e"/>` + "\n")
	for y, row := range lines {
		fmt.Fprintf(&b, `<text x="10" y="%d" xml:space="preserve" fill="#d4d4d4">`, 10+(y+1)*ch-4)
		var run strings.Builder
		var style uv.Style
		flush := func() {
			if run.Len() == 0 {
				return
			}
			attrs := ""
			if style.Fg != nil {
				attrs += fmt.Sprintf(` fill="%s"`, hexColor(style.Fg))
			}
			if style.Attrs&uv.AttrBold != 0 {
				attrs += ` font-weight="bold"`
			}
			if style.Attrs&uv.AttrItalic != 0 {
				attrs += ` font-style="italic"`
			}
			if style.Attrs&uv.AttrFaint != 0 {
				attrs += ` opacity="0.7"`
			}
			fmt.Fprintf(&b, "<tspan%s>%s</tspan>", attrs, html.EscapeString(run.String()))
			run.Reset()
		}
		for _, c := range row {
			if c == nil {
				continue
			}
			if !c.Style.Equal(&style) {
				flush()
				style = c.Style
			}
			if c.Content == "" && c.Width == 0 {
				continue
			}
			run.WriteString(cmpStr(c.Content, " "))
		}
		flush()
		b.WriteString("</text>\n")
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func cellText(row []*uv.Cell) string {
	var b strings.Builder
	for _, c := range row {
		if c != nil {
			b.WriteString(c.Content)
		}
	}
	return b.String()
}

func cmpStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}
