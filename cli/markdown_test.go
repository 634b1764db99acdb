package cli

import (
	"strings"
	"testing"
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
