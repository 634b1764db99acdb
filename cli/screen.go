package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"
)

// screen is the chat's terminal: raw mode and the terminal modes the editor needs, and the
// live view drawn at the bottom the moment it changes. Bubble Tea's own renderer draws on a
// frame clock (at most 120 frames a second), so a key or a delta waited up to 8.3 ms for the
// next frame before anything was written; the program runs without it (tea.WithoutRenderer)
// and the model draws through a screen after every message it handles. The drawing is
// ultraviolet's (the cell renderer Bubble Tea itself uses): the view is diffed cell by cell
// against what the terminal shows, so a key costs a few bytes.
//
// A screen is used from the program's goroutine only (Update, and the $EDITOR escape, which
// runs there), and by close after the program ended.
type screen struct {
	in      *os.File // raw mode is set on it
	out     io.Writer
	outFd   uintptr
	env     []string
	profile colorprofile.Profile
	saved   *term.State // the terminal's mode before raw, restored by stop

	buf     bytes.Buffer // the renderer writes here; draw copies it to out in one write
	pending bytes.Buffer // printed lines not yet written: the next draw writes them first
	scr     *uv.TerminalRenderer
	cells   uv.ScreenBuffer

	width, height int
	drawn         bool // something was drawn since the last reset
	last          string
	cursor        bool // the cursor was shown at curX, curY
	curX, curY    int
}

// The terminal modes the editor turns on: bracketed paste (a paste is one event), and key
// disambiguation (modifyOtherKeys and the kitty protocol's first level) so Shift-Enter and
// Alt-Enter are told from Enter.
var (
	termModesOn  = ansi.SetModeBracketedPaste + ansi.SetModifyOtherKeys2 + ansi.PushKittyKeyboard(ansi.KittyDisambiguateEscapeCodes)
	termModesOff = ansi.ResetModifyOtherKeys + ansi.PopKittyKeyboard(1) + ansi.ResetModeBracketedPaste + ansi.SetModeTextCursorEnable
)

func newScreen(in io.Reader, out io.Writer, env []string, width, height int) *screen {
	s := &screen{out: out, env: env, width: width, height: height}
	if f, ok := in.(*os.File); ok {
		s.in = f
	}
	if f, ok := out.(*os.File); ok {
		s.outFd = f.Fd()
	}
	s.profile = colorprofile.Detect(out, env)
	s.reset()
	return s
}

// size is the terminal's size now (ok false when it cannot be read).
func (s *screen) size() (w, h int, ok bool) {
	if s.outFd == 0 {
		return 0, 0, false
	}
	w, h, err := term.GetSize(int(s.outFd))
	return w, h, err == nil && w > 0 && h > 0
}

// start puts the terminal in raw mode and turns the editor's modes on.
func (s *screen) start() error {
	if s.in != nil && term.IsTerminal(int(s.in.Fd())) {
		st, err := term.MakeRaw(int(s.in.Fd()))
		if err != nil {
			return fmt.Errorf("raw mode: %w", err)
		}
		s.saved = st
	}
	_, err := io.WriteString(s.out, termModesOn)
	return err
}

// stop leaves the view's last state on the screen minus the editor line the cursor is on,
// turns the modes off and restores the terminal's mode (the chat's goodbye follows).
func (s *screen) stop() error {
	s.buf.Write(s.pending.Bytes())
	s.pending.Reset()
	if s.drawn {
		s.scr.MoveTo(0, max(s.cells.Height()-1, 0))
		_ = s.scr.Flush()
		s.buf.WriteString(ansi.EraseScreenBelow)
	}
	s.buf.WriteString(termModesOff)
	_, err := s.out.Write(s.buf.Bytes())
	s.buf.Reset()
	s.reset()
	if s.saved != nil {
		if rerr := term.Restore(int(s.in.Fd()), s.saved); err == nil {
			err = rerr
		}
		s.saved = nil
	}
	return err
}

// suspend erases the view and gives the terminal back as it was (for $EDITOR); resume takes it
// again and draws the view anew.
func (s *screen) suspend() {
	if s.drawn {
		s.scr.MoveTo(0, 0)
		_ = s.scr.Flush()
		s.buf.WriteString(ansi.EraseScreenBelow)
	}
	s.drawn = false
	_ = s.stop()
}

func (s *screen) resume() {
	_ = s.start()
	if w, h, ok := s.size(); ok {
		s.width, s.height = w, h
	}
}

// reset forgets what the terminal shows: the next draw draws all of the view from the cursor's
// line down.
func (s *screen) reset() {
	s.buf.Reset()
	scr := uv.NewTerminalRenderer(&s.buf, s.env)
	scr.SetColorProfile(s.profile)
	scr.SetRelativeCursor(true) // inline: the view's top line is row 0, wherever it is
	scr.SetFullscreen(false)
	scr.SetTabStops(-1)
	scr.SetScrollOptim(true)
	s.scr = scr
	s.cells = uv.NewScreenBuffer(s.width, 0)
	s.drawn = false
}

// suspendedCmd runs a program (the $EDITOR escape) with the terminal given back to it.
type suspendedCmd struct {
	cmd *exec.Cmd
	scr *screen
}

func (c *suspendedCmd) SetStdin(r io.Reader)  { c.cmd.Stdin = r }
func (c *suspendedCmd) SetStdout(w io.Writer) { c.cmd.Stdout = w }
func (c *suspendedCmd) SetStderr(w io.Writer) { c.cmd.Stderr = w }
func (c *suspendedCmd) Run() error {
	c.scr.suspend()
	defer c.scr.resume()
	return c.cmd.Run()
}

