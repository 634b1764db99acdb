package fts

import (
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// TestLikeGroupsOf: the LIKE reading of a sanitized MATCH expression keeps its operators.
func TestLikeGroupsOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ match, want string }{
		{"a b", "[+a +b]"},
		{"a OR b", "[+a] [+b]"},
		{"a NOT b OR c", "[+a -b] [+c]"},
		{`"my-app.config.ts" deploy*`, "[+my-app.config.ts +deploy]"},
		{`"two words" AND x`, "[+two words +x]"},
	} {
		var parts []string
		for _, g := range likeGroupsOf(c.match) {
			var ts []string
			for _, term := range g {
				sign := "+"
				if term.neg {
					sign = "-"
				}
				ts = append(ts, sign+term.text)
			}
			parts = append(parts, "["+strings.Join(ts, " ")+"]")
		}
		if got := strings.Join(parts, " "); got != c.want {
			t.Errorf("likeGroupsOf(%q) = %s, want %s", c.match, got, c.want)
		}
	}
}

// TestCallsText: the index sees tool names and argument values, never the envelope.
func TestCallsText(t *testing.T) {
	t.Parallel()
	got := callsText([]store.ToolCall{
		{ID: "call_9", Type: "function", Function: store.ToolFunction{Name: "grep", Arguments: `{"pattern":"x y","opts":{"n":3,"i":true},"paths":["a","b"]}`}},
		{ID: "call_10", Type: "function", Function: store.ToolFunction{Name: "shell", Arguments: `ls -la {`}},
	})
	if want := "grep 3 a b x y shell ls -la {"; got != want {
		t.Fatalf("callsText = %q, want %q", got, want)
	}
	long := callsText([]store.ToolCall{{Function: store.ToolFunction{Name: "w", Arguments: strings.Repeat("z", 20000)}}})
	if len(long) != indexedToolChars {
		t.Fatalf("callsText of a huge argument is %d characters, want %d", len(long), indexedToolChars)
	}
}
