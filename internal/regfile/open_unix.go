//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// openNonblock opens path read-only without waiting for a FIFO's writer and without making a
// terminal the process's controlling terminal.
func openNonblock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}