// resize takes the terminal's new size; the next draw repaints the whole view at it. A terminal
// that got narrower re-flows its lines (tmux, kitty, VTE, iTerm2, Windows Terminal and most
// others do): a view row wider than the new width now takes several rows, so the view's first
// row is further above the cursor than the renderer knows. The cursor goes up by the rows the
// terminal now shows there and everything from that row down is erased; the next draw draws
// the view anew from it. (Erasing from where the renderer thinks the view begins left the
// re-flowed rows above it: a ghost copy of the draft, or of half a reply's line.) Rows the
// terminal pushed into its scrollback to keep the cursor's row (a view near the top of the
// screen) are out of reach; a terminal that cuts lines instead of re-flowing them loses as many
// rows above the view as the view's rows would have grown.
func (s *screen) resize(w, h int) {
	if s.drawn && s.cells.Height() > 0 {
		x, y := s.scr.Position()
		s.pending.WriteString("\r")
		if up := reflowedRows(s.cells.Lines, x, y, w); up > 0 {
			s.pending.WriteString(ansi.CursorUp(up))
		}
		s.pending.WriteString(ansi.EraseScreenBelow)
	}
	s.width, s.height = w, h
	s.reset()
}

// reflowedRows counts the terminal rows between the first of the view's rows and the cursor's
// (at column x of row y) once a terminal w columns wide has re-flowed them: each row as wide as
// its text (trailing blanks are not kept), at least one.
func reflowedRows(rows []uv.Line, x, y, w int) int {
	if w <= 0 {
		return y
	}
	n := 0
	for i := 0; i < y && i < len(rows); i++ {
		n += max(1, (ansi.StringWidth(rows[i].String())+w-1)/w)
	}
	return n + max(x, 0)/w
}

// draw shows content as the view, the cursor at cur (nil: hidden). It writes at once, and
// nothing when the view and the cursor are as last drawn.
func (s *screen) draw(content string, cur *tea.Cursor) error {
	show, x, y := cur != nil, 0, 0
	if show {
		x, y = cur.X, cur.Y
	}
	if s.drawn && content == s.last && show == s.cursor && x == s.curX && y == s.curY {
		return nil
	}
	st := uv.NewStyledString(content)
	area := uv.Rect(0, 0, s.width, st.Height())
	if content == "" {
		area.Max.Y = 0
	}
	if area != s.cells.Bounds() {
		s.scr.Erase() // the view's height or width changed: repaint it whole
		s.cells.Touched = nil
		s.cells.Resize(area.Dx(), area.Dy())
	}
	s.cells.Clear()
	st.Draw(s.cells, s.cells.Bounds())
	if h := area.Dy(); h > s.height { // taller than the terminal: its top is cut
		s.cells.Lines = s.cells.Lines[h-s.height:]
		y -= h - s.height
	}
	s.scr.Render(s.cells.RenderBuffer)
	if show {
		s.scr.MoveTo(x, max(y, 0))
	} else if px, py := s.scr.Position(); px >= s.width-1 {
		s.scr.MoveTo(0, py) // a cursor left at the margin would make some terminals wrap
	}
	if err := s.scr.Flush(); err != nil {
		return fmt.Errorf("draw: %w", err)
	}
	// The cursor is hidden while the view changes, so it does not fly across the screen.
	var out bytes.Buffer
	if s.buf.Len() > 0 || s.pending.Len() > 0 || (s.cursor && !show) || !s.drawn {
		out.WriteString(ansi.ResetModeTextCursorEnable)
	}
	out.Write(s.pending.Bytes())
	s.pending.Reset()
	out.Write(s.buf.Bytes())
	s.buf.Reset()
	if show {
		out.WriteString(ansi.SetModeTextCursorEnable)
	}
	s.drawn, s.last, s.cursor, s.curX, s.curY = true, content, show, x, y
	_, err := s.out.Write(out.Bytes())
	return err
}

// clear empties the terminal's screen (its scrollback keeps what was there); the next draw
// draws the view at the top.
func (s *screen) clear() {
	s.pending.WriteString(ansi.EraseEntireScreen + ansi.CursorHomePosition)
	s.reset()
}

// printAbove prints str (lines no wider than the terminal) above the view: the view is erased,
// the lines are written where it began (the terminal scrolls what does not fit into its
// scrollback, as for any program's output) and the next draw draws the view anew below them.
// Nothing is written until that draw, so the terminal gets both in one write and the view does
// not flicker. (Inserting the lines above a view left in place, as Bubble Tea does, leaves a
// copy of the view's rows in the scrollback when the lines are taller than the screen.)
// An empty str is a blank line (the blank lines between a reply's paragraphs).
func (s *screen) printAbove(str string) {
	if s.drawn && s.cells.Height() > 0 {
		s.scr.MoveTo(0, 0) // the view's first row
		_ = s.scr.Flush()
		s.pending.Write(s.buf.Bytes())
		s.buf.Reset()
	}
	s.pending.WriteString("\r" + ansi.EraseScreenBelow)
	for _, l := range strings.Split(str, "\n") {
		// The row is cleared before it is written: cleared after, a row as wide as the
		// terminal would lose its last character (the cursor waits on the last column).
		s.pending.WriteString(ansi.EraseLineRight)
		s.pending.WriteString(l)
		s.pending.WriteString("\r\n")
	}
	s.reset()
}
