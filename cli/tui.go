package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// errInterrupted is what the editor's read returns for Ctrl-C at an idle, empty editor.
var errInterrupted = errors.New("interrupted")

// tui is spool chat on a terminal: one Bubble Tea program owns the bottom of the screen for the
// whole chat. Its view is the reply's unfinished line (rendered as markdown and re-wrapped to the
// width at every draw, so a resize re-flows it), a spinner or a question, and the line editor;
// everything finished is printed above the view into the terminal's scrollback and stays there.
//
// The chat's worker goroutine (loop, turns, commands) talks to the program only through the
// methods below; they send in order, so a printed line never overtakes a delta. The program's
// goroutine is started by startTUI and ends with close (or when the terminal goes away).
type tui struct {
	p       *tea.Program
	lines   chan string   // messages sent from the editor, in order (type-ahead during a turn queues)
	answers chan string   // the answer to the open question
	picks   chan string   // the picker's choice ("" when dismissed)
	intr    chan struct{} // Ctrl-C at an idle, empty editor
	eof     chan struct{} // closed on Ctrl-D at an empty editor
	eofOnce sync.Once
	done    chan struct{} // closed when the program has ended and the terminal is restored
	err     error         // the program's, set before done closes

	mu     sync.Mutex
	cancel context.CancelFunc // the running turn's: Ctrl-C calls it

	width, height atomic.Int32 // the terminal's, as the program last saw it
	scr           *screen      // the program's goroutine's (close's once it ended)
}

// tuiOptions is what the editor needs from the chat.
type tuiOptions struct {
	in       io.Reader
	out      io.Writer
	history  *history
	sessions func() []string // session ids for completion after /resume
}

// startTUI starts the program on the terminal and returns once it runs.
func startTUI(o tuiOptions) *tui {
	t := &tui{
		lines:   make(chan string, 64),
		answers: make(chan string, 1),
		picks:   make(chan string, 1),
		intr:    make(chan struct{}, 1),
		eof:     make(chan struct{}),
		done:    make(chan struct{}),
	}
	w, h := 80, 24
	t.scr = newScreen(o.in, o.out, os.Environ(), w, h)
	if sw, sh, ok := t.scr.size(); ok {
		w, h = sw, sh
		t.scr.width, t.scr.height = w, h
	}
	t.width.Store(int32(w))
	t.height.Store(int32(h))
	m := newEditorModel(t, o)
	// Bubble Tea reads and decodes the keys and runs the model; the model draws through
	// t.scr after every message (no frame clock: see screen).
	t.p = tea.NewProgram(m, tea.WithInput(o.in), tea.WithOutput(o.out), tea.WithoutSignalHandler(),
		tea.WithoutRenderer(), tea.WithWindowSize(w, h), tea.WithColorProfile(t.scr.profile))
	if err := t.scr.start(); err != nil {
		t.err = err
		t.eofOnce.Do(func() { close(t.eof) })
		close(t.done)
		return t
	}
	go func() {
		defer close(t.done)
		_, t.err = t.p.Run()
		t.eofOnce.Do(func() { close(t.eof) })
	}()
	go t.watchSize()
	return t
}

// close ends the program and waits until the terminal is restored.
func (t *tui) close() error {
	t.p.Quit()
	<-t.done
	serr := t.scr.stop()
	if t.err != nil && !errors.Is(t.err, tea.ErrProgramKilled) {
		return fmt.Errorf("terminal: %w", t.err)
	}
	if serr != nil {
		return fmt.Errorf("terminal: %w", serr)
	}
	return nil
}

// resized tells the program the terminal's size now.
func (t *tui) resized() {
	if w, h, ok := t.scr.size(); ok {
		t.send(tea.WindowSizeMsg{Width: w, Height: h})
	}
}

// println prints s above the view (it stays in the scrollback). It waits until the program has
// taken it, so prints and deltas keep their order; after the program ended it does nothing.
func (t *tui) println(s string) {
	select {
	case <-t.done:
		return
	default:
	}
	// Wrapped here as the live view wrapped it, so a finished line does not jump when it is
	// printed; the terminal owns it from then on.
	s = wrapText(s, int(t.width.Load()))
	t.sendInOrder(printMsg(s))
}

