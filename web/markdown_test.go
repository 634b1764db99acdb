package web

import (
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
