package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"here.txt": "x"})
	env := Env{WorkDir: dir, Approver: AutoApprove}
	runCases(t, env, "terminal", []toolCase{
		{name: "runs in workdir", args: `{"command":"ls; echo done"}`, want: []string{"here.txt\ndone\n[exit status 0] in "}},
		{name: "stderr and exit status", args: `{"command":"echo out; echo err >&2; exit 3"}`, want: []string{"out\n", "err\n", "[exit status 3]"}},
		{name: "bash features", args: `{"command":"a=(1 2 3); echo ${#a[@]}"}`, want: []string{"3\n[exit status 0]"}},
		{name: "no output", args: `{"command":"true"}`, want: []string{"(no output)\n[exit status 0]"}},
		{name: "stdin is empty", args: `{"command":"cat; echo after"}`, want: []string{"after\n[exit status 0]"}},
		{name: "empty command", args: `{"command":"  "}`, isErr: true, want: []string{"command is empty"}},
		{name: "timeout out of range", args: `{"command":"true","timeout":0}`, isErr: true, want: []string{"below the minimum"}},
	})
}

func TestTerminalTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "survivor")
	env := Env{WorkDir: dir, Approver: AutoApprove}
	// The background child would write the marker after the timeout if it survived the kill.
	cmd := fmt.Sprintf(`echo started; (sleep 3; touch %q) & sleep 30`, marker)
	start := time.Now()
	res := call(t, env, "terminal", fmt.Sprintf(`{"command":%q,"timeout":1}`, cmd))
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a 1 s timeout returned after %s", took)
	}
	if res.IsError || !strings.Contains(res.Content, "started\n[timed out after 1s; the command and its children were killed]") {
		t.Fatalf("timeout result: %+v", res)
	}
	time.Sleep(3 * time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a child of the timed-out command survived and ran on")
	}
}

func TestTerminalOutputCapped(t *testing.T) {
	t.Parallel()
	env := Env{WorkDir: t.TempDir(), Approver: AutoApprove}
	res := call(t, env, "terminal", `{"command":"echo FIRST; seq 1 200000; echo LAST; exit 1"}`)
	if res.IsError || len(res.Content) > terminalOutput+512 {
		t.Fatalf("%d bytes, IsError=%v", len(res.Content), res.IsError)
	}
	for _, w := range []string{"FIRST\n1\n2\n", "bytes omitted ...]", "199999\n200000\nLAST\n[exit status 1]"} {
		if !strings.Contains(res.Content, w) {
			t.Errorf("capped output lacks %q", w)
		}
	}
}

func TestTerminalApproval(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	args := fmt.Sprintf(`{"command":"touch %s"}`, marker)

	var mu sync.Mutex
	var asked []ApprovalRequest
	record := func(allow bool) Approver {
		return func(_ context.Context, req ApprovalRequest) error {
			mu.Lock()
			asked = append(asked, req)
			mu.Unlock()
			if allow {
				return nil
			}
			return fmt.Errorf("%w: the user said no", ErrDenied)
		}
	}
	cases := []struct {
		name     string
		approver Approver
		ran      bool
		want     string
	}{
		{"nil approver denies", nil, false, "command not run: not approved: no approver is configured for commands (non-interactive runs need --yes)"},
		{"deny", Deny("run without --yes"), false, "command not run: not approved: run without --yes"},
		{"user says no", record(false), false, "command not run: not approved: the user said no"},
		{"user says yes", record(true), true, "[exit status 0]"},
	}
	for _, c := range cases {
		os.Remove(marker)
		res := call(t, Env{WorkDir: dir, Approver: c.approver}, "terminal", args)
		if !strings.Contains(res.Content, c.want) || res.IsError == c.ran {
			t.Fatalf("%s: %+v", c.name, res)
		}
		if _, err := os.Stat(marker); (err == nil) != c.ran {
			t.Fatalf("%s: command ran=%v, want %v", c.name, err == nil, c.ran)
		}
	}
	if len(asked) != 2 || asked[0].Tool != "terminal" || asked[0].Command != "touch "+marker || asked[0].WorkDir != dir {
		t.Fatalf("approver saw %+v", asked)
	}
	if !errors.Is(Deny("x")(context.Background(), ApprovalRequest{}), ErrDenied) {
		t.Fatal("Deny does not wrap ErrDenied")
	}
}

func TestTerminalCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	env := Env{WorkDir: t.TempDir(), Approver: func(context.Context, ApprovalRequest) error {
		time.AfterFunc(200*time.Millisecond, cancel)
		return nil
	}}
	start := time.Now()
	res := Default().Call(ctx, env, "terminal", `{"command":"echo begun; sleep 30"}`)
	if time.Since(start) > 10*time.Second {
		t.Fatal("cancellation did not stop the command")
	}
	if !res.IsError || !strings.HasPrefix(res.Content, "tool terminal cancelled: context canceled\nbegun") {
		t.Fatalf("cancelled result: %+v", res)
	}
}
