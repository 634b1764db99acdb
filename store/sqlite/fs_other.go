//go:build !linux

package sqlite

import (
	"errors"
	"os"
	"path/filepath"
)

// walUnsafeFS cannot tell network filesystems apart off Linux; WAL is assumed safe.
func walUnsafeFS(string) (string, bool) { return "", false }

// canWrite reports whether path and its directory look writable (by their mode bits).
func canWrite(path string) bool {
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o200 == 0 {
			return false
		}
	}
	return true
}

// isReadOnlyErr reports whether err says a file cannot be written.
func isReadOnlyErr(err error) bool { return errors.Is(err, os.ErrPermission) }

// ownedByMe cannot tell a file's owner here: modes are left as they are.
func ownedByMe(os.FileInfo) bool { return false }
