package web

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

func TestMarkdown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in string
		want     []string // substrings of the output
		not      []string // must not occur
	}{
		{"paragraph", "hello\nworld", []string{"<p>hello<br>world</p>"}, nil},
		{"heading", "# Title", []string{"<h3>Title</h3>"}, nil},
		{"bold and code", "a **b** `c<d>`", []string{"<strong>b</strong>", "<code>c&lt;d&gt;</code>"}, nil},
		{"emphasis", "an *idea*", []string{"<em>idea</em>"}, nil},
		{"snake case is not emphasis", "call some_func_name now", []string{"some_func_name"}, []string{"<em>"}},
		{"list", "- one\n- two\n\n1. x\n2. y", []string{"<ul><li>one</li><li>two</li></ul>", "<ol><li>x</li><li>y</li></ol>"}, nil},
		{"fence", "```go\nfunc <main>() {}\n```", []string{`<pre><code data-lang="go">func &lt;main&gt;() {}</code></pre>`}, nil},
		{"fence lang attribute escaped", "```\" onmouseover=\"x\nbody\n```", []string{`data-lang="&#34;"`}, []string{`onmouseover="x"`}},
		{"quote", "> said\n> twice", []string{"<blockquote>said<br>twice<br></blockquote>"}, nil},
		{"https link", "[docs](https://example.com/a?b=1&c=2)", []string{`<a href="https://example.com/a?b=1&amp;c=2" rel="nofollow noopener noreferrer" target="_blank">docs</a>`}, nil},
		{"javascript link dropped", "[click](javascript:alert(1))", []string{"[click](javascript:alert(1))"}, []string{"<a "}},
		{"javascript link, odd case", "[x](JaVaScRiPt:alert(1))", nil, []string{"<a "}},
		{"data link dropped", "[x](data:text/html;base64,PHNjcmlwdD4=)", nil, []string{"<a "}},
		{"relative link dropped", "[x](/ui/sessions/other)", nil, []string{"<a "}},
		{"raw html escaped", "<script>alert(1)</script><img src=x onerror=alert(1)>", []string{"&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"}, []string{"<script", "<img"}},
		{"attribute breakout in link text", `[" onclick="x](https://e.com)`, []string{`>&#34; onclick=&#34;x</a>`}, []string{`" onclick="`}},
		{"terminal escapes visible", "\x1b[31mred\x1b[0m\x07", []string{"␛[31mred␛[0m␇"}, []string{"\x1b", "\x07"}},
		{"bidi override visible", "abc\u202edef", []string{`<span class="ctl">U+202E</span>`}, []string{"\u202e"}},
		{"C1 control visible", "a\u009bb", []string{`<span class="ctl">U+009B</span>`}, []string{"\u009b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := string(renderMarkdown(c.in))
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("render(%q) = %q, missing %q", c.in, got, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("render(%q) = %q, contains %q", c.in, got, n)
				}
			}
		})
	}
}

func TestSnippetHTML(t *testing.T) {
	t.Parallel()
	got := string(snippetHTML("a <b> >>>zebra<<< & >>>x<<<"))
	want := "a &lt;b&gt; <mark>zebra</mark> &amp; <mark>x</mark>"
	if got != want {
		t.Fatalf("snippet = %q, want %q", got, want)
	}
	if got := string(snippetHTML(">>><script><<<")); got != "<mark>&lt;script&gt;</mark>" {
		t.Fatalf("marked html = %q", got)
	}
}

func TestSplitLedger(t *testing.T) {
	t.Parallel()
	body := "## Goal\nship it\n\n## Working Set\nExtracted.\n### Files read\n- a.go\n\n## Next\nmore"
	sum, led := splitLedger(body)
	if !strings.HasPrefix(led, "## Working Set") || !strings.Contains(led, "a.go") || strings.Contains(led, "## Next") {
		t.Fatalf("ledger = %q", led)
	}
	if !strings.Contains(sum, "ship it") || !strings.Contains(sum, "## Next") || strings.Contains(sum, "a.go") {
		t.Fatalf("summary = %q", sum)
	}
	if s, l := splitLedger("no ledger"); s != "no ledger" || l != "" {
		t.Fatalf("no ledger: %q %q", s, l)
	}
}

func TestExplainBreak(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		layer, reason string
		index         int
		want          string
	}{
		{"messages", "compaction", 3, "first change at message 3 of the request: a compaction rewrote the history; 1,200 cached tokens lost"},
		{"system.2", "edit", 2, "the system prompt's volatile tier: earlier bytes were edited"},
		{"tools", "tools", 0, "the tool schemas: the tool set changed"},
		{"none", "ttl", 0, "cache expired"},
		{"none", "weird", 0, "no known cause (weird)"},
	} {
		got := explainBreak(&store.CacheBreak{Layer: c.layer, Index: c.index, Reason: c.reason, LostTokens: 1200})
		if !strings.Contains(got, c.want) {
			t.Errorf("explain(%s, %s) = %q, want it to contain %q", c.layer, c.reason, got, c.want)
		}
	}
}

