package cli

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// ANSI styling for the markdown renderer. Each style ends with its own "off" code rather than a
// full reset, so nested styles (code inside a heading) end cleanly.
const (
	ansiBold     = "\x1b[1m"
	ansiBoldOff  = "\x1b[22m"
	ansiDim      = "\x1b[2m"
	ansiDimOff   = "\x1b[22m"
	ansiCode     = "\x1b[36m" // cyan
	ansiCodeOff  = "\x1b[39m"
	ansiItalic   = "\x1b[3m"
	ansiItalicOf = "\x1b[23m"
	codeIndent   = "    "
	bulletMarker = "• "
)

// markdown renders the model's streamed text for a terminal, a line at a time: a line is drawn
// when its newline arrives, since markers like ** or ``` can be split across deltas; Flush
// draws the unfinished rest. It knows a small subset (headings, **bold**, `code`, fenced
// blocks, bullets, links) and leaves everything else as typed.
type markdown struct {
	w      io.Writer
	line   []byte
	inCode bool     // between fence lines
	plain  bool     // lines go out as typed (no colour), only split as they end
	table  []string // the rows of a table being streamed: drawn aligned when it ends
}

func newMarkdown(w io.Writer) *markdown { return &markdown{w: w} }

// Write takes any piece of the stream and renders every line it completes.
func (m *markdown) Write(p []byte) (int, error) {
	rest := p
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		m.line = append(m.line, rest[:i]...)
		err := m.render(string(m.line), true)
		m.line = m.line[:0]
		if err != nil {
			return len(p) - len(rest), err
		}
		rest = rest[i+1:]
	}
	m.line = append(m.line, rest...)
	return len(p), nil
}

// Flush renders the unfinished line, if any, and a table still open (at the end of a reply or
// before other output).
func (m *markdown) Flush() error {
	if len(m.line) == 0 {
		return m.endTable()
	}
	err := m.render(string(m.line), false)
	m.line = m.line[:0]
	if err != nil {
		return err
	}
	return m.endTable()
}

// endTable draws the table being streamed, if any.
func (m *markdown) endTable() error {
	if len(m.table) == 0 {
		return nil
	}
	out := renderTable(m.table)
	m.table = m.table[:0]
	_, err := io.WriteString(m.w, out+"\n")
	return err
}

func (m *markdown) render(line string, newline bool) error {
	if !m.plain && !m.inCode && isTableRow(line) {
		// A table is drawn once its last row is in, so its columns can be aligned.
		m.table = append(m.table, line)
		return nil
	}
	if err := m.endTable(); err != nil {
		return err
	}
	out, show := m.renderLine(line)
	if !show {
		return nil
	}
	if newline {
		out += "\n"
	}
	_, err := io.WriteString(m.w, out)
	return err
}

// breakAt draws the unfinished line up to its last space before n bytes (at n when it has
// none) as a line of its own, and keeps the rest unfinished.
func (m *markdown) breakAt(n int) error {
	n = min(n, len(m.line))
	cut := n
	if i := bytes.LastIndexByte(m.line[:n], ' '); i > 0 {
		cut = i + 1
	}
	for cut < len(m.line) && cut > 0 && !utf8.RuneStart(m.line[cut]) {
		cut--
	}
	head := string(m.line[:cut])
	m.line = append(m.line[:0], m.line[cut:]...)
	return m.render(strings.TrimRight(head, " "), true)
}

// Pending is the unfinished line, as given to the last Write.
func (m *markdown) Pending() string { return string(m.line) }

// Peek renders the unfinished line as it would look if it ended now, without drawing it or
// changing the renderer's state: the live view shows it while the rest of the line streams in
// (a marker still open shows as typed until its end arrives). A fence line being typed shows
// nothing.
func (m *markdown) Peek() string {
	rows := m.table
	pending := string(m.line)
	if len(rows) > 0 && isTableRow(pending) {
		rows, pending = append(rows[:len(rows):len(rows)], pending), ""
	}
	var table string
	if len(rows) > 0 {
		table = renderTable(rows)
	}
	if pending == "" {
		return table
	}
	probe := *m
	out, show := probe.renderLine(pending)
	switch {
	case !show:
		return table
	case table != "":
		return table + "\n" + out
	}
	return out
}

// renderLine styles one line; show is false for a line that disappears (a fence).
func (m *markdown) renderLine(line string) (out string, show bool) {
	if m.plain {
		return line, true
	}
	trimmed := strings.TrimSpace(line)
	if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
		m.inCode = !m.inCode
		return "", false
	}
	if m.inCode {
		if line == "" {
			return "", true
		}
		return codeIndent + ansiDim + line + ansiDimOff, true
	}
	if h := headingText(line); h != "" {
		return ansiBold + inline(h, false) + ansiBoldOff, true
	}
	indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
	rest := line[len(indent):]
	for _, marker := range []string{"- ", "* ", "+ "} {
		if strings.HasPrefix(rest, marker) {
			return indent + bulletMarker + inline(rest[len(marker):], true), true
		}
	}
	return inline(line, true), true
}

// headingText is the text of an ATX heading ("## Title"), or "" when line is none.
func headingText(line string) string {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[n:]), "#"))
}

