package fts

import (
	"strings"
	"testing"
)

func TestMatchTerms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		match string
		want  []snipTerm
	}{
		{`deploy`, []snipTerm{{"deploy", false, "deploy"}}},
		{`Deploy*`, []snipTerm{{"deploy", true, ""}}},
		{`testing`, []snipTerm{{"testing", false, "test"}}},
		{`"server is down" more`, []snipTerm{{"server", false, ""}, {"is", false, ""}, {"down", false, ""}, {"more", false, "more"}}},
		{`"chat-send"*`, []snipTerm{{"chat", false, ""}, {"send", true, ""}}},
		{`a NOT b OR c`, []snipTerm{{"a", false, "a"}, {"c", false, "c"}}},
		{`a AND NOT "b c" d`, []snipTerm{{"a", false, "a"}, {"d", false, "d"}}},
		{`src "main.py"`, []snipTerm{{"src", false, "src"}, {"main", false, ""}, {"py", false, ""}}},
		{`"unterminated`, []snipTerm{{"unterminated", false, ""}}},
		{``, nil},
	}
	for _, c := range cases {
		got := matchTerms(c.match)
		if len(got) != len(c.want) {
			t.Errorf("matchTerms(%q) = %v, want %v", c.match, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("matchTerms(%q) = %v, want %v", c.match, got, c.want)
			}
		}
	}
}

func TestSnippet(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("filler ", 100) + "the Parser failed on main.go " + strings.Repeat("tail ", 100)
	cases := []struct {
		text, match string
		want        string // substring that must appear
		ok          bool
	}{
		{"The deploy failed: ECONNREFUSED.", "econnrefused", "The deploy failed: >>>ECONNREFUSED<<<.", true},
		{"Deploying now, deployed later", "deploy*", ">>>Deploying<<< now, >>>deployed<<< later", true},
		{long, `parser "main.go"`, "...", true},
		{long, `parser "main.go"`, ">>>Parser<<< failed on >>>main<<<.>>>go<<<", true},
		{"nothing here", "absent", "", false},
		{"café au lait", "café", ">>>café<<< au lait", true},
		// A bare word marks its other forms, as the index matches them; a quoted one does not.
		{"func tokenize() {}", "tokenizer", "func >>>tokenize<<<()", true},
		{"the tests passed", "tested", "the >>>tests<<< passed", true},
		{"the tests passed", `"tested"`, "", false},
	}
	for _, c := range cases {
		got, ok := snippet(c.text, matchTerms(c.match), 40)
		if ok != c.ok || !strings.Contains(got, c.want) {
			t.Errorf("snippet(%q, %q) = %q, %v; want it to contain %q (%v)", c.text[:min(40, len(c.text))], c.match, got, ok, c.want, c.ok)
		}
	}
	got, _ := snippet(long, matchTerms("parser"), 40)
	if n := len(tokenize(got)); n > 40 {
		t.Errorf("snippet has %d tokens, window is 40", n)
	}
	if !strings.HasPrefix(got, "...") || !strings.HasSuffix(got, "...") {
		t.Errorf("a cut snippet is not marked: %q", got)
	}
}
