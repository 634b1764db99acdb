//go:build unix

package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// watchSize sends the program the terminal's size on every SIGWINCH until the program ends.
func (t *tui) watchSize() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	defer signal.Stop(ch)
	for {
		select {
		case <-ch:
			t.resized()
		case <-t.done:
			return
		}
	}
}