// clearScreen empties the terminal's screen, keeping the editor's draft; in order with prints.
func (t *tui) clearScreen() {
	select {
	case <-t.done:
		return
	default:
	}
	t.sendInOrder(clearMsg{})
}

// sendInOrder sends msg and waits until the program has taken it (or has ended).
func (t *tui) sendInOrder(msg tea.Msg) {
	taken := make(chan struct{})
	go func() {
		t.p.Send(msg)
		close(taken)
	}()
	select {
	case <-taken:
	case <-t.done:
	}
}

func (t *tui) send(msg tea.Msg) { t.p.Send(msg) }

// read returns the next message sent from the editor (echoed above the view); io.EOF after
// Ctrl-D on an empty editor, errInterrupted after Ctrl-C at an idle one, ctx's error.
func (t *tui) read(ctx context.Context) (string, error) {
	t.send(stateMsg{idle: true})
	select {
	case line := <-t.lines:
		t.send(stateMsg{})
		t.println(echoLine(line))
		return line, nil
	case <-t.intr:
		return "", errInterrupted
	case <-t.eof:
		return "", io.EOF
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// echoLine is a sent message as the scrollback keeps it: the prompt, continuation lines
// indented under it.
func echoLine(line string) string {
	// A long message shows its first lines; all of it is sent and stored.
	if lines := strings.Split(line, "\n"); len(lines) > echoLines {
		line = strings.Join(lines[:echoLines], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-echoLines)
	}
	return "› " + strings.ReplaceAll(visible(line), "\n", "\n  ")
}

// echoLines is how many lines of a sent message the scrollback shows.
const echoLines = 20

// ask shows question above the editor and returns the answer, one key: "y", "a" (always) or
// "n" (n, Enter or Esc). What was typed in the editor stays there.
func (t *tui) ask(ctx context.Context, question string) (string, error) {
	select { // a stale answer must not answer this question
	case <-t.answers:
	default:
	}
	t.send(askMsg{question: question})
	defer t.send(askMsg{})
	select {
	case a := <-t.answers:
		t.println(question + " " + answerWords[a])
		return a, nil
	case <-t.eof:
		return "", io.EOF
	case <-ctx.Done():
		t.println(question)
		return "", ctx.Err()
	}
}

// answerKeys are the keys that answer a question, and answerWords what the scrollback keeps.
var (
	answerKeys  = map[string]string{"y": "y", "Y": "y", "a": "a", "A": "a", "n": "n", "N": "n", "enter": "n", "esc": "n"}
	answerWords = map[string]string{"y": "yes", "a": "always", "n": "no"}
)

// pick shows the picker and returns the chosen item's id, "" when the user dismissed it.
func (t *tui) pick(ctx context.Context, items []pickItem) (string, error) {
	select {
	case <-t.picks:
	default:
	}
	t.send(pickMsg{items: items, open: true})
	defer t.send(pickMsg{})
	select {
	case id := <-t.picks:
		return id, nil
	case <-t.eof:
		return "", io.EOF
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// setCancel registers the running turn's cancel function (nil: no turn runs).
func (t *tui) setCancel(cancel context.CancelFunc) {
	t.mu.Lock()
	t.cancel = cancel
	t.mu.Unlock()
}

// interrupt cancels the running turn and reports whether there was one.
func (t *tui) interrupt() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel == nil {
		return false
	}
	t.cancel()
	return true
}

// liveLimit is how many bytes of an unfinished line the view shows before the line is broken:
// a third of the screen.
func (t *tui) liveLimit() int {
	w, h := int(t.width.Load()), int(t.height.Load())
	if w <= 0 || h <= 0 {
		w, h = 80, 24
	}
	return max(w*max(h/3, 2), 80)
}

// spin shows a spinner labelled label ("" hides it).
func (t *tui) spin(label string) { t.send(spinMsg(label)) }

// live shows the reply's unfinished line, already rendered.
func (t *tui) live(s string) { t.send(liveMsg(s)) }

// tuiWriter is an io.Writer for the chat's ordinary output while the program runs: each
// complete line is printed above the view; an unfinished one waits for its newline (flush
// prints it).
type tuiWriter struct {
	t      *tui
	colour bool
	mu     sync.Mutex
	buf    []byte
}

func (w *tuiWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if i := strings.LastIndexByte(string(w.buf), '\n'); i >= 0 {
		out := string(w.buf[:i])
		w.buf = append(w.buf[:0], w.buf[i+1:]...)
		w.t.println(out)
	}
	return len(p), nil
}

func (w *tuiWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.t.println(string(w.buf))
		w.buf = w.buf[:0]
	}
}

// Messages from the worker to the program.
type (
	stateMsg struct{ idle bool } // the chat waits for a message (idle) or works on one
	askMsg   struct{ question string }
	pickMsg  struct {
		items []pickItem
		open  bool
	}
	spinMsg   string
	liveMsg   string
	printMsg  string   // printed above the view
	clearMsg  struct{} // the screen is emptied
	spinTick  struct{ gen int }
	editedMsg struct {
		path string
		err  error
	}
)

// slashCommands are completed after "/".
var slashCommands = []string{"/branch", "/clear", "/compress", "/edit", "/exit", "/help", "/model", "/new", "/paste", "/quit", "/resume", "/search", "/sessions", "/title", "/undo", "/usage"}

// editorModel is the program's state. It runs on the program's goroutine only.
type editorModel struct {
	t        *tui
	ed       textarea.Model
	width    int
	height   int
	hist     *history
	histPos  int    // hist.len() while editing a new entry
	draft    string // the new entry, kept while browsing older ones
	search   *historySearch
	sessions func() []string

	idle  bool
	live  string
	label string // spinner label, "" none
	// busySince is when the chat took the message it works on: the spinner counts from it.
	busySince time.Time
	frame     int
	spinGen   int
	question  string
	picker    *picker
	hint      string
	paste     bool              // /paste mode: Enter is a newline, Ctrl-D sends
	held      map[string]string // placeholder → the big paste it stands for
}

// Big pastes: more than this many characters or lines are held behind a placeholder.
const (
	bigPasteChars = 2000
	bigPasteLines = 40
)

// pastedText is pasted text as a message holds it: CR LF and lone CR line ends become LF.
func pastedText(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

func big(s string) bool {
	return len(s) > bigPasteChars || strings.Count(s, "\n") >= bigPasteLines
}

// hold keeps text and returns the placeholder that stands for it in the editor.
func (m *editorModel) hold(text string) string {
	if m.held == nil {
		m.held = map[string]string{}
	}
	lines := fmt.Sprintf("%d lines", strings.Count(text, "\n")+1)
	if lines == "1 lines" {
		lines = "1 line"
	}
	ph := fmt.Sprintf("[pasted text #%d: %s, %d characters]", len(m.held)+1, lines, utf8.RuneCountInString(text))
	m.held[ph] = text
	return ph
}

// expand puts the held pastes back in place of their placeholders (a placeholder edited away
// stays as typed) and forgets them.
func (m *editorModel) expand(v string) string {
	for ph, text := range m.held {
		v = strings.Replace(v, ph, text, 1)
	}
	m.held = nil
	return v
}

// setText replaces the editor's text (history, the external editor); big text is held.
func (m *editorModel) setText(s string) {
	m.held = nil
	s = pastedText(s)
	if big(s) {
		s = m.hold(s)
	}
	m.ed.SetValue(s)
}

// historySearch is the Ctrl-R state: the query and the entry it found (-1: none).
type historySearch struct {
	query string
	found int
}

func newEditorModel(t *tui, o tuiOptions) *editorModel {
	ed := textarea.New()
	ed.ShowLineNumbers = false
	ed.Prompt = "› "
	ed.Placeholder = ""
	ed.CharLimit = 0
	ed.MaxWidth = 0
	ed.MaxHeight = 12
	ed.DynamicHeight = true
	ed.MinHeight = 1
	ed.SetVirtualCursor(false)
	st := ed.Styles()
	st.Focused.CursorLine = st.Focused.Text
	st.Focused.Base = st.Focused.Base.UnsetBorderStyle()
	ed.SetStyles(st)
	ed.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "shift+enter", "ctrl+j"))
	ed.Focus()
	h := o.history
	if h == nil {
		h = loadHistory("")
	}
	m := &editorModel{t: t, width: 80, height: 24, hist: h, histPos: h.len(), sessions: o.sessions}
	// The prompt says whether the chat waits for a message (›) or works (·: what is typed now
	// is sent when the turn ends); continuation lines are indented under it.
	ed.SetPromptFunc(2, func(info textarea.PromptInfo) string {
		switch {
		case info.LineNumber > 0:
			return "  "
		case m.question != "":
			return "? "
		case m.idle:
			return "› "
		}
		return "· "
	})
	m.ed = ed
	return m
}

func (m *editorModel) Init() tea.Cmd { return nil }

// Update handles msg and draws the view at once if it changed.
func (m *editorModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	// The terminal's size is read before every message (one ioctl): output drawn for the old
	// width after the terminal changed, before SIGWINCH is handled, would land on rows the
	// terminal has already moved and the next redraw would leave pieces of them behind.
	if w, h, ok := m.t.scr.size(); ok && (max(w, 10) != m.width || max(h, 4) != m.height) {
		m.update(tea.WindowSizeMsg{Width: w, Height: h})
	}
	switch msg := msg.(type) {
	case printMsg:
		m.t.scr.printAbove(string(msg))
	case clearMsg:
		m.t.scr.clear()
	}
	cmd := m.update(msg)
	content, cur := m.render()
	_ = m.t.scr.draw(content, cur)
	return m, cmd
}

func (m *editorModel) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 10), max(msg.Height, 4)
		m.t.width.Store(int32(m.width))
		m.t.height.Store(int32(m.height))
		m.ed.SetWidth(m.width)
		if m.width != m.t.scr.width || m.height != m.t.scr.height {
			m.t.scr.resize(m.width, m.height)
		}
		return nil
	case stateMsg:
		if msg.idle {
			m.busySince = time.Time{}
		} else if m.busySince.IsZero() {
			m.busySince = time.Now()
		}
		m.idle = msg.idle
		return nil
	case askMsg:
		m.question = msg.question
		return nil
	case pickMsg:
		if msg.open {
			m.picker = newPicker(msg.items)
		} else {
			m.picker = nil
		}
		return nil
	case liveMsg:
		m.live = string(msg)
		return nil
	case spinMsg:
		was := m.label
		m.label = string(msg)
		if m.label != "" && m.busySince.IsZero() {
			m.busySince = time.Now()
		}
		if m.label != "" && was == "" {
			m.spinGen++
			m.frame = 0
			return m.tick()
		}
		return nil
	case spinTick:
		if msg.gen != m.spinGen || m.label == "" {
			return nil
		}
		m.frame++
		return m.tick()
	case editedMsg:
		if msg.err != nil {
			m.hint = "editor: " + oneLine(msg.err.Error())
		} else if b, err := os.ReadFile(msg.path); err != nil {
			m.hint = "editor: " + oneLine(err.Error())
		} else {
			m.setText(strings.TrimRight(string(b), "\n"))
		}
		os.Remove(msg.path)
		return nil
	case tea.PasteMsg:
		if m.picker != nil {
			m.picker.query += oneLine(msg.Content)
			m.picker.filter()
			return nil
		}
		if m.search != nil {
			m.search.query += oneLine(msg.Content)
			m.search.found = m.hist.search(m.search.query, m.hist.len())
			return nil
		}
		// A paste is text in the editor, however many lines: Enter sends it as one message. A
		// big one stands in the editor as a placeholder (the editor stays quick, nothing is
		// cut) and is put back whole when the message is sent. Terminals send line ends as
		// CR (or CR LF): both paths see the text with LF line ends.
		text := pastedText(msg.Content)
		if big(text) {
			m.ed.InsertString(m.hold(text))
			return nil
		}
		var cmd tea.Cmd
		m.ed, cmd = m.ed.Update(tea.PasteMsg{Content: text})
		return cmd
	case tea.KeyPressMsg:
		_, cmd := m.key(msg)
		return cmd
	}
	var cmd tea.Cmd
	m.ed, cmd = m.ed.Update(msg)
	return cmd
}

