//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// killGroup runs the command in its own process group and makes cancellation kill the whole
// group, so a timed-out `make` takes its compilers with it.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
