//go:build !unix

package tools

import "os/exec"

// killGroup is a no-op where process groups do not exist; cancellation kills the shell only.
func killGroup(*exec.Cmd) {}
