package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEditFile: exact replacements with a uniqueness check, several edits applied in order and
// all or none, one clear line for each refusal, and the diff in the result.
func TestEditFile(t *testing.T) {
	t.Parallel()
	const src = "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 1\n}\n"
	cases := []struct {
		name    string
		file    string // the file's content before (empty: no file)
		args    string
		isErr   bool
		want    []string // substrings of the result
		content string   // the file after ("" with isErr: unchanged)
	}{
		{name: "one edit", file: src, args: `{"path":"a.go","old_string":"func A() int {\n\treturn 1","new_string":"func A() int {\n\treturn 2"}`,
			want:    []string{"edited a.go: 1 edit, +1 -1 lines\n@@ -3,3 +3,3 @@\n func A() int {\n-\treturn 1\n+\treturn 2\n }\n"},
			content: strings.Replace(src, "return 1", "return 2", 1)},
		{name: "not unique", file: src, args: `{"path":"a.go","old_string":"return 1","new_string":"return 2"}`, isErr: true,
			want: []string{"edit a.go: old_string is not unique: it occurs 2 times (on lines 4, 8); add surrounding lines to make it unique, or set replace_all (nothing was changed)"}},
		{name: "replace_all", file: src, args: `{"path":"a.go","old_string":"return 1","new_string":"return 3","replace_all":true}`,
			want: []string{"edited a.go"}, content: strings.ReplaceAll(src, "return 1", "return 3")},
		{name: "not found", file: src, args: `{"path":"a.go","old_string":"return 9","new_string":"return 2"}`, isErr: true,
			want: []string{"edit a.go: old_string not found; read the file again and copy the text exactly (whitespace and indentation count) (nothing was changed)"}},
		{name: "several edits in order", file: src, args: `{"path":"a.go","edits":[
			{"old_string":"func A","new_string":"func First"},
			{"old_string":"func First() int {\n\treturn 1","new_string":"func First() int {\n\treturn 10"},
			{"old_string":"func B","new_string":"func Second"}]}`,
			want:    []string{"edited a.go: 3 edits, +3 -3 lines\n"},
			content: "package a\n\nfunc First() int {\n\treturn 10\n}\n\nfunc Second() int {\n\treturn 1\n}\n"},
		{name: "several edits: all or none", file: src, args: `{"path":"a.go","edits":[
			{"old_string":"func A","new_string":"func First"},
			{"old_string":"func Missing","new_string":"func X"}]}`, isErr: true,
			want: []string{"edit a.go: edit 2 of 2: old_string not found"}},
		{name: "both forms", file: src, args: `{"path":"a.go","old_string":"a","new_string":"b","edits":[{"old_string":"c","new_string":"d"}]}`, isErr: true,
			want: []string{"pass either old_string and new_string, or edits, not both"}},
		{name: "no new_string", file: src, args: `{"path":"a.go","old_string":"a"}`, isErr: true,
			want: []string{"old_string and new_string are required (or edits)"}},
		{name: "empty old_string", file: src, args: `{"path":"a.go","old_string":"","new_string":"x"}`, isErr: true,
			want: []string{"old_string is empty; to create a file use write_file"}},
		{name: "same strings", file: src, args: `{"path":"a.go","old_string":"func A","new_string":"func A"}`, isErr: true,
			want: []string{"old_string and new_string are the same"}},
		{name: "no such file", args: `{"path":"a.go","old_string":"a","new_string":"b"}`, isErr: true,
			want: []string{"edit a.go: no such file; use write_file to create a file"}},
		{name: "CRLF file, LF old_string", file: "one\r\ntwo\r\nthree\r\n", args: `{"path":"a.go","old_string":"one\ntwo\n","new_string":"one\n2\n"}`,
			want: []string{"edited a.go"}, content: "one\r\n2\r\nthree\r\n"},
		{name: "deleting text", file: src, args: `{"path":"a.go","old_string":"\nfunc B() int {\n\treturn 1\n}\n","new_string":""}`,
			want: []string{"-func B() int {"}, content: "package a\n\nfunc A() int {\n\treturn 1\n}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "a.go")
			if c.file != "" {
				writeTree(t, dir, map[string]string{"a.go": c.file})
			}
			res := call(t, Env{WorkDir: dir}, "edit_file", c.args)
			if res.IsError != c.isErr {
				t.Fatalf("IsError=%v, want %v: %s", res.IsError, c.isErr, res.Content)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("result lacks %q:\n%s", w, res.Content)
				}
			}
			if c.isErr && strings.Count(res.Content, "\n") > 0 {
				t.Errorf("error is not one line: %q", res.Content)
			}
			got, _ := os.ReadFile(p)
			want := c.content
			if c.isErr {
				want = c.file
			}
			if string(got) != want {
				t.Errorf("file is %q, want %q", got, want)
			}
		})
	}
}

