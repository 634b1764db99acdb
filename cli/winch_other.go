//go:build !unix

package cli

// watchSize: without SIGWINCH the size read at start stays.
func (t *tui) watchSize() {}
