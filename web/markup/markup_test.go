package markup

import "testing"

func TestWriter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		do   func(w *Writer)
		want string
	}{
		{"text escaped", func(w *Writer) { w.F("<p>%s</p>", `<script>"x"&'y'</script>`) },
			"<p>&lt;script&gt;&#34;x&#34;&amp;&#39;y&#39;&lt;/script&gt;</p>"},
		{"attribute cannot be left", func(w *Writer) { w.F(`<a title="%s">`, `" onclick="x`) },
			`<a title="&#34; onclick=&#34;x">`},
		{"HTML kept", func(w *Writer) { w.F("<div>%s</div>", HTML("<b>ok</b>")) }, "<div><b>ok</b></div>"},
		{"numbers and percent", func(w *Writer) { w.F("%s%% of %s", 50, int64(7)) }, "50% of 7"},
		{"NUL replaced", func(w *Writer) { w.Text("a\x00b") }, "a\uFFFDb"},
		{"path segment", func(w *Writer) { w.F(`<a href="/s/%s">`, Seg(`a/b?c#"d`)) }, `<a href="/s/a%2Fb%3Fc%23%22d">`},
		{"other verbs literal", func(w *Writer) { w.F("%d %s", "x") }, "%d x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var w Writer
			c.do(&w)
			if got := w.String(); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestWriterArgumentCount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format string
		args   []any
	}{{"%s %s", []any{"a"}}, {"%s", []any{"a", "b"}}, {"%s", []any{1.5}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("F(%q, %v) did not panic", c.format, c.args)
				}
			}()
			var w Writer
			w.F(c.format, c.args...)
		}()
	}
}
