package testbin

import (
	"os"
	"strings"
	"testing"
)

// A command is built once per process, keeps its own name, and a package that does not build
// is an error that names it.
func TestBuild(t *testing.T) {
	const pkg = "github.com/spoolhq/spool/cmd/fakellm"
	p1, err := build(pkg)
	if err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(p1)
	if err != nil || !strings.HasSuffix(p1, "/fakellm") {
		t.Fatalf("built %q: %v", p1, err)
	}
	p2, err := build(pkg)
	st2, _ := os.Stat(p2)
	if err != nil || p2 != p1 || !st2.ModTime().Equal(st1.ModTime()) {
		t.Fatalf("second build = %q, %v; want the first, not rebuilt", p2, err)
	}
	if _, err := build("github.com/spoolhq/spool/no/such/cmd"); err == nil || !strings.Contains(err.Error(), "no/such/cmd") {
		t.Fatalf("missing package: err = %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
}