func (m *editorModel) tick() tea.Cmd {
	gen := m.spinGen
	return tea.Tick(spinnerEvery, func(time.Time) tea.Msg { return spinTick{gen: gen} })
}

func (m *editorModel) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := msg.String()
	if m.picker != nil {
		if id, done := m.picker.key(k, msg.Text); done {
			m.t.picks <- id // buffered 1, drained before each pick
			m.picker = nil
		}
		return m, nil
	}
	if m.search != nil {
		return m.searchKey(k, msg)
	}
	m.hint = ""
	if m.question != "" && k != "ctrl+c" && k != "ctrl+d" {
		// One key answers; the editor (text typed ahead during the turn) is left alone.
		if a, ok := answerKeys[k]; ok {
			select {
			case m.t.answers <- a:
				m.question = "" // answered: the next key is the editor's again
			default:
			}
		} else {
			m.hint = "press y (yes), n (no) or a (always)"
		}
		return m, nil
	}
	switch k {
	case "ctrl+c":
		switch {
		case m.t.interrupt():
		case m.ed.Value() != "":
			m.ed.Reset()
			m.held = nil
			m.histPos = m.hist.len()
		default:
			select {
			case m.t.intr <- struct{}{}:
			default:
			}
		}
		return m, nil
	case "ctrl+d":
		if m.paste {
			return m.submit()
		}
		if m.ed.Value() == "" {
			m.t.eofOnce.Do(func() { close(m.t.eof) })
			return m, nil
		}
	case "enter":
		if m.paste {
			m.ed.InsertString("\n")
			return m, nil
		}
		// A line ending in a backslash continues on the next one, as in a shell.
		if v := m.ed.Value(); strings.HasSuffix(v, `\`) && m.ed.Line() == m.ed.LineCount()-1 {
			m.ed.SetValue(strings.TrimSuffix(v, `\`) + "\n")
			return m, nil
		}
		return m.submit()
	case "esc":
		if m.paste {
			m.paste = false
			return m, nil
		}
	case "ctrl+r":
		m.search = &historySearch{found: -1}
		return m, nil
	case "ctrl+l":
		m.t.scr.clear() // the draft stays in the editor, drawn again at the top
		return m, nil
	case "ctrl+g":
		return m, m.openEditor()
	case "tab":
		m.complete()
		return m, nil
	case "up":
		if m.ed.Line() == 0 && m.histPos > 0 {
			if m.histPos == m.hist.len() {
				m.draft = m.ed.Value()
			}
			m.histPos--
			m.setText(m.hist.at(m.histPos))
			return m, nil
		}
	case "down":
		if m.ed.Line() == m.ed.LineCount()-1 && m.histPos < m.hist.len() {
			m.histPos++
			if m.histPos == m.hist.len() {
				m.setText(m.draft)
			} else {
				m.setText(m.hist.at(m.histPos))
			}
			return m, nil
		}
	}
	var cmd tea.Cmd
	m.ed, cmd = m.ed.Update(msg)
	return m, cmd
}

// submit sends the editor's text as a message (the editor's own commands /paste and /edit act
// here).
func (m *editorModel) submit() (tea.Model, tea.Cmd) {
	v := m.expand(m.ed.Value())
	m.paste = false
	switch strings.TrimSpace(v) {
	case "":
		return m, nil
	case "/paste":
		m.ed.Reset()
		m.paste = true
		return m, nil
	case "/edit":
		m.ed.Reset()
		return m, m.openEditor()
	}
	_ = m.hist.add(v)
	m.histPos = m.hist.len()
	m.draft = ""
	m.ed.Reset()
	m.idle = false // the prompt says at once that the chat is busy with it
	select {
	case m.t.lines <- v:
	default:
		m.hint = "too many messages queued; this one was not sent"
	}
	return m, nil
}

func (m *editorModel) searchKey(k string, msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := m.search
	switch k {
	case "ctrl+r":
		from := m.hist.len()
		if s.found >= 0 {
			from = s.found
		}
		if i := m.hist.search(s.query, from); i >= 0 {
			s.found = i
		}
	case "enter", "tab", "right":
		if s.found >= 0 {
			m.setText(m.hist.at(s.found))
			m.histPos = s.found
		}
		m.search = nil
	case "esc", "ctrl+c", "ctrl+g":
		m.search = nil
	case "backspace":
		if s.query != "" {
			r := []rune(s.query)
			s.query = string(r[:len(r)-1])
			s.found = m.hist.search(s.query, m.hist.len())
		}
	default:
		if msg.Text != "" {
			s.query += msg.Text
			s.found = m.hist.search(s.query, m.hist.len())
		}
	}
	return m, nil
}

// complete completes a slash command, or a session id after /resume; several candidates are
// listed under the editor and their common prefix is filled in.
func (m *editorModel) complete() {
	v := m.ed.Value()
	var cands []string
	var prefix, base string
	switch {
	case strings.HasPrefix(v, "/resume ") && m.sessions != nil:
		base, prefix = "/resume ", strings.TrimPrefix(v, "/resume ")
		for _, id := range m.sessions() {
			if strings.HasPrefix(id, prefix) {
				cands = append(cands, id)
			}
		}
	case strings.HasPrefix(v, "/") && !strings.ContainsAny(v, " \n"):
		prefix = v
		for _, c := range slashCommands {
			if strings.HasPrefix(c, v) {
				cands = append(cands, c)
			}
		}
	default:
		return
	}
	switch len(cands) {
	case 0:
		m.hint = "no completion"
	case 1:
		m.ed.SetValue(base + cands[0] + " ")
	default:
		common := cands[0]
		for _, c := range cands[1:] {
			for !strings.HasPrefix(c, common) {
				common = common[:len(common)-1]
			}
		}
		if len(common) > len(prefix) {
			m.ed.SetValue(base + common)
		}
		sort.Strings(cands)
		m.hint = strings.Join(cands, "  ")
	}
}

// openEditor runs $VISUAL or $EDITOR (else vi) on the editor's text; its saved text replaces it.
func (m *editorModel) openEditor() tea.Cmd {
	f, err := os.CreateTemp("", "spool-message-*.md")
	if err != nil {
		m.hint = "editor: " + oneLine(err.Error())
		return nil
	}
	_, err = f.WriteString(m.ed.Value())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		m.hint = "editor: " + oneLine(err.Error())
		return nil
	}
	editor := strings.Fields(cmpOr(os.Getenv("VISUAL"), os.Getenv("EDITOR"), "vi"))
	cmd := exec.Command(editor[0], append(editor[1:], f.Name())...)
	path := f.Name()
	return tea.Exec(&suspendedCmd{cmd: cmd, scr: m.t.scr}, func(err error) tea.Msg { return editedMsg{path: path, err: err} })
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// View is not drawn by Bubble Tea (the program runs without its renderer): Update draws render.
func (m *editorModel) View() tea.View { return tea.NewView("") }

// render is the view: the live line, the spinner, a question or the picker, the editor; and
// where the cursor goes (nil: hidden).
func (m *editorModel) render() (string, *tea.Cursor) {
	var b strings.Builder
	rows := 0
	add := func(s string) {
		if s == "" {
			return
		}
		s = wrapText(s, m.width)
		b.WriteString(s)
		b.WriteByte('\n')
		rows += strings.Count(s, "\n") + 1
	}
	add(m.live)
	if m.label != "" {
		// One row, updated in place (a long retry notice is cut, not wrapped).
		add(ansi.Truncate(spinnerLine(m.frame, m.label, time.Since(m.busySince)), m.width, "…"))
	}
	if m.picker != nil {
		b.WriteString(m.picker.view(m.width, max(m.height-4, 3)))
		return b.String(), nil
	}
	if m.question != "" {
		add(m.question + " (one key: y, n or a; Ctrl-C refuses)")
	}
	if m.search != nil {
		match := ""
		if m.search.found >= 0 {
			match = strings.ReplaceAll(visible(m.hist.at(m.search.found)), "\n", " ⏎ ")
		} else if m.search.query != "" {
			match = "(no match)"
		}
		add(fmt.Sprintf("(history search) `%s': %s", visible(m.search.query), match))
	}
	if m.paste {
		add("(paste mode: Enter is a new line, Ctrl-D sends, Esc leaves)")
	}
	edTop := rows
	b.WriteString(m.ed.View())
	if m.hint != "" {
		b.WriteByte('\n')
		b.WriteString(ansi.Truncate(visible(m.hint), m.width, "…"))
	}
	if c := m.ed.Cursor(); c != nil && m.search == nil {
		c.Y += edTop
		return b.String(), c
	}
	return b.String(), nil
}
