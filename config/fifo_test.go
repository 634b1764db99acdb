//go:build unix

package config

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFOConfigRefused: a config.yaml that is a named pipe fails Load with one line naming the
// file, without waiting for a writer.
func TestFIFOConfigRefused(t *testing.T) {
	clearEnv(t)
	home := t.TempDir()
	file := filepath.Join(home, FileName)
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load(home)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute): // hang guard only
		if w, werr := os.OpenFile(file, os.O_RDWR, 0); werr == nil { // let the blocked open go
			defer w.Close()
		}
		t.Fatal("Load blocked on a FIFO config.yaml")
	}
	want := "config: " + file + ": is a named pipe (FIFO), not a regular file"
	if err == nil || err.Error() != want {
		t.Fatalf("Load error = %v, want %q", err, want)
	}
}
