//go:build !linux

package main

// nonDumpable does nothing where there is no /proc/PID/environ to protect this way.
func nonDumpable() error { return nil }
