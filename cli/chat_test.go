package cli_test

import (
	"strings"
	"testing"
)

func TestChatSlashCommands(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	chat := func(stdin string, extra ...string) result {
		t.Helper()
		args := append([]string{"chat", "--provider", "openai", "--base-url", url + "/v1", "--model", "fake-model"}, extra...)
		return spoolIn(t, home, stdin, args...).ok(t, "chat")
	}
	r := chat("hello\nCALL read_file {\"path\":\"doc.go\"}\n/title first chat\n/usage\n/branch side line\n/sessions\n/search hello\n/nope\n/title\nSAY bye\n")
	for _, want := range []string{
		`Answer `, `read_file returned`, `is now "first chat"`, "prompt tokens", "No cache break recorded",
		"Branched ", "side line", "first chat", "user: hello", "bye\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	// /search's hits read as text: the store's match markers are for pipes of spool search.
	if strings.Contains(r.stdout, ">>>") || strings.Contains(r.stdout, "<<<") {
		t.Errorf("chat /search shows raw match markers:\n%s", r.stdout)
	}
	for _, want := range []string{"⚙ read_file", "unknown command /nope", "/title needs a name", "[fake-model · "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("chat stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// The branch is the most recent session: --continue resumes it with a recap, and the
	// parent keeps its own history.
	r2 := chat("SAY on the branch\n", "--continue")
	if !strings.Contains(r2.stdout, `Resumed `) || !strings.Contains(r2.stdout, `"side line"`) || !strings.Contains(r2.stdout, "last answer: bye") {
		t.Errorf("recap:\n%s", r2.stdout)
	}
	parent := decode[shownMessages](t, spool(t, home, "sessions", "show", "first chat", "--json").ok(t, "show parent"))
	branch := decode[shownMessages](t, spool(t, home, "sessions", "show", "side line", "--json").ok(t, "show branch"))
	if len(parent.Messages) != 6 || len(branch.Messages) != 10 || branch.Messages[9].Content != "on the branch" {
		t.Errorf("parent %d messages, branch %d: %v", len(parent.Messages), len(branch.Messages), branch.roles())
	}
}

// TestChatUndo takes exchanges back one by one: each /undo says what went, the next request no
// longer carries it, and an empty session says there is nothing to undo.
func TestChatUndo(t *testing.T) {
	t.Parallel()
	rec := &bodyRecorder{}
	url := rec.serve(t)
	home := t.TempDir()
	args := []string{"chat", "--provider", "openai", "--base-url", url + "/v1", "--model", "fake-model"}
	r := spoolIn(t, home, "/undo\nremember the walrus\nCALL read_file {\"path\":\"doc.go\"}\n/undo\n/help\n/undo\n/undo\nSAY fresh start\n/exit\n", args...).ok(t, "chat")
	for _, want := range []string{
		`Undid your last message "CALL read_file {"path":"doc.go"}" and 3 message(s) after it.`,
		`Undid your last message "remember the walrus" and 1 message(s) after it.`,
		"Nothing to undo: this session has no message of yours left.",
		"/undo                take back your last message",
		"fresh start\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "no session yet") {
		t.Errorf("/undo before any message: stderr %q", r.stderr)
	}
	rec.mu.Lock()
	bodies := rec.bodies
	rec.mu.Unlock()
	if len(bodies) != 4 {
		t.Fatalf("%d model requests, want 4 (walrus, read_file twice, fresh start)", len(bodies))
	}
	last := string(bodies[3])
	if strings.Contains(last, "walrus") || strings.Contains(last, "read_file returned") || !strings.Contains(last, "fresh start") {
		t.Errorf("the request after /undo still carries undone messages or lacks the new one:\n%s", last)
	}
	ls := decode[[]struct {
		ID string `json:"id"`
	}](t, spool(t, home, "sessions", "list", "--json").ok(t, "list"))
	if len(ls) != 1 {
		t.Fatalf("%d sessions, want 1", len(ls))
	}
	shown := decode[shownMessages](t, spool(t, home, "sessions", "show", ls[0].ID, "--json").ok(t, "show"))
	if got := shown.roles(); len(got) != 2 || shown.Messages[0].Content != "SAY fresh start" {
		t.Errorf("after undo the session holds %v: %+v", got, shown.Messages)
	}
}
