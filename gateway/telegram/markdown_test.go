package telegram

import "testing"

func TestToHTML(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain", "hello", "hello"},
		{"escaped", `a < b & c > d "q"`, `a &lt; b &amp; c &gt; d &#34;q&#34;`},
		{"injected tag", `<b onclick=x>hi</b><script>`, `&lt;b onclick=x&gt;hi&lt;/b&gt;&lt;script&gt;`},
		{"bold italic", "**bold** and *it* and _it2_", "<b>bold</b> and <i>it</i> and <i>it2</i>"},
		{"strike", "~~gone~~", "<s>gone</s>"},
		{"code span keeps markers", "run `rm -rf *.tmp **x**` now", "run <code>rm -rf *.tmp **x**</code> now"},
		{"code span escapes", "`<b>`", "<code>&lt;b&gt;</code>"},
		{"odd backtick", "a ` b", "a ` b"},
		{"fence", "```go\nif a < b {\n}\n```", "<pre><code class=\"language-go\">if a &lt; b {\n}</code></pre>"},
		{"fence bad lang", "```x\"y\ncode\n```", "<pre><code>code</code></pre>"},
		{"unclosed fence", "```\ncode", "<pre><code>code</code></pre>"},
		{"link", "see [docs](https://example.com/a?b=1&c=2)", `see <a href="https://example.com/a?b=1&amp;c=2">docs</a>`},
		{"javascript link stays text", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"heading", "## Plan", "<b>Plan</b>"},
		{"snake_case untouched", "a_b_c and file_name.go", "a_b_c and file_name.go"},
		{"multiplication untouched", "2 * 3 * 4", "2 * 3 * 4"},
		{"lines", "a\n\nb", "a\n\nb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ToHTML(tc.in); got != tc.want {
				t.Fatalf("ToHTML(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}
