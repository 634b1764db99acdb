package cli

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestMarkdownRenders(t *testing.T) {
	t.Parallel()
	const (
		b, bo = ansiBold, ansiBoldOff
		c, co = ansiCode, ansiCodeOff
		d, do = ansiDim, ansiDimOff
	)
	cases := []struct {
		name   string
		deltas []string // the stream as the model sent it
		want   string
	}{
		{"plain text", []string{"just words, no markup\n"}, "just words, no markup\n"},
		{"heading", []string{"## Plan\n"}, b + "Plan" + bo + "\n"},
		{"heading with closing hashes and code", []string{"# Use `go test` #\n"}, b + "Use " + c + "go test" + co + bo + "\n"},
		{"not a heading", []string{"#hashtag and #7\n"}, "#hashtag and #7\n"},
		{"bold", []string{"a **bold** word\n"}, "a " + b + "bold" + bo + " word\n"},
		{"inline code", []string{"run `spool chat` now\n"}, "run " + c + "spool chat" + co + " now\n"},
		{"code keeps stars", []string{"`a**b**c`\n"}, c + "a**b**c" + co + "\n"},
		{"unmatched markers stay", []string{"2 ** 3 and a ` tick\n"}, "2 ** 3 and a ` tick\n"},
		{"bullets", []string{"- one\n  * two **x**\n+ three\n"},
			"• one\n  • two " + b + "x" + bo + "\n• three\n"},
		{"link", []string{"see [the docs](https://example.com/a) please\n"}, "see the docs (https://example.com/a) please\n"},
		{"not a link", []string{"[a] (b) and [x](has space)\n"}, "[a] (b) and [x](has space)\n"},
		{"fenced code block", []string{"before\n```go\nx := `raw` **no**\n\n```\nafter\n"},
			"before\n" + codeIndent + d + "x := `raw` **no**" + do + "\n\nafter\n"},
		{"tilde fence", []string{"~~~\n# not a heading\n~~~\n"}, codeIndent + d + "# not a heading" + do + "\n"},
		{"line split across deltas", []string{"a **bo", "ld** `co", "de`\n- it", "em\n"},
			"a " + b + "bold" + bo + " " + c + "code" + co + "\n• item\n"},
		{"fence split across deltas", []string{"``", "`sh\necho hi\n`", "``\ndone"},
			codeIndent + d + "echo hi" + do + "\ndone"},
		{"unfinished last line is flushed", []string{"ends with **bold**"}, "ends with " + b + "bold" + bo},
		{"several lines in one delta", []string{"# T\ntext\n"}, b + "T" + bo + "\ntext\n"},
		{"blank lines between blocks", []string{"para one\n\n## Next\n\npara two\n"},
			"para one\n\n" + b + "Next" + bo + "\n\npara two\n"},
		{"table aligned by display width", []string{"| Name | 数量 |\n|---|--:|\n| `ab` | 1 |\n| 日本 | 200 |\nafter\n"},
			b + "Name" + bo + " │ " + b + "数量" + bo + "\n" +
				"─────┼─────\n" +
				c + "ab" + co + "   │    1\n" +
				"日本 │  200\n" +
				"after\n"},
		{"table split across deltas, ended by the flush", []string{"| a | b |\n| -", "-- | --- |\n| x \\| y | z |"},
			b + "a" + bo + "     │ " + b + "b" + bo + "\n──────┼──\nx | y │ z\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			m := newMarkdown(&out)
			for _, d := range tc.deltas {
				if n, err := m.Write([]byte(d)); n != len(d) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", d, n, err)
				}
			}
			if err := m.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tc.want {
				t.Errorf("rendered %q\n          want %q", got, tc.want)
			}
		})
	}
}

// TestMarkdownWaitsForTheNewline: nothing of a line is drawn before its end is known, so a
// marker split across deltas is never drawn half-styled.
func TestMarkdownWaitsForTheNewline(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	m := newMarkdown(&out)
	m.Write([]byte("**half"))
	if out.Len() != 0 {
		t.Fatalf("drew %q before the line ended", out.String())
	}
	m.Write([]byte("** done\nnext"))
	if want := ansiBold + "half" + ansiBoldOff + " done\n"; out.String() != want {
		t.Fatalf("after the newline: %q, want %q", out.String(), want)
	}
	m.Flush()
	m.Flush() // a second flush has nothing left to draw
	if !strings.HasSuffix(out.String(), " done\nnext") {
		t.Errorf("flush: %q", out.String())
	}
}

