package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFindRuleFile(t *testing.T) {
	t.Parallel()
	// Each layout is rooted in its own temp dir: "top/" is above the repository, "repo/" holds
	// .git, and the search starts in "repo/sub/dir" unless start says otherwise.
	cases := []struct {
		name  string
		files []string // paths to create; a trailing "/" makes a directory
		start string
		want  string // path relative to the layout root, "" for none
	}{
		{"SPOOL.md in the working dir", []string{"top/repo/.git/", "top/repo/sub/dir/SPOOL.md"}, "", "top/repo/sub/dir/SPOOL.md"},
		{".spool.md in the working dir", []string{"top/repo/.git/", "top/repo/sub/dir/.spool.md"}, "", "top/repo/sub/dir/.spool.md"},
		{"SPOOL.md wins over .spool.md", []string{"top/repo/.git/", "top/repo/sub/dir/SPOOL.md", "top/repo/sub/dir/.spool.md"}, "", "top/repo/sub/dir/SPOOL.md"},
		{"walks up to the git root", []string{"top/repo/.git/", "top/repo/SPOOL.md"}, "", "top/repo/SPOOL.md"},
		{"nearest spool file wins", []string{"top/repo/.git/", "top/repo/SPOOL.md", "top/repo/sub/.spool.md"}, "", "top/repo/sub/.spool.md"},
		{"a .git file (worktree) marks the root too", []string{"top/repo/.git", "top/repo/SPOOL.md"}, "", "top/repo/SPOOL.md"},
		{"stops at the git root", []string{"top/repo/.git/", "top/SPOOL.md"}, "", ""},
		{"spool file beats AGENTS.md", []string{"top/repo/.git/", "top/repo/SPOOL.md", "top/repo/sub/dir/AGENTS.md"}, "", "top/repo/SPOOL.md"},
		{"AGENTS.md beats CLAUDE.md", []string{"top/repo/.git/", "top/repo/sub/dir/AGENTS.md", "top/repo/sub/dir/CLAUDE.md"}, "", "top/repo/sub/dir/AGENTS.md"},
		{"CLAUDE.md last", []string{"top/repo/.git/", "top/repo/sub/dir/CLAUDE.md"}, "", "top/repo/sub/dir/CLAUDE.md"},
		{"AGENTS.md only in the working dir", []string{"top/repo/.git/", "top/repo/AGENTS.md", "top/repo/sub/dir/"}, "", ""},
		{"a directory named SPOOL.md is no file", []string{"top/repo/.git/", "top/repo/sub/dir/SPOOL.md/", "top/repo/sub/dir/CLAUDE.md"}, "", "top/repo/sub/dir/CLAUDE.md"},
		{"outside git only the working dir", []string{"top/SPOOL.md", "top/nogit/"}, "top/nogit", ""},
		{"outside git, in the working dir", []string{"top/nogit/.spool.md"}, "top/nogit", "top/nogit/.spool.md"},
		{"nothing at all", []string{"top/repo/.git/", "top/repo/sub/dir/"}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for _, f := range c.files {
				p := filepath.Join(root, filepath.FromSlash(f))
				if strings.HasSuffix(f, "/") {
					if err := os.MkdirAll(p, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				write(t, p, "rules for "+f)
			}
			start := c.start
			if start == "" {
				start = "top/repo/sub/dir"
			}
			startDir := filepath.Join(root, filepath.FromSlash(start))
			if err := os.MkdirAll(startDir, 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := FindRuleFile(startDir)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if c.want != "" {
				want = filepath.Join(root, filepath.FromSlash(c.want))
			}
			if got != want {
				t.Fatalf("FindRuleFile = %q, want %q", got, want)
			}
			if want == "" {
				return
			}
			p, err := Build(Env{WorkDir: startDir})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Context, "rules for "+c.want) || p.RuleFile != want {
				t.Errorf("context tier does not carry %s:\n%s", c.want, p.Context)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		text  string
		limit int
		want  string
	}{
		{"under the limit", "short", 10, "short"},
		{"at the limit", "0123456789", 10, "0123456789"},
		{"over: 70% head, 20% tail", "abcdefghijklmnopqrstuvwxyz", 10,
			"abcdefg\n\n" + TruncationMarker("F", 17) + "\n\nyz"},
		{"cuts runes, not bytes", strings.Repeat("é", 30) + "ü", 10,
			strings.Repeat("é", 7) + "\n\n" + TruncationMarker("F", 22) + "\n\néü"},
		{"no limit", "abc", 0, "abc"},
	}
	for _, c := range cases {
		got := truncate(c.text, c.limit, 0, "F")
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: invalid UTF-8", c.name)
		}
	}
}

func TestLargeRuleFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		size int
	}{
		{"over the character bound", 30_000},
		{"over the read bound", 3 << 20},
	}
	for _, c := range cases {
		dir := t.TempDir()
		body := "HEAD-MARK" + strings.Repeat("ab\n", c.size/3) + "TAIL-MARK"
		write(t, filepath.Join(dir, "AGENTS.md"), body)
		p, err := Build(Env{WorkDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"HEAD-MARK", "TAIL-MARK", "[... AGENTS.md truncated: "} {
			if !strings.Contains(p.Context, w) {
				t.Errorf("%s: context tier lacks %q", c.name, w)
			}
		}
		if n := utf8.RuneCountInString(p.Context); n > DefaultMaxRuleChars+200 {
			t.Errorf("%s: context tier has %d characters", c.name, n)
		}
	}
}

func TestTrimPartialRunes(t *testing.T) {
	t.Parallel()
	s := "héllo wörld"
	// Cut inside the two-byte é at the front and inside ö at the back.
	cut := s[2 : len(s)-4]
	if got := trimPartialRunes(cut); got != "llo w" {
		t.Errorf("trimPartialRunes(%q) = %q", cut, got)
	}
	if got := trimPartialRunes("\uFFFDok\uFFFD"); got != "\uFFFDok\uFFFD" {
		t.Errorf("a real replacement character was dropped: %q", got)
	}
}
