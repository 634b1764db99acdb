//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup runs a server in its own process group: the terminal's Ctrl-C does not reach it
// (spool closes it), and killGroup takes the helpers it started (npx's node) with it.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the server's whole process group.
func killGroup(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
