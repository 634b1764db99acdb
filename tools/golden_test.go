package tools

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/definitions.golden")

// The built-in definitions are part of every session's cache key: this golden file makes each
// change to them deliberate (go test ./tools -run Golden -update), and proves the bytes do not
// depend on the process that built them.
func TestDefinitionsGolden(t *testing.T) {
	t.Parallel()
	got, err := json.MarshalIndent(Default().Definitions(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "definitions.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tool definitions changed: this breaks every session's prompt cache. If intended, rerun with -update.\n%s", got)
	}
}