// TestEditFileApproval: with ConfirmWrites the approver sees the edit as a diff before anything
// is written; a refusal leaves the file, and a file changed while the question was open is not
// overwritten.
func TestEditFileApproval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer func(p string) error // what the approver does, besides answering
		want   string
		file   string
	}{
		{"approved", func(string) error { return nil }, "edited a.txt", "one\nTWO\n"},
		{"refused", func(string) error { return ErrDenied }, "not approved", "one\ntwo\n"},
		{"changed meanwhile", func(p string) error { return os.WriteFile(p, []byte("one\ntwo\nthree\n"), 0o644) },
			"edit a.txt: the file changed since it was read for this edit; read it again (nothing was changed)", "one\ntwo\nthree\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "a.txt")
			writeTree(t, dir, map[string]string{"a.txt": "one\ntwo\n"})
			var asked ApprovalRequest
			env := Env{WorkDir: dir, ConfirmWrites: true, Approver: func(_ context.Context, req ApprovalRequest) error {
				asked = req
				return tc.answer(p)
			}}
			res := call(t, env, "edit_file", `{"path":"a.txt","old_string":"two","new_string":"TWO"}`)
			if !strings.Contains(res.Content, tc.want) {
				t.Errorf("result %q, want %q", res.Content, tc.want)
			}
			if asked.Tool != "edit_file" || asked.Question() != "Edit "+p+"?" || !strings.Contains(asked.Diff, "-two\n+TWO\n") {
				t.Errorf("approver asked %+v (%q)", asked, asked.Question())
			}
			if got, _ := os.ReadFile(p); string(got) != tc.file {
				t.Errorf("file %q, want %q", got, tc.file)
			}
		})
	}
}

// TestJournalReverts: write_file and edit_file record what they change; reverting a run of
// changes puts each file back as it was before the first (a created file is removed), and a
// file changed since is refused, not clobbered.
func TestJournalReverts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := &Journal{Dir: filepath.Join(t.TempDir(), "undo")}
	writeTree(t, dir, map[string]string{"a.go": "old a\n", "b.go": "old b\n"})
	env := Env{WorkDir: dir, SessionID: "s1", Journal: j}
	steps := []struct{ id, tool, args string }{
		{"c1", "edit_file", `{"path":"a.go","old_string":"old a","new_string":"new a"}`},
		{"c2", "write_file", `{"path":"new.txt","content":"fresh\n"}`},
		{"c3", "edit_file", `{"path":"a.go","old_string":"new a","new_string":"newer a"}`},
		{"c4", "write_file", `{"path":"b.go","content":"new b\n"}`},
	}
	for _, s := range steps {
		env.CallID = s.id
		if res := call(t, env, s.tool, s.args); res.IsError {
			t.Fatal(res.Content)
		}
	}
	var changes []FileChange
	for _, s := range steps {
		ch, ok, err := j.Lookup([]string{"other", "s1"}, s.id)
		if err != nil || !ok {
			t.Fatalf("lookup %s: %v %v", s.id, ok, err)
		}
		changes = append(changes, ch)
	}
	if _, ok, _ := j.Lookup([]string{"other"}, "c1"); ok {
		t.Error("a call was found in a session it was not recorded in")
	}
	// b.go changes after the tool wrote it: that one must be left alone.
	writeTree(t, dir, map[string]string{"b.go": "the user's b\n"})
	reverts := PlanReverts(changes)
	if len(reverts) != 3 {
		t.Fatalf("%d reverts, want one per file: %+v", len(reverts), reverts)
	}
	for _, r := range reverts {
		err := r.Apply()
		switch filepath.Base(r.Path) {
		case "b.go":
			if err == nil || !r.Changed || !strings.Contains(err.Error(), "changed since") {
				t.Errorf("b.go: %v (changed %v), want a refusal", err, r.Changed)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", r.Path, err)
			}
		}
	}
	want := map[string]string{"a.go": "old a\n", "b.go": "the user's b\n"}
	for name, body := range want {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != body {
			t.Errorf("%s is %q, want %q", name, got, body)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt was not removed: %v", err)
	}
	j.Forget(changes[0])
	if _, ok, _ := j.Lookup([]string{"s1"}, "c1"); ok {
		t.Error("a forgotten change is still found")
	}
}

// TestJournalPrune: records older than the cutoff go, newer ones stay; a deleted session's
// records all go.
func TestJournalPrune(t *testing.T) {
	t.Parallel()
	j := &Journal{Dir: t.TempDir()}
	for _, ch := range []FileChange{{SessionID: "old", CallID: "c1"}, {SessionID: "new", CallID: "c2"}, {SessionID: "gone", CallID: "c3"}} {
		if err := j.Record(ch); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(j.Dir, "old", hashName("c1")+".json"), past, past); err != nil {
		t.Fatal(err)
	}
	if n, err := j.Prune(time.Now().Add(-24 * time.Hour)); n != 1 || err != nil {
		t.Errorf("pruned %d, %v; want the one old record", n, err)
	}
	if err := j.ForgetSession("gone"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sid, call string
		found     bool
	}{{"old", "c1", false}, {"new", "c2", true}, {"gone", "c3", false}} {
		if _, ok, _ := j.Lookup([]string{c.sid}, c.call); ok != c.found {
			t.Errorf("%s/%s found %v, want %v", c.sid, c.call, ok, c.found)
		}
	}
	if _, err := os.Stat(filepath.Join(j.Dir, "old")); !os.IsNotExist(err) {
		t.Errorf("the emptied session directory stays: %v", err)
	}
}
