//go:build !linux

package sqlite

import "context"

// writeGate is a no-op off Linux: writers rely on SQLite's lock and the busy retry alone.
type writeGate struct{}

func openWriteGate(string) (*writeGate, error) { return &writeGate{}, nil }
func (*writeGate) enter(context.Context) error { return nil }
func (*writeGate) exit()                       {}
func (*writeGate) close() error                { return nil }
