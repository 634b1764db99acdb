package main

import "golang.org/x/sys/unix"

// nonDumpable makes the process non-dumpable, as ssh-agent does: its /proc/PID/environ, mem,
// maps and fds are then owned by root and refused to other processes of the same user (the
// commands the terminal tool runs, an MCP server), ptrace cannot attach and no core is dumped.
// The children are not affected: execve makes them dumpable again.
func nonDumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
