package platform

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	para := strings.Repeat("word ", 30) // 150 runes
	code := "```go\n" + strings.Repeat("fmt.Println(1)\n", 20) + "```"
	tests := []struct {
		name   string
		text   string
		max    int
		chunks int // 0: just check the invariants
	}{
		{"short", "hello", 4096, 1},
		{"empty", "  ", 100, 0},
		{"paragraphs", para + "\n\n" + para + "\n\n" + para, 200, 3},
		{"code block", "intro\n\n" + code + "\n\nafter", 120, 0},
		{"no spaces", strings.Repeat("x", 1000), 100, 0},
		{"cyrillic runes", strings.Repeat("привет мир ", 500), 4096, 0},
		{"telegram size", strings.Repeat(para+"\n\n", 60), 4096, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(tc.text, tc.max)
			if tc.chunks > 0 && len(got) != tc.chunks {
				t.Fatalf("%d chunks, want %d: %q", len(got), tc.chunks, got)
			}
			var joined strings.Builder
			for i, c := range got {
				if n := utf8.RuneCountInString(c); n > tc.max {
					t.Fatalf("chunk %d has %d runes, limit %d", i, n, tc.max)
				}
				if strings.Count(c, "```")%2 != 0 {
					t.Fatalf("chunk %d has an unbalanced fence: %q", i, c)
				}
				joined.WriteString(c)
			}
			// Nothing but whitespace and the added fences is lost or gained.
			strip := func(s string) string {
				s = strings.ReplaceAll(s, "```go", "")
				s = strings.ReplaceAll(s, "```", "")
				return strings.Join(strings.Fields(s), "")
			}
			if strip(joined.String()) != strip(tc.text) {
				t.Fatalf("content changed by splitting")
			}
		})
	}
}

func TestSplitPrefersParagraphs(t *testing.T) {
	t.Parallel()
	a, b := strings.Repeat("a", 60), strings.Repeat("b", 60)
	got := Split(a+"\n\n"+b, 100)
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Split = %q, want the two paragraphs", got)
	}
	code := "```py\n" + strings.Repeat("x = 1\n", 40) + "```"
	got = Split(code, 100)
	if len(got) < 2 || !strings.HasPrefix(got[1], "```py\n") || !strings.HasSuffix(got[0], "\n```") {
		t.Fatalf("a cut code block is not closed and reopened: %q", got)
	}
}
