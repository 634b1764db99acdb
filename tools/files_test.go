package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func call(t *testing.T, env Env, tool, args string) Result {
	t.Helper()
	return Default().Call(context.Background(), env, tool, args)
}

type toolCase struct {
	name    string
	args    string
	isErr   bool
	want    []string // substrings the result must contain
	notWant []string
}

func runCases(t *testing.T, env Env, tool string, cases []toolCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, env, tool, c.args)
			if res.IsError != c.isErr {
				t.Fatalf("IsError=%v, want %v: %s", res.IsError, c.isErr, res.Content)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("result lacks %q:\n%s", w, res.Content)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(res.Content, w) {
					t.Errorf("result has %q:\n%s", w, res.Content)
				}
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 2500; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	writeTree(t, dir, map[string]string{
		"a.txt":        "alpha\nbeta\ngamma\n",
		"noeol.txt":    "one\ntwo",
		"long.txt":     strings.Join(lines, "\n") + "\n",
		"empty.txt":    "",
		"bin.dat":      "PK\x03\x04\x00\x00binary",
		"sub/wide.txt": strings.Repeat("x", 5000) + "\n",
		"crlf.txt":     "dos\r\nline\r\n",
	})
	huge := filepath.Join(dir, "huge.log")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxReadBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	env := Env{WorkDir: dir}
	runCases(t, env, "read_file", []toolCase{
		{name: "whole", args: `{"path":"a.txt"}`, want: []string{"1\talpha\n2\tbeta\n3\tgamma\n"}, notWant: []string{"lines "}},
		{name: "no final newline", args: `{"path":"noeol.txt"}`, want: []string{"1\tone\n2\ttwo\n"}},
		{name: "crlf", args: `{"path":"crlf.txt"}`, want: []string{"1\tdos\n2\tline\n"}},
		{name: "absolute", args: fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "a.txt")), want: []string{"2\tbeta"}},
		{name: "range", args: `{"path":"a.txt","offset":2,"limit":1}`, want: []string{"2\tbeta\n", "(lines 2-2 of 3; continue with offset=3)"}, notWant: []string{"alpha", "gamma"}},
		{name: "default limit pages", args: `{"path":"long.txt"}`, want: []string{"2000\tline 2000\n", "(lines 1-2000 of 2500; continue with offset=2001)"}, notWant: []string{"line 2001"}},
		{name: "last page", args: `{"path":"long.txt","offset":2001}`, want: []string{"2500\tline 2500", "(lines 2001-2500 of 2500)"}},
		{name: "past end", args: `{"path":"a.txt","offset":9}`, isErr: true, want: []string{"offset 9 is past the end of the file (3 lines)"}},
		{name: "empty", args: `{"path":"empty.txt"}`, want: []string{"empty.txt is empty"}},
		{name: "long line cut", args: `{"path":"sub/wide.txt"}`, want: []string{"[... line cut, 5000 bytes]"}},
		{name: "binary", args: `{"path":"bin.dat"}`, isErr: true, want: []string{"read bin.dat: binary file"}},
		{name: "huge", args: `{"path":"huge.log"}`, isErr: true, want: []string{"over the 10485760 byte limit"}},
		{name: "missing", args: `{"path":"nope.txt"}`, isErr: true, want: []string{"read nope.txt: no such file or directory"}},
		{name: "directory", args: `{"path":"sub"}`, isErr: true, want: []string{"is a directory (use list_files)"}},
		{name: "empty path", args: `{"path":""}`, isErr: true, want: []string{"path is empty"}},
		{name: "zero offset", args: `{"path":"a.txt","offset":0}`, isErr: true, want: []string{"below the minimum"}},
	})
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"old.txt": "old\n"})
	if err := os.Chmod(filepath.Join(dir, "old.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := Env{WorkDir: dir}
	runCases(t, env, "write_file", []toolCase{
		{name: "create with parents", args: `{"path":"deep/er/new.txt","content":"héllo\nworld"}`, want: []string{"created deep/er/new.txt: wrote 12 bytes (2 lines)"}},
		{name: "replace", args: `{"path":"old.txt","content":"new\n"}`, want: []string{"updated old.txt: wrote 4 bytes (1 lines)"}},
		{name: "empty content", args: `{"path":"blank.txt","content":""}`, want: []string{"wrote 0 bytes"}},
		{name: "onto a directory", args: `{"path":"deep","content":"x"}`, isErr: true, want: []string{"write deep: is a directory"}},
		{name: "missing content", args: `{"path":"x.txt"}`, isErr: true, want: []string{`missing required property "content"`}},
	})
	for name, want := range map[string]string{"deep/er/new.txt": "héllo\nworld", "old.txt": "new\n", "blank.txt": ""} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "old.txt")); st.Mode().Perm() != 0o600 {
		t.Errorf("replace changed permissions to %v", st.Mode().Perm())
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{"b.go": "", "a.go": "", "README.md": "", "cmd/x/main.go": "", "cmd/y/main.go": "",
		".git/HEAD": "", "node_modules/m/index.js": ""}
	for i := range 30 {
		files[fmt.Sprintf("many/f%02d.txt", i)] = ""
	}
	writeTree(t, dir, files)
	env := Env{WorkDir: dir}
	runCases(t, env, "list_files", []toolCase{
		{name: "top level", args: `{}`, want: []string{".git/\nREADME.md\na.go\nb.go\ncmd/\nmany/\nnode_modules/\n"}, notWant: []string{"HEAD", "main.go"}},
		{name: "glob by name", args: `{"glob":"*.go","recursive":true}`, want: []string{"a.go\nb.go\ncmd/x/main.go\ncmd/y/main.go\n"}, notWant: []string{"README", "index.js"}},
		{name: "glob by path", args: `{"glob":"cmd/*/main.go","recursive":true}`, want: []string{"cmd/x/main.go\ncmd/y/main.go\n"}, notWant: []string{"a.go"}},
		{name: "subdir", args: `{"dir":"cmd","recursive":true}`, want: []string{"x/\nx/main.go\ny/\ny/main.go\n"}},
		{name: "limit", args: `{"dir":"many","limit":5}`, want: []string{"f00.txt\nf01.txt\nf02.txt\nf03.txt\nf04.txt\n(stopped at 5 entries"}, notWant: []string{"f05"}},
		{name: "no match", args: `{"glob":"*.rs","recursive":true}`, want: []string{`no entries in . match "*.rs"`}},
		{name: "bad glob", args: `{"glob":"[","recursive":true}`, isErr: true, want: []string{"syntax error in pattern"}},
		{name: "missing dir", args: `{"dir":"nope"}`, isErr: true, want: []string{"list nope: no such file or directory"}},
		{name: "file not dir", args: `{"dir":"a.go"}`, isErr: true, want: []string{"not a directory"}},
	})
}

func TestSearchFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"main.go":         "package main\n\nfunc main() {\n\tprintln(\"Hello (world)\")\n}\n",
		"lib/util.go":     "package lib\n// TODO: fix hello\n",
		"notes.md":        "hello notes\n",
		".git/config":     "hello from git\n",
		"img.png":         "\x89PNG\x00\x00hello",
		"node_modules/x":  "hello dep\n",
		"many/lines.txt":  strings.Repeat("match me\n", 200),
		"big/minified.js": strings.Repeat("y", 3000) + "hello\n",
	}
	writeTree(t, dir, files)
	env := Env{WorkDir: dir}
	runCases(t, env, "search_files", []toolCase{
		{name: "regex", args: `{"pattern":"[Hh]ello","dir":"."}`, want: []string{"main.go:4: \tprintln(\"Hello (world)\")", "lib/util.go:2: // TODO: fix hello", "notes.md:1: hello notes"},
			notWant: []string{".git", "img.png", "node_modules"}},
		{name: "literal", args: `{"pattern":"(world)","literal":true}`, want: []string{"main.go:4:"}, notWant: []string{"util.go"}},
		{name: "ignore case", args: `{"pattern":"HELLO NOTES","ignore_case":true}`, want: []string{"notes.md:1:"}},
		{name: "glob", args: `{"pattern":"hello","ignore_case":true,"glob":"*.go"}`, want: []string{"main.go:4", "lib/util.go:2"}, notWant: []string{"notes.md"}},
		{name: "bounded", args: `{"pattern":"match me","max_matches":3}`, want: []string{"many/lines.txt:3: match me\n(stopped at 3 matches"}, notWant: []string{"lines.txt:4:"}},
		{name: "long line cut", args: `{"pattern":"hello","dir":"big"}`, want: []string{"big/minified.js:1: yyy", "[...]"}},
		{name: "one file", args: `{"pattern":"package","dir":"lib/util.go"}`, want: []string{"lib/util.go:1: package lib"}},
		{name: "no match", args: `{"pattern":"zebra"}`, want: []string{`no matches for "zebra"`}},
		{name: "bad regex", args: `{"pattern":"(unclosed"}`, isErr: true, want: []string{"not a valid regular expression", "literal=true"}},
		{name: "missing dir", args: `{"pattern":"x","dir":"nope"}`, isErr: true, want: []string{"no such file or directory"}},
	})
}
