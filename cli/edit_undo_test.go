package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunShowsToolResults: `spool run` shows each call as a readable line (a command as typed,
// no JSON escapes) and the first lines of its result with a count of the rest; --verbose shows
// all of it, in run and in chat. edit_file works end to end through the offline model.
func TestRunShowsToolResults(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	cmd := `CALL terminal {"command":"seq 1 20 \u0026\u0026 echo end"}`
	r := spoolAt(t, dir, home, "run", "--yes", cmd).ok(t, "run")
	for _, want := range []string{"  ⚙ terminal seq 1 20 && echo end\n", "    ↳ 1\n      2\n      3\n      4\n      … 18 more lines (--verbose shows all)\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, `\u0026`) || strings.Contains(r.stderr, "      end\n") {
		t.Errorf("escapes, or more than the first lines, shown:\n%s", r.stderr)
	}
	r = spoolAt(t, dir, home, "run", "--yes", "--verbose", cmd).ok(t, "run --verbose")
	if !strings.Contains(r.stderr, "      19\n      20\n      end\n      [exit status 0]") || strings.Contains(r.stderr, "more lines") {
		t.Errorf("--verbose did not show the whole result:\n%s", r.stderr)
	}

	r = spoolAtIn(t, dir, home, cmd+"\n", "chat", "--yes", "--verbose").ok(t, "chat --verbose")
	if !strings.Contains(r.stderr, "      19\n      20\n      end\n      [exit status 0]") || strings.Contains(r.stderr, "more lines") {
		t.Errorf("chat --verbose did not show the whole result:\n%s", r.stderr)
	}

	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc A() int { return 1 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = spoolAt(t, dir, home, "run", "--yes", `CALL edit_file {"path":"a.go","old_string":"return 1","new_string":"return 2"}`).ok(t, "edit")
	if !strings.Contains(r.stderr, "    ↳ edited a.go: 1 edit, +1 -1 lines\n") {
		t.Errorf("no edit result:\n%s", r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.go")); string(got) != "package a\n\nfunc A() int { return 2 }\n" {
		t.Errorf("a.go is %q", got)
	}
	// Not unique, nothing changes, the model is told in one line.
	r = spoolAt(t, dir, home, "run", "--yes", `CALL edit_file {"path":"a.go","old_string":"a","new_string":"b"}`).ok(t, "edit")
	if !strings.Contains(r.stderr, "    ✗ tool edit_file failed: edit a.go: old_string is not unique: it occurs 3 times (on line 1);") {
		t.Errorf("no refusal:\n%s", r.stderr)
	}
}

// TestChatUndoRestoresFilesPiped: without a terminal, --yes restores what each undone turn
// wrote and says what it did (a created file removed, an edited one restored); without --yes
// the files stay and the chat says so.
func TestChatUndoRestoresFilesPiped(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	a, created := filepath.Join(dir, "a.go"), filepath.Join(dir, "new.txt")
	if err := os.WriteFile(a, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	turns := "CALL edit_file {\"path\":\"a.go\",\"old_string\":\"one\",\"new_string\":\"two\"}\n" +
		"CALL write_file {\"path\":\"new.txt\",\"content\":\"x\"}\n"
	r := spoolAtIn(t, dir, home, turns+"/undo\n/undo\n", "chat", "--yes").ok(t, "chat")
	want := "Undid your last message \"CALL write_file {\"path\":\"new.txt\",\"content\":\"x\"}\" and 3 message(s) after it.\n" +
		"The undone turn wrote new.txt (created).\nRemoved new.txt (it did not exist before).\n" +
		"Undid your last message \"CALL edit_file {\"path\":\"a.go\",\"old_string\":\"one\",\"new_str...\" and 3 message(s) after it.\n" +
		"The undone turn wrote a.go.\nRestored a.go.\n"
	if !strings.HasSuffix(r.stdout, want) {
		t.Errorf("stdout:\n%s\nwant it to end with:\n%s", r.stdout, want)
	}
	if got, _ := os.ReadFile(a); string(got) != "one\n" {
		t.Errorf("a.go is %q, want it restored", got)
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("new.txt is still there: %v", err)
	}

	// Written by one process, undone by the next without --yes: nobody to ask, nothing restored.
	spoolAtIn(t, dir, home, turns, "chat", "--yes").ok(t, "chat")
	r = spoolAtIn(t, dir, home, "/undo\n", "chat", "--continue").ok(t, "undo")
	if !strings.Contains(r.stdout, "The undone turn wrote new.txt (created).\n(no terminal to ask; start spool chat with --yes to restore without asking)\nLeft the files as they are.\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if _, err := os.Stat(created); err != nil {
		t.Errorf("new.txt was removed without consent: %v", err)
	}

	// Deleting a session deletes its records (the a.go edit's is still there).
	ls := decode[[]struct {
		ID string `json:"id"`
	}](t, spool(t, home, "sessions", "list", "--json").ok(t, "list"))
	records := filepath.Join(home, "undo", ls[0].ID)
	if files, err := os.ReadDir(records); err != nil || len(files) != 1 {
		t.Fatalf("records of %s: %v, %v; want the a.go edit's", ls[0].ID, files, err)
	}
	spool(t, home, "sessions", "delete", ls[0].ID, "--yes").ok(t, "delete")
	if _, err := os.Stat(records); !os.IsNotExist(err) {
		t.Errorf("the deleted session's undo records stay: %v", err)
	}
}

// TestChatToolOutputAndUndo drives the chat on a pseudo-terminal: a command's output shows its
// first lines with a count of the rest, and /expand shows all of it; one turn edits a file
// (its diff shown for approval) and creates another, and /undo asks, then restores the one
// and removes the other, saying so; a file changed since the turn is left as it is.
func TestChatToolOutputAndUndo(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	work := filepath.Join(home, "work")
	a, created := filepath.Join(work, "a.go"), filepath.Join(work, "new.txt")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("package a\n\nfunc A() int { return 1 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, cmd := startPTY(t, home, []string{"NO_COLOR=1"}, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "fake-model")
	s.prompt()

	s.typeLine(`CALL terminal {"command":"seq 1 30 \u0026\u0026 echo end"}`)
	s.expect("  ⚙ terminal seq 1 30 && echo end\n")
	s.expect("[y/N/a=always this exact command this session]")
	s.press("y")
	s.expect("    ↳ 1\n      2\n      3\n      4\n      … 28 more lines (/expand shows all)\n")
	s.prompt()
	s.typeLine("/expand")
	s.expect("      29\n      30\n      end\n      [exit status 0]")
	s.prompt()

	s.press(`CALL edit_file {"path":"a.go","old_string":"return 1","new_string":"return 2"}`, keyAltEnter,
		`CALL write_file {"path":"new.txt","content":"fresh\n"}`, keyEnter)
	s.expect("-func A() int { return 1 }\n+func A() int { return 2 }\n")
	s.expect("a.go? [y/N/a=always edit_file this session]")
	s.press("y")
	s.expect("    ↳ edited a.go: 1 edit, +1 -1 lines\n")
	s.expect("new.txt? [y/N/a=always write_file this session]")
	s.press("y")
	s.expect("    ↳ created new.txt")
	s.prompt()
	if got, _ := os.ReadFile(a); !strings.Contains(string(got), "return 2") {
		t.Fatalf("the edit did not happen: %q", got)
	}
	s.typeLine("/undo")
	s.expect("The undone turn wrote a.go, new.txt (created).\n")
	s.expect("Restore the files as they were before it? [y/N]")
	s.press("y")
	s.expect("Restored a.go; removed new.txt (it did not exist before).\n")
	s.prompt()
	if got, _ := os.ReadFile(a); string(got) != "package a\n\nfunc A() int { return 1 }\n" {
		t.Errorf("a.go is %q after /undo", got)
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("new.txt is still there: %v", err)
	}

	s.typeLine(`CALL edit_file {"path":"a.go","old_string":"return 1","new_string":"return 3"}`)
	s.expect("a.go? [y/N/a=always edit_file this session]")
	s.press("y")
	s.expect("    ↳ edited a.go")
	s.prompt()
	if err := os.WriteFile(a, []byte("the user's own edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.typeLine("/undo")
	s.expect("The undone turn wrote a.go (changed since).\n")
	s.press("y")
	s.expect("Left a.go: it changed since spool wrote it.\n")
	s.prompt()
	if got, _ := os.ReadFile(a); string(got) != "the user's own edit\n" {
		t.Errorf("a.go was clobbered: %q", got)
	}
	s.press(keyCtrlD)
	waitExit(t, s, cmd)
}
