package cli_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDidYouMean: a mistyped command or flag is a usage error (exit 2, one line) that names the
// closest command or flag.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sesions", "list"}, `unknown command "sesions" for "spool"; did you mean sessions?`},
		{[]string{"sessions", "lsit"}, `did you mean list?`},
		{[]string{"run", "--mdoel", "x", "hi"}, `unknown flag: --mdoel; did you mean --model?`},
		{[]string{"run", "--output", "json", "hi"}, `did you mean --output-format?`},
		{[]string{"sessions", "list", "--limt", "3"}, `did you mean --limit?`},
		{[]string{"sessions", "list", "--jsno"}, `did you mean --json?`},
	} {
		r := spool(t, home, c.args...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if r := spool(t, home, "run", "--zzzzzz", "hi"); r.code != 2 || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("a flag like no other: exit %d, %q", r.code, r.stderr)
	}
}

// TestBareSpool: a bare spool on a terminal opens the chat; without a terminal it prints the
// help and exits (a script is not left waiting). spool run without a prompt on a terminal is one
// line and exit 2 (with a pipe it reads the prompt: TestRunInputFromStdin).
func TestBareSpool(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if r := spool(t, home).ok(t, "bare spool without a terminal"); !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("bare spool without a terminal printed %q", r.stdout)
	}

	s, cmd := startPTY(t, home, nil)
	s.expect("spool chat: type a message, /help for commands, Ctrl-D to leave.")
	s.prompt()
	s.typeLine("SAY hello from bare spool")
	s.expect("\nhello from bare spool\n")
	s.prompt()
	if _, err := s.tty.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	waitExit(t, s, cmd)

	s, cmd = startPTY(t, home, nil, "run")
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	var err error
	select {
	case err = <-errc:
	case <-time.After(30 * time.Second):
		t.Fatalf("spool run without a prompt on a terminal did not exit; screen:\n%s", s.text())
	}
	<-s.done
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("spool run without a prompt on a terminal: %v, want exit 2", err)
	}
	if txt := strings.TrimSpace(s.text()); strings.Count(txt, "\n") != 0 || !strings.Contains(txt, "no prompt: spool run") {
		t.Errorf("spool run without a prompt on a terminal said %q", txt)
	}
}
