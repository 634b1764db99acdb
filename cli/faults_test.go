package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bundle is an export file: 50 good sessions, then one more session line (extra).
func bundle(extra string) string {
	var b strings.Builder
	b.WriteString(`{"spool_export":1,"exported_at":"2026-11-30T00:00:00Z","sessions":51}` + "\n")
	for i := range 50 {
		id := fmt.Sprintf("20261130_0000%02d_good%02d", i, i)
		fmt.Fprintf(&b, `{"type":"session","id":%q,"source":"cli","started_at":"2026-11-30T00:00:00Z","message_count":1,"tool_call_count":0,"usage":{}}`+"\n", id)
		fmt.Fprintf(&b, `{"type":"message","session_id":%q,"id":1,"role":"user","content":"good %d","timestamp":"2026-11-30T00:00:00Z","summary":false,"active":true,"compacted":false}`+"\n", id, i)
	}
	b.WriteString(extra + "\n")
	return b.String()
}

func hostileSession(field string) string {
	return `{"type":"session",` + field + `,"source":"cli","started_at":"2026-11-30T00:00:00Z","message_count":0,"tool_call_count":0,"usage":{}}`
}

// A file with a bad session after good ones is rejected whole: one line naming the problem,
// exit 1, and not one of the good sessions stored (before: the 50 good ones were imported, the
// command exited 1, and some of these ids were accepted).
func TestHostileImportStoresNothing(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, line, want string }{
		{"path traversal", hostileSession(`"id":"../evil"`), "path separator"},
		{"slash", hostileSession(`"id":"a/b"`), "path separator"},
		{"NUL", hostileSession(`"id":"a\u0000b"`), "control character"},
		{"edge whitespace", hostileSession(`"id":" padded"`), "whitespace"},
		{"inner newline", hostileSession(`"id":"two\nlines"`), "whitespace"},
		{"inner space", hostileSession(`"id":"two words"`), "whitespace"},
		{"escape sequence", hostileSession(`"id":"\u001b[2Jwipe"`), "control character"},
		{"too long", hostileSession(`"id":"` + strings.Repeat("x", 100_000) + `"`), "limit is 128"},
		{"long title", hostileSession(`"id":"20261130_titled","title":"` + strings.Repeat("t", 101) + `"`), "the limit is 100"},
		{"bad parent", hostileSession(`"id":"20261130_child","parent_id":"../up","relation":"branch"`), "parent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			file := filepath.Join(t.TempDir(), "hostile.jsonl")
			if err := os.WriteFile(file, []byte(bundle(tc.line)), 0o600); err != nil {
				t.Fatal(err)
			}
			spool(t, home, "sessions", "list").ok(t, "create the database")
			r := spool(t, home, "sessions", "import", file)
			msg := strings.TrimSuffix(r.stderr, "\n")
			if r.code != 1 || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "spool: ") || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "line 102") {
				t.Errorf("import: exit %d, stderr %q; want exit 1 and one line naming line 102 and %q", r.code, r.stderr, tc.want)
			}
			if strings.Contains(msg, "\x1b") || strings.Contains(msg, "\x00") {
				t.Errorf("the error repeats raw control bytes: %q", msg)
			}
			list := spool(t, home, "sessions", "list", "--json").ok(t, "list")
			if strings.Contains(list.stdout, "good") {
				t.Fatalf("a rejected file left sessions behind:\n%s", list.stdout)
			}
		})
	}
	t.Run("good file", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		file := filepath.Join(t.TempDir(), "good.jsonl")
		if err := os.WriteFile(file, []byte(bundle(hostileSession(`"id":"20261130_last"`))), 0o600); err != nil {
			t.Fatal(err)
		}
		r := spool(t, home, "sessions", "import", file).ok(t, "import")
		if !strings.Contains(r.stdout, "Imported 51 sessions (50 messages)") {
			t.Fatalf("import of a good file: %q", r.stdout)
		}
	})
}
