//go:build !unix

package tools

// lockFile is a no-op where flock does not exist; writes stay atomic, concurrent edits may race.
func lockFile(string) (func(), error) { return func() {}, nil }
