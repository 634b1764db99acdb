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
		"Branched ", "side line", "first chat", ">>>hello<<<", "bye\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat stdout lacks %q:\n%s", want, r.stdout)
		}
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
