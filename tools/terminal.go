package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Terminal limits.
const (
	DefaultCommandTimeout = 120 * time.Second
	MaxCommandTimeout     = 3600 * time.Second
	// terminalOutput caps what a command's output may cost in memory and in context.
	terminalOutput = DefaultMaxOutput
)

// ApprovalRequest describes an action that needs the user's consent.
type ApprovalRequest struct {
	Tool string
	// Command is the terminal tool's command line.
	Command string
	WorkDir string
	// Path is the file a file tool would touch (absolute), Outside whether it lies outside the
	// workspace, and Diff, for write_file and edit_file, the change as a unified diff.
	Path    string
	Outside bool
	Diff    string
}

// Question is the request as one line to ask a person.
func (r ApprovalRequest) Question() string {
	switch {
	case r.Command != "":
		return fmt.Sprintf("Run `%s` in %s?", r.Command, r.WorkDir)
	case r.Tool == "write_file" && r.Outside:
		return fmt.Sprintf("Write %s, outside the workspace %s?", r.Path, r.WorkDir)
	case r.Tool == "write_file":
		return fmt.Sprintf("Write %s?", r.Path)
	case r.Tool == "edit_file" && r.Outside:
		return fmt.Sprintf("Edit %s, outside the workspace %s?", r.Path, r.WorkDir)
	case r.Tool == "edit_file":
		return fmt.Sprintf("Edit %s?", r.Path)
	default:
		return fmt.Sprintf("Let %s read %s, outside the workspace %s?", r.Tool, r.Path, r.WorkDir)
	}
}

// Approver decides whether an action may go ahead: nil approves; an error denies, and its text
// is what the model is told. `spool chat` asks the user; `spool run --yes` uses AutoApprove;
// `spool run` without --yes uses Deny.
type Approver func(ctx context.Context, req ApprovalRequest) error

// AutoApprove approves everything.
func AutoApprove(context.Context, ApprovalRequest) error { return nil }

// ErrDenied marks a denial; approvers should wrap it so callers can tell denial from failure.
var ErrDenied = errors.New("not approved")

// Deny returns an approver that refuses every request with reason.
func Deny(reason string) Approver {
	return func(context.Context, ApprovalRequest) error {
		return fmt.Errorf("%w: %s", ErrDenied, reason)
	}
}

// Terminal runs a shell command in the working directory after approval.
func Terminal() Tool {
	return Tool{
		Name: "terminal",
		Description: "Run a shell command with bash -c in the working directory and return its combined " +
			"stdout and stderr (long output keeps its head and tail) and exit status. Commands need the " +
			"user's approval. stdin is empty: do not run interactive programs. Default timeout 120 seconds.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"command":{"type":"string","description":"The command line, run with bash -c."},
			"timeout":{"type":"integer","minimum":1,"maximum":3600,"description":"Seconds before the command is killed (default 120)."}
		},"required":["command"],"additionalProperties":false}`),
		// The command output is capped at terminalOutput already; leave room for the status lines.
		MaxOutput: terminalOutput + 512,
		Run:       runTerminal,
	}
}

func runTerminal(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a struct {
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", errors.New("command is empty")
	}
	timeout := DefaultCommandTimeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Second, MaxCommandTimeout)
	}
	dir, err := workDir(env)
	if err != nil {
		return "", err
	}
	approve := env.Approver
	if approve == nil {
		approve = Deny("no approver is configured for commands (non-interactive runs need --yes)")
	}
	if err := approve(ctx, ApprovalRequest{Tool: "terminal", Command: a.Command, WorkDir: dir}); err != nil {
		return "", fmt.Errorf("command not run: %w", err)
	}

	shell, err := exec.LookPath("bash")
	if err != nil {
		shell = "/bin/sh"
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, shell, "-c", a.Command)
	cmd.Dir = dir
	// An allow-list, not spool's environment minus what looks secret: SPOOL_DATABASE_URL or
	// a platform's *_CREDS must not reach a command whatever they are called.
	cmd.Env = CommandEnviron(os.Environ(), env.PassEnv)
	out := newHeadTail(terminalOutput)
	cmd.Stdout, cmd.Stderr = out, out
	killGroup(cmd)
	// A background child that keeps the pipes open must not hang the call after the kill.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(start).Round(time.Millisecond)

	var status string
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return out.String(), ctx.Err()
	case cctx.Err() != nil:
		status = fmt.Sprintf("[timed out after %s; the command and its children were killed]", timeout)
	case runErr == nil:
		status = "[exit status 0]"
	case errors.As(runErr, &exitErr):
		if code := exitErr.ExitCode(); code >= 0 {
			status = fmt.Sprintf("[exit status %d]", code)
		} else {
			status = fmt.Sprintf("[%s]", exitErr.ProcessState)
		}
	case errors.Is(runErr, exec.ErrWaitDelay):
		status = "[exit status 0; a background process kept its output open and was cut off]"
	default:
		return out.String(), fmt.Errorf("start %s: %w", shell, runErr)
	}
	text := out.String()
	if text == "" {
		text = "(no output)"
	}
	return fmt.Sprintf("%s\n%s in %s", strings.TrimRight(text, "\n"), status, elapsed), nil
}
