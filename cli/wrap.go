package cli

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// zwsp (zero-width space) marks where a row may break between wide characters; it is removed
// after wrapping.
const zwsp = "\u200b"

// listItem matches the start of a rendered list item: its indent and marker (a bullet or "1.").
var listItem = regexp.MustCompile(`^(\s*)(` + bulletMarker + `|\d{1,3}[.)] )`)

// wrapText wraps styled text (lines separated by \n) to width display columns for the terminal:
// at spaces, and between East Asian wide characters (CJK text has no spaces between words); a
// list item's continuation rows hang under its text, so a bullet never stands alone on a row.
func wrapText(s string, width int) string {
	if width <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = wrapLine(l, width)
	}
	return strings.Join(lines, "\n")
}

func wrapLine(l string, width int) string {
	if ansi.StringWidth(l) <= width {
		return l
	}
	head, body := "", l
	if m := listItem.FindStringSubmatchIndex(l); m != nil && ansi.StringWidth(l[:m[1]])+10 <= width {
		head, body = l[:m[1]], l[m[1]:]
	}
	hang := strings.Repeat(" ", ansi.StringWidth(head))
	rows := strings.Split(ansi.Wrap(breakable(body), width-len(hang), zwsp), "\n")
	for i, r := range rows {
		r = strings.ReplaceAll(r, zwsp, "")
		if i == 0 {
			rows[i] = head + r
		} else {
			rows[i] = hang + strings.TrimLeft(r, " ")
		}
	}
	return strings.Join(rows, "\n")
}

// breakable puts a break opportunity after every wide character of s.
func breakable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+n])
		i += n
		if r >= 0x1100 && ansi.StringWidth(string(r)) > 1 {
			b.WriteString(zwsp)
		}
	}
	return b.String()
}
