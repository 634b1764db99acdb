package cli_test

import (
	"strings"
	"testing"
)

// /model switches the chat's model for the rest of the session: the next turn goes to it, the
// cache break it causes is recorded as a model switch, the session records the model and a
// resume goes on with it.
func TestChatModelSwitch(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	chat := func(stdin string, extra ...string) result {
		t.Helper()
		args := append([]string{"chat", "--provider", "openai", "--base-url", url + "/v1", "--model", "fake-model"}, extra...)
		return spoolIn(t, home, stdin, args...).ok(t, "chat")
	}
	r := chat("SAY one\nSAY two\n/model\n/model other model\n/model other-model\nSAY three\n/usage\n/model\n")
	for _, want := range []string{"Model: fake-model (window ", "Model: other-model from your next message", "Model: other-model (window ",
		"at model", "(model)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "/model takes one model name") || !strings.Contains(r.stderr, "[other-model · ") {
		t.Errorf("chat stderr:\n%s", r.stderr)
	}
	ls := decode[[]struct {
		ID    string `json:"id"`
		Model string `json:"model"`
	}](t, spool(t, home, "sessions", "list", "--json").ok(t, "list"))
	if len(ls) != 1 || ls[0].Model != "other-model" {
		t.Fatalf("sessions: %+v", ls)
	}
	// A resume without --model goes on with the switched model.
	r2 := spoolIn(t, home, "/model\n", "chat", "--provider", "openai", "--base-url", url+"/v1", "--resume", ls[0].ID).ok(t, "resume")
	if !strings.Contains(r2.stdout, "Model: other-model (window ") {
		t.Errorf("resumed chat:\n%s", r2.stdout)
	}
}

// /clear starts a new session and leaves the old one resumable.
func TestChatClear(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	r := spoolIn(t, home, "SAY first\n/clear\nSAY second\n", "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "fake-model").ok(t, "chat")
	if !strings.Contains(r.stdout, "New session: it starts with your next message (/resume ") {
		t.Errorf("chat stdout:\n%s", r.stdout)
	}
	ls := decode[[]struct {
		ID string `json:"id"`
	}](t, spool(t, home, "sessions", "list", "--json").ok(t, "list"))
	if len(ls) != 2 {
		t.Fatalf("want the cleared session and the new one, got %+v", ls)
	}
}
