package web

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/web/markup"
)

// renderMarkdown turns untrusted message text into HTML. It knows a small subset of markdown
// (headings, paragraphs, fenced code, bullets and numbered lists, block quotes, **bold**,
// *emphasis*, `code`, [links](https://...)) and builds every tag itself: the input is escaped
// byte by byte, so raw HTML in a message is shown as text, never interpreted. Links are kept only
// for http, https and mailto URLs; control characters (terminal escape sequences included) and
// bidirectional overrides are shown as visible symbols instead of reaching the page.
func renderMarkdown(src string) markup.HTML {
	h, _ := renderMarkdownWork(src)
	return h
}

// renderMarkdownWork is renderMarkdown that also reports the bytes its inline searches read.
func renderMarkdownWork(src string) (markup.HTML, int) {
	work := 0
	var b strings.Builder
	b.Grow(len(src) + len(src)/4)
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var para []string
	list := "" // "ul" or "ol" while a list is open
	flushPara := func() {
		if len(para) == 0 {
			return
		}
		b.WriteString("<p>")
		for i, l := range para {
			if i > 0 {
				b.WriteString("<br>")
			}
			inline(&b, l, &work)
		}
		b.WriteString("</p>")
		para = para[:0]
	}
	closeList := func() {
		if list != "" {
			b.WriteString("</" + list + ">")
			list = ""
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if fence, ok := fenceOf(trimmed); ok {
			flushPara()
			closeList()
			lang := strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1]))
			b.WriteString("<pre><code")
			if lang != "" {
				b.WriteString(` data-lang="`)
				text(&b, firstField(lang))
				b.WriteString(`"`)
			}
			b.WriteString(">")
			first := true
			for i++; i < len(lines); i++ {
				if strings.HasPrefix(strings.TrimSpace(lines[i]), fence) {
					break
				}
				if !first {
					b.WriteByte('\n')
				}
				first = false
				text(&b, lines[i])
			}
			b.WriteString("</code></pre>")
			continue
		}
		switch {
		case trimmed == "":
			flushPara()
			closeList()
		case headingLevel(trimmed) > 0:
			flushPara()
			closeList()
			n := headingLevel(trimmed)
			// Headings inside a message sit below the page's own (h1, h2).
			tag := fmt.Sprintf("h%d", min(n+2, 6))
			b.WriteString("<" + tag + ">")
			inline(&b, strings.TrimSpace(trimmed[n:]), &work)
			b.WriteString("</" + tag + ">")
		case strings.HasPrefix(trimmed, "> ") || trimmed == ">":
			flushPara()
			closeList()
			b.WriteString("<blockquote>")
			for ; i < len(lines); i++ {
				t := strings.TrimSpace(lines[i])
				if !strings.HasPrefix(t, ">") {
					i--
					break
				}
				inline(&b, strings.TrimSpace(strings.TrimPrefix(t, ">")), &work)
				b.WriteString("<br>")
			}
			b.WriteString("</blockquote>")
		case bullet(trimmed) != "":
			flushPara()
			if list != "ul" {
				closeList()
				b.WriteString("<ul>")
				list = "ul"
			}
			b.WriteString("<li>")
			inline(&b, bullet(trimmed), &work)
			b.WriteString("</li>")
		case numbered(trimmed) != "":
			flushPara()
			if list != "ol" {
				closeList()
				b.WriteString("<ol>")
				list = "ol"
			}
			b.WriteString("<li>")
			inline(&b, numbered(trimmed), &work)
			b.WriteString("</li>")
		default:
			closeList()
			para = append(para, line)
		}
	}
	flushPara()
	closeList()
	return markup.HTML(b.String()), work //nolint:gosec // every byte of src went through text()
}

func fenceOf(s string) (string, bool) {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(s, f) {
			return f, true
		}
	}
	return "", false
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func headingLevel(s string) int {
	n := 0
	for n < len(s) && n < 6 && s[n] == '#' {
		n++
	}
	if n == 0 || n >= len(s) || s[n] != ' ' {
		return 0
	}
	return n
}

func bullet(s string) string {
	if len(s) > 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && s[1] == ' ' {
		return s[2:]
	}
	return ""
}

func numbered(s string) string {
	i := 0
	for i < len(s) && i < 4 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i+1 >= len(s) || (s[i] != '.' && s[i] != ')') || s[i+1] != ' ' {
		return ""
	}
	return s[i+2:]
}

