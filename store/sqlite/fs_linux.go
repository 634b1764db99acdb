//go:build linux

package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// walUnsafeMagic lists filesystems whose locking or shared memory cannot carry WAL safely.
var walUnsafeMagic = map[int64]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xfe534d42: "smb2",
	0xff534d42: "cifs",
	0x65735546: "fuse", // also virtiofs
	0x01021997: "9p",
}

// statfsType is replaced in tests.
var statfsType = func(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

func walUnsafeFS(path string) (string, bool) {
	t, err := statfsType(filepath.Dir(path))
	if err != nil {
		return "", false
	}
	name, unsafe := walUnsafeMagic[t]
	return name, unsafe
}

// canWrite reports whether this process may write path and create files beside it (SQLite's
// -wal, -shm and journal): the file and its directory writable, on a filesystem mounted
// read-write.
func canWrite(path string) bool {
	return unix.Access(path, unix.W_OK) == nil && unix.Access(filepath.Dir(path), unix.W_OK) == nil
}

// isReadOnlyErr reports whether err says a file cannot be written (read-only filesystem or
// permission denied).
func isReadOnlyErr(err error) bool {
	return errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// ownedByMe reports whether this process's user owns the file.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
