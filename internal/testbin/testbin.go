package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	dir    string              // the build directory, made on first use
	builds = map[string]*bin{} // by import path
)

// bin is one command, built once.
type bin struct {
	out  string // where it is built
	once sync.Once
	path string
	err  error
}

// build compiles the command pkg (an import path) into the build directory, once per process.
func build(pkg string) (string, error) {
	mu.Lock()
	if dir == "" {
		d, err := os.MkdirTemp("", "spool-testbin-")
		if err != nil {
			mu.Unlock()
			return "", fmt.Errorf("testbin: %w", err)
		}
		dir = d
	}
	b := builds[pkg]
	if b == nil {
		// A directory of its own keeps the command's name (programs print it) and stays unique.
		b = &bin{out: filepath.Join(dir, fmt.Sprint(len(builds)), path.Base(pkg))}
		builds[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() {
		if err := os.MkdirAll(filepath.Dir(b.out), 0o755); err != nil {
			b.err = fmt.Errorf("testbin: %w", err)
			return
		}
		if msg, err := exec.Command("go", "build", "-o", b.out, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build %s: %v\n%s", pkg, err, msg)
			return
		}
		b.path = b.out
	})
	return b.path, b.err
}

// Main builds each command named in bins (import path → where to store the built binary's
// path), runs the tests, removes the build directory and exits with the tests' code.
func Main(m *testing.M, bins map[string]*string) {
	code := 1
	defer func() {
		mu.Lock()
		if dir != "" {
			os.RemoveAll(dir)
		}
		mu.Unlock()
		os.Exit(code)
	}()
	for pkg, dst := range bins {
		p, err := build(pkg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		*dst = p
	}
	code = m.Run()
}

// Path returns the path of the command pkg (an import path), building it on the first call in
// this process; a failed build fails t.
func Path(t testing.TB, pkg string) string {
	t.Helper()
	p, err := build(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