// inline renders one line's spans (code, bold, emphasis and links; everything else is text) and
// adds the number of bytes its searches read to *work.
//
// Its time is linear in the line's length. Each delimiter's next occurrence comes from a finder
// that remembers its answer, so unclosed markup (a line of "[a](" repeated, say) does not make
// every opening rescan the rest of the line: positions only move forward and each finder reads
// each byte at most once. A span's inside (a link label, the text of **bold**) gets finders of its
// own; it never holds its own closing delimiter, so spans nest at most five deep (**, __, *, _,
// [...]) and each byte is read a bounded number of times.
func inline(b *strings.Builder, s string, work *int) {
	p := spans{s: s, work: work}
	pos := 0
	for pos < len(s) {
		i := strings.IndexAny(s[pos:], "`*_[")
		if i < 0 {
			*work += len(s) - pos
			text(b, s[pos:])
			return
		}
		*work += i + 1
		text(b, s[pos:pos+i])
		pos += i
		switch c := s[pos]; c {
		case '`':
			if j := p.next("`", pos+1); j >= 0 {
				b.WriteString("<code>")
				text(b, s[pos+1:j])
				b.WriteString("</code>")
				pos = j + 1
				continue
			}
		case '*', '_':
			if d := s[pos:min(pos+2, len(s))]; d == "**" || d == "__" {
				if j := p.next(d, pos+2); j > pos+2 {
					b.WriteString("<strong>")
					inline(b, s[pos+2:j], work)
					b.WriteString("</strong>")
					pos = j + 2
					continue
				}
			} else if j := p.next(s[pos:pos+1], pos+1); j > pos+1 && s[pos+1] != ' ' && (c == '*' || wordBoundary(s, j+1)) {
				b.WriteString("<em>")
				inline(b, s[pos+1:j], work)
				b.WriteString("</em>")
				pos = j + 1
				continue
			}
		case '[':
			if label, href, rest, ok := p.link(pos); ok {
				if u := safeURL(href); u != "" {
					b.WriteString(`<a href="`)
					text(b, u)
					b.WriteString(`" rel="nofollow noopener noreferrer" target="_blank">`)
					inline(b, label, work)
					b.WriteString("</a>")
				} else {
					// An unsafe scheme (javascript:, data:, ...) keeps its text, not its link.
					text(b, "["+label+"]("+href+")")
				}
				pos = rest
				continue
			}
		}
		text(b, s[pos:pos+1])
		pos++
	}
}

// spans holds one line's finders, one for each delimiter inline looks ahead for.
type spans struct {
	s       string
	work    *int
	finders [8]finder
}

// next returns the index in s of the first pat at or after from, or -1. Calls for one pat must
// come with non-decreasing from (inline only moves forward).
func (p *spans) next(pat string, from int) int {
	for i := range p.finders {
		f := &p.finders[i]
		if f.pat == "" {
			*f = finder{pat: pat, at: -1}
		}
		if f.pat == pat {
			return f.next(p.s, from, p.work)
		}
	}
	panic("markdown: more delimiters than finders")
}

// link parses "[label](href)" at s[pos], returning the index just past it.
func (p *spans) link(pos int) (label, href string, rest int, ok bool) {
	j := p.next("](", pos+1)
	if j < 0 {
		return "", "", 0, false
	}
	if k := p.next("[", pos+1); k >= 0 && k < j {
		return "", "", 0, false
	}
	k := p.next(")", j+2)
	if k < 0 {
		return "", "", 0, false
	}
	return p.s[pos+1 : j], strings.TrimSpace(p.s[j+2 : k]), k + 1, true
}

// finder answers "where is the next pat at or after from" and remembers the answer: it holds
// for every later from up to the occurrence itself, so a forward-moving caller searches each
// stretch of the line once.
type finder struct {
	pat      string
	from, at int // no pat starts in s[from:at]; at is len(s) when none starts at or after from
}

func (f *finder) next(s string, from int, work *int) int {
	if from > len(s) {
		return -1
	}
	if f.at < 0 || from < f.from || from > f.at {
		f.from = from
		if i := strings.Index(s[from:], f.pat); i >= 0 {
			f.at = from + i
			*work += i + len(f.pat)
		} else {
			f.at = len(s)
			*work += len(s) - from
		}
	}
	if f.at+len(f.pat) > len(s) {
		return -1
	}
	return f.at
}

// wordBoundary reports whether s[i] (just past a closing _) is not a word character, so
// snake_case_names are not read as emphasis.
func wordBoundary(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	c := s[i]
	return !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

// safeURL returns href when it is an absolute http(s) or mailto URL, else "".
func safeURL(href string) string {
	for _, r := range href {
		if r < 0x20 || r == 0x7f || r == ' ' {
			return ""
		}
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return ""
		}
		return u.String()
	case "mailto":
		return u.String()
	}
	return ""
}

// text writes s HTML-escaped, with control characters and bidirectional controls made visible.
func text(b *strings.Builder, s string) {
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '"':
			b.WriteString("&#34;")
		case r == '\'':
			b.WriteString("&#39;")
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError && size == 1:
			b.WriteRune('\uFFFD')
		case r < 0x20:
			b.WriteRune(0x2400 + r) // ␀..␟: ESC shows as ␛
		case r == 0x7f:
			b.WriteRune('\u2421') // ␡
		case r >= 0x80 && r < 0xa0, isBidiControl(r), r == 0xfeff:
			fmt.Fprintf(b, `<span class="ctl">U+%04X</span>`, r)
		default:
			b.WriteRune(r)
		}
	}
}

func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// plain renders untrusted text as escaped HTML with control characters made visible (for tool
// arguments, results and anything shown verbatim in <pre>).
func plain(s string) markup.HTML {
	var b strings.Builder
	b.Grow(len(s))
	text(&b, s)
	return markup.HTML(b.String()) //nolint:gosec // escaped by text()
}

// snippetHTML renders a search snippet: the store marks matched terms between >>> and <<<; the
// text between is escaped and the terms wrapped in <mark>.
func snippetHTML(s string) markup.HTML {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.Index(s, ">>>")
		if i < 0 {
			text(&b, s)
			break
		}
		text(&b, s[:i])
		s = s[i+3:]
		j := strings.Index(s, "<<<")
		if j < 0 {
			text(&b, s)
			break
		}
		b.WriteString("<mark>")
		text(&b, s[:j])
		b.WriteString("</mark>")
		s = s[j+3:]
	}
	return markup.HTML(b.String()) //nolint:gosec // escaped by text()
}
