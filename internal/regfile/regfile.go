package regfile

import (
	"io"
	"io/fs"
	"os"
)

// NotRegularError is why Open refused a file that exists: it is a directory, a named pipe, a
// device or a socket. Open returns it as it is (no *fs.PathError around it): the caller names
// the file.
type NotRegularError struct {
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return "is " + kind(e.Mode) + ", not a regular file"
}

// kind names the type of a file mode in words.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	default:
		return "an irregular file"
	}
}

// Open opens path for reading if it is a regular file (a symbolic link is followed) and returns
// it with its FileInfo. Anything else is refused with a *NotRegularError (wrapped in an
// *fs.PathError, as os.Open's errors are), without blocking.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := openNonblock(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Mode: fi.Mode()}
	}
	return f, fi, nil
}

// ReadFile is os.ReadFile for a regular file only (Open).
func ReadFile(path string) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
