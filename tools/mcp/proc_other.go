//go:build !unix

package mcp

import "os/exec"

func ownGroup(*exec.Cmd) {}

// killGroup kills the server process only, where process groups do not exist.
func killGroup(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