// TestMarkdownLive: the unfinished line is shown styled as far as its markers are closed, a
// fence being typed shows nothing, and peeking changes nothing that is drawn later.
func TestMarkdownLive(t *testing.T) {
	t.Parallel()
	cases := []struct{ stream, peek string }{
		{"some **bold** te", "some " + ansiBold + "bold" + ansiBoldOff + " te"},
		{"an **open marker", "an **open marker"},
		{"*it* and _so_ but snake_case and 2 * 3", ansiItalic + "it" + ansiItalicOf + " and " + ansiItalic + "so" + ansiItalicOf + " but snake_case and 2 * 3"},
		{"```g", ""},
		{"```go\nx := 1", codeIndent + ansiDim + "x := 1" + ansiDimOff},
		{"- item", bulletMarker + "item"},
	}
	for _, tc := range cases {
		var out strings.Builder
		m := newMarkdown(&out)
		m.Write([]byte(tc.stream))
		if got := m.Peek(); got != tc.peek {
			t.Errorf("Peek after %q = %q, want %q", tc.stream, got, tc.peek)
		}
		before := out.String()
		m.Flush()
		if got := strings.TrimPrefix(out.String(), before); tc.peek != "" && got != tc.peek {
			t.Errorf("after %q Flush drew %q, Peek showed %q", tc.stream, got, tc.peek)
		}
	}
	var out strings.Builder
	m := newMarkdown(&out)
	m.Write([]byte("one two three four"))
	m.breakAt(9)
	if out.String() != "one two\n" || m.Pending() != "three four" {
		t.Errorf("breakAt: drew %q, kept %q", out.String(), m.Pending())
	}
}

// TestHistoryPersists: entries survive a reload (multi-line ones whole), repeats of the newest
// are not stored twice, search finds the newest match first and then older ones.
func TestHistoryPersists(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/history"
	h := loadHistory(path)
	for _, e := range []string{"first", "two\nlines", "two\nlines", "", "third first"} {
		if err := h.add(e); err != nil {
			t.Fatal(err)
		}
	}
	h2 := loadHistory(path)
	if h2.len() != 3 || h2.at(1) != "two\nlines" {
		t.Fatalf("reloaded %d entries, [1]=%q", h2.len(), h2.at(1))
	}
	if i := h2.search("FIRST", h2.len()); i != 2 {
		t.Errorf("search newest = %d, want 2", i)
	}
	if i := h2.search("first", 2); i != 0 {
		t.Errorf("search older = %d, want 0", i)
	}
	if i := h2.search("absent", h2.len()); i != -1 {
		t.Errorf("search absent = %d", i)
	}
}

func TestWrapText(t *testing.T) {
	t.Parallel()
	cjk := strings.Repeat("日本語のテキスト", 6) // 96 columns, no spaces
	for _, tc := range []struct {
		name  string
		in    string
		width int
		want  []string // the rows
	}{
		{"fits", "short line", 80, []string{"short line"}},
		{"words at spaces", "alpha beta gamma delta", 11, []string{"alpha beta", "gamma delta"}},
		{"CJK bullet breaks between characters, never leaves the bullet alone", "• " + cjk, 40,
			[]string{"• 日本語のテキスト日本語のテキスト日本語", "  のテキスト日本語のテキスト日本語のテキ", "  スト日本語のテキスト"}},
		{"bullet continuation hangs under its text", "  • alpha beta gamma delta", 16,
			[]string{"  • alpha beta", "    gamma delta"}},
		{"CJK bullet at 80 columns keeps every character", "• " + strings.Repeat("使用正则表达式搜索文本", 8), 80,
			[]string{"• 使用正则表达式搜索文本使用正则表达式搜索文本使用正则表达式搜索文本使用正则表达",
				"  式搜索文本使用正则表达式搜索文本使用正则表达式搜索文本使用正则表达式搜索文本使",
				"  用正则表达式搜索文本"}},
		{"numbered item hangs too", "12. one two three four", 14, []string{"12. one two", "    three four"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := strings.Split(wrapText(tc.in, tc.width), "\n")
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("wrapText(%q, %d) =\n%q\nwant\n%q", tc.in, tc.width, got, tc.want)
			}
			for _, r := range got {
				if w := ansi.StringWidth(r); w > tc.width {
					t.Errorf("row %q is %d columns wide, over %d", r, w, tc.width)
				}
			}
		})
	}
}