// inline styles `code`, **bold** (when bold is allowed: not inside a bold heading) and
// [text](url) links; an unmatched marker stays as typed.
func inline(s string, bold bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j > 0 {
				b.WriteString(ansiCode + s[i+1:i+1+j] + ansiCodeOff)
				i += j + 2
				continue
			}
		case bold && strings.HasPrefix(s[i:], "**"):
			if j := strings.Index(s[i+2:], "**"); j > 0 {
				b.WriteString(ansiBold + inline(s[i+2:i+2+j], false) + ansiBoldOff)
				i += j + 4
				continue
			}
		case bold && (s[i] == '*' || s[i] == '_') && emphasisOpens(s, i):
			if j := emphasisCloses(s, i); j > 0 {
				b.WriteString(ansiItalic + inline(s[i+1:j], bold) + ansiItalicOf)
				i = j + 1
				continue
			}
		case s[i] == '[':
			if text, url, n := link(s[i:]); n > 0 {
				b.WriteString(inline(text, bold) + " (" + url + ")")
				i += n
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// link parses "[text](url)" at the start of s and returns its parts and length (0: no link).
func link(s string) (text, url string, n int) {
	mid := strings.Index(s, "](")
	if mid <= 1 || strings.ContainsRune(s[1:mid], '[') {
		return "", "", 0
	}
	end := strings.IndexByte(s[mid+2:], ')')
	if end <= 0 {
		return "", "", 0
	}
	url = s[mid+2 : mid+2+end]
	if strings.ContainsAny(url, " \t") {
		return "", "", 0
	}
	return s[1:mid], url, mid + 2 + end + 1
}

// emphasisOpens reports whether the * or _ at i can open an emphasis: not doubled, followed by
// a non-space and (for _) not inside a word, so "2 * 3" and snake_case stay as typed.
func emphasisOpens(s string, i int) bool {
	c := s[i]
	if i+1 >= len(s) || s[i+1] == ' ' || s[i+1] == c {
		return false
	}
	if c == '_' && i > 0 && isWordByte(s[i-1]) {
		return false
	}
	return true
}

// emphasisCloses finds the marker that closes the emphasis opened at i (after a non-space, and
// for _ not followed by a word character), or -1.
func emphasisCloses(s string, i int) int {
	c := s[i]
	for j := i + 2; j < len(s); j++ {
		if s[j] != c || s[j-1] == ' ' {
			continue
		}
		if j+1 < len(s) && s[j+1] == c {
			return -1
		}
		if c == '_' && j+1 < len(s) && isWordByte(s[j+1]) {
			continue
		}
		return j
	}
	return -1
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// isTableRow reports whether line is a row of a pipe table ("| a | b |").
func isTableRow(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "|") && strings.Count(t, "|") >= 2
}

// tableCells splits a table row into its trimmed cells; "\|" is a pipe inside a cell.
func tableCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, "\\|") {
		row = row[:len(row)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// delimiterRow reports whether cells are a table's header delimiter ("---", ":--:"), and each
// column's alignment: 'l', 'c' or 'r'.
func delimiterRow(cells []string) (align []byte, ok bool) {
	for _, c := range cells {
		d := strings.Trim(c, ":")
		if d == "" || strings.Trim(d, "-") != "" {
			return nil, false
		}
		a := byte('l')
		switch {
		case strings.HasPrefix(c, ":") && strings.HasSuffix(c, ":"):
			a = 'c'
		case strings.HasSuffix(c, ":"):
			a = 'r'
		}
		align = append(align, a)
	}
	return align, true
}

// renderTable draws a pipe table with its columns aligned by display width: the header (the
// rows above the delimiter row) bold, a rule under it, cells styled inline.
func renderTable(rows []string) string {
	var grid [][]string
	var align []byte
	header := 0
	for _, r := range rows {
		cells := tableCells(r)
		if a, ok := delimiterRow(cells); ok && header == 0 && len(grid) > 0 {
			align, header = a, len(grid)
			continue
		}
		grid = append(grid, cells)
	}
	var widths []int
	for i, row := range grid {
		for j, c := range row {
			if i < header {
				c = ansiBold + inline(c, false) + ansiBoldOff
			} else {
				c = inline(c, true)
			}
			row[j] = c
			if j >= len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], ansi.StringWidth(c))
		}
	}
	var b strings.Builder
	for i, row := range grid {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i == header && header > 0 {
			for j, w := range widths {
				if j > 0 {
					b.WriteString("─┼─")
				}
				b.WriteString(strings.Repeat("─", w))
			}
			b.WriteByte('\n')
		}
		for j, w := range widths {
			c := ""
			if j < len(row) {
				c = row[j]
			}
			if j > 0 {
				b.WriteString(" │ ")
			}
			a := byte('l')
			if j < len(align) {
				a = align[j]
			}
			b.WriteString(pad(c, w, a, j == len(widths)-1))
		}
	}
	return b.String()
}

// pad fills c to w display columns, aligned a; the last column's trailing blanks are left off.
func pad(c string, w int, a byte, last bool) string {
	gap := w - ansi.StringWidth(c)
	switch a {
	case 'r':
		return strings.Repeat(" ", gap) + c
	case 'c':
		l := gap / 2
		c = strings.Repeat(" ", l) + c
		gap -= l
	}
	if last {
		return c
	}
	return c + strings.Repeat(" ", gap)
}
