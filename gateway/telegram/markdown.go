package telegram

import (
	"html"
	"regexp"
	"strings"
)

// ToHTML renders the Markdown a model writes as the HTML subset Telegram's parse_mode HTML
// accepts (b, i, s, code, pre, a). Everything is escaped first, so untrusted text can never
// inject markup; only the constructs below become tags, and an unmatched marker stays literal:
//
//	```lang ... ```  → <pre><code class="language-lang">…</code></pre> (an unclosed fence runs to the end)
//	`code`           → <code>…</code>
//	**b** / __b__    → <b>…</b>
//	*i* / _i_        → <i>…</i>
//	~~s~~            → <s>…</s>
//	[text](http…)    → <a href="…">text</a> (http and https links only)
//	# heading        → <b>heading</b>
func ToHTML(md string) string {
	var b strings.Builder
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
			lang := strings.TrimSpace(strings.TrimPrefix(t, "```"))
			var code []string
			j := i + 1
			for ; j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "```"); j++ {
				code = append(code, lines[j])
			}
			if lang != "" && langName.MatchString(lang) {
				b.WriteString(`<pre><code class="language-` + lang + `">`)
			} else {
				b.WriteString("<pre><code>")
			}
			b.WriteString(html.EscapeString(strings.Join(code, "\n")))
			b.WriteString("</code></pre>")
			i = j
			if i < len(lines)-1 {
				b.WriteByte('\n')
			}
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			b.WriteString("<b>" + inline(m[1]) + "</b>")
		} else {
			b.WriteString(inline(line))
		}
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var (
	langName = regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,32}$`)
	heading  = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	link     = regexp.MustCompile(`\[([^\[\]]+)\]\((https?://[^\s()]+)\)`)
	bold     = regexp.MustCompile(`\*\*([^*\n]+?)\*\*|__([^_\n]+?)__`)
	italic   = regexp.MustCompile(`(^|[^\w*])\*([^*\s][^*\n]*?)\*($|[^\w*])|(^|[^\w_])_([^_\s][^_\n]*?)_($|[^\w_])`)
	strike   = regexp.MustCompile(`~~([^~\n]+?)~~`)
)

// inline renders one line: code spans are escaped verbatim, the rest is escaped and then
// formatted.
func inline(line string) string {
	var b strings.Builder
	parts := strings.Split(line, "`")
	if len(parts)%2 == 0 { // an odd number of backticks: the last one is literal
		parts[len(parts)-2] += "`" + parts[len(parts)-1]
		parts = parts[:len(parts)-1]
	}
	for i, p := range parts {
		if i%2 == 1 {
			if p == "" {
				b.WriteString("``")
				continue
			}
			b.WriteString("<code>" + html.EscapeString(p) + "</code>")
			continue
		}
		b.WriteString(format(html.EscapeString(p)))
	}
	return b.String()
}

// format applies the span rules to escaped text.
func format(s string) string {
	s = link.ReplaceAllStringFunc(s, func(m string) string {
		g := link.FindStringSubmatch(m)
		href := strings.ReplaceAll(g[2], `"`, "&quot;")
		return `<a href="` + href + `">` + g[1] + `</a>`
	})
	s = bold.ReplaceAllStringFunc(s, func(m string) string {
		g := bold.FindStringSubmatch(m)
		return "<b>" + g[1] + g[2] + "</b>"
	})
	s = strike.ReplaceAllString(s, "<s>$1</s>")
	s = italic.ReplaceAllStringFunc(s, func(m string) string {
		g := italic.FindStringSubmatch(m)
		if g[2] != "" {
			return g[1] + "<i>" + g[2] + "</i>" + g[3]
		}
		return g[4] + "<i>" + g[5] + "</i>" + g[6]
	})
	return s
}
