//go:build !unix

package regfile

import "os"

// openNonblock is a plain open where named pipes in the file system do not exist.
func openNonblock(path string) (*os.File, error) { return os.Open(path) }