// TestMarkdownLinearWork renders lines of unclosed markup, which made every opening rescan the
// rest of its line, at n and 2n repetitions and counts the bytes the inline searches read: the
// count must grow linearly (a bounded number of reads per input byte), not with the square.
func TestMarkdownLinearWork(t *testing.T) {
	t.Parallel()
	const n = 20000
	for _, unit := range []string{"[a](", "[", "[a]", "](", "**a", "__a", "`", "*a", "_a_b ", "***", "[**a", "[`a]("} {
		t.Run(unit, func(t *testing.T) {
			t.Parallel()
			_, w1 := renderMarkdownWork(strings.Repeat(unit, n))
			_, w2 := renderMarkdownWork(strings.Repeat(unit, 2*n))
			if size := 2 * n * len(unit); w2 > 8*size {
				t.Errorf("%q x %d: %d bytes read for %d bytes of input", unit, 2*n, w2, size)
			}
			if w2 > 2*w1+2*n {
				t.Errorf("%q: %d bytes read at n=%d, %d at 2n: more than linear", unit, w1, n, w2)
			}
		})
	}
}

// TestMarkdownInlineUnchanged renders random lines made of markdown's delimiters with inline and
// with the straightforward rescanning version it replaced (inlineRescan, kept here as the
// oracle): the output must be the same byte for byte.
func TestMarkdownInlineUnchanged(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"[", "]", "(", ")", "](", "*", "**", "_", "__", "`", " ", "a", "b_c", "<", "&", "\"",
		"https://e.com/x", "javascript:x", "mailto:a@b", "\x1b", "\u202e", "é"}
	for i := 0; i < 20000; i++ {
		var line strings.Builder
		for k := rng.IntN(24); k >= 0; k-- {
			line.WriteString(pieces[rng.IntN(len(pieces))])
		}
		var got, want strings.Builder
		work := 0
		inline(&got, line.String(), &work)
		inlineRescan(&want, line.String())
		if got.String() != want.String() {
			t.Fatalf("inline(%q)\n got %q\nwant %q", line.String(), got.String(), want.String())
		}
	}
}

func inlineRescan(b *strings.Builder, s string) {
	for len(s) > 0 {
		i := strings.IndexAny(s, "`*_[")
		if i < 0 {
			text(b, s)
			return
		}
		text(b, s[:i])
		s = s[i:]
		switch s[0] {
		case '`':
			if j := strings.IndexByte(s[1:], '`'); j >= 0 {
				b.WriteString("<code>")
				text(b, s[1:1+j])
				b.WriteString("</code>")
				s = s[j+2:]
				continue
			}
		case '*', '_':
			if strings.HasPrefix(s, "**") || strings.HasPrefix(s, "__") {
				if j := strings.Index(s[2:], s[:2]); j > 0 {
					b.WriteString("<strong>")
					inlineRescan(b, s[2:2+j])
					b.WriteString("</strong>")
					s = s[j+4:]
					continue
				}
			} else if j := strings.IndexByte(s[1:], s[0]); j > 0 && s[1] != ' ' && (s[0] == '*' || wordBoundary(s, j+2)) {
				b.WriteString("<em>")
				inlineRescan(b, s[1:1+j])
				b.WriteString("</em>")
				s = s[j+2:]
				continue
			}
		case '[':
			if j := strings.Index(s, "]("); j >= 0 && strings.IndexByte(s[1:j], '[') < 0 {
				if k := strings.IndexByte(s[j+2:], ')'); k >= 0 {
					label, href := s[1:j], strings.TrimSpace(s[j+2:j+2+k])
					if u := safeURL(href); u != "" {
						b.WriteString(`<a href="`)
						text(b, u)
						b.WriteString(`" rel="nofollow noopener noreferrer" target="_blank">`)
						inlineRescan(b, label)
						b.WriteString("</a>")
					} else {
						text(b, "["+label+"]("+href+")")
					}
					s = s[j+3+k:]
					continue
				}
			}
		}
		text(b, s[:1])
		s = s[1:]
	}
}

// BenchmarkMarkdownUnclosedLinks renders the 3.6 MB message of "[a](" repeated that took
// seconds per view when every opening rescanned the rest of its line:
//
//	go test ./web -run '^$' -bench MarkdownUnclosed
func BenchmarkMarkdownUnclosedLinks(b *testing.B) {
	src := strings.Repeat("[a](", 900_000)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		renderMarkdown(src)
	}
}
