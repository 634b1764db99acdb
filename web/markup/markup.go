package markup

import (
	"net/url"
	"strconv"
	"strings"
)

// HTML is markup known to be safe: built by a Writer, or by a renderer that escapes every byte of
// its input. Never convert untrusted text to HTML.
type HTML string

// Writer accumulates a page. The zero Writer is ready to use.
type Writer struct {
	b strings.Builder
}

// F writes format, replacing each %s with the next argument, escaped: a string (or any value of
// the kinds listed in Text) is HTML-escaped, an HTML is written as it is. "%%" writes "%". The
// format is the caller's own markup; a count of %s that differs from the arguments' is a bug in
// the caller and panics.
func (w *Writer) F(format string, args ...any) {
	n := 0
	for {
		i := strings.IndexByte(format, '%')
		if i < 0 || i+1 >= len(format) {
			w.b.WriteString(format)
			break
		}
		w.b.WriteString(format[:i])
		switch format[i+1] {
		case 's':
			if n >= len(args) {
				panic("markup: too few arguments for " + strconv.Quote(format))
			}
			w.value(args[n])
			n++
		case '%':
			w.b.WriteByte('%')
		default:
			w.b.WriteString(format[i : i+2])
		}
		format = format[i+2:]
	}
	if n != len(args) {
		panic("markup: too many arguments")
	}
}

func (w *Writer) value(v any) {
	switch x := v.(type) {
	case HTML:
		w.b.WriteString(string(x))
	case string:
		w.Text(x)
	case int:
		w.b.WriteString(strconv.Itoa(x))
	case int64:
		w.b.WriteString(strconv.FormatInt(x, 10))
	case bool:
		w.b.WriteString(strconv.FormatBool(x))
	default:
		panic("markup: unsupported argument type")
	}
}

// Raw writes the caller's own constant markup as it is.
func (w *Writer) Raw(s string) { w.b.WriteString(s) }

// Text writes untrusted text escaped.
func (w *Writer) Text(s string) { w.b.WriteString(Escape(s)) }

// HTML writes markup known to be safe.
func (w *Writer) HTML(h HTML) { w.b.WriteString(string(h)) }

// If writes s when cond holds (a constant piece of markup such as an attribute).
func (w *Writer) If(cond bool, s string) {
	if cond {
		w.b.WriteString(s)
	}
}

// String is the markup written so far.
func (w *Writer) String() string { return w.b.String() }

// Markup is the markup written so far, as HTML.
func (w *Writer) Markup() HTML { return HTML(w.b.String()) }

// Len is the number of bytes written so far.
func (w *Writer) Len() int { return w.b.Len() }

var escaper = strings.NewReplacer(
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	`"`, "&#34;",
	"'", "&#39;",
	"\x00", "\uFFFD",
)

// Escape makes s safe as element content and as a quoted attribute value.
func Escape(s string) string { return escaper.Replace(s) }

// Seg makes s one path segment of a URL (percent-encoding '/', '?', '#' and the rest), to be
// escaped like any value when written.
func Seg(s string) string { return url.PathEscape(s) }
