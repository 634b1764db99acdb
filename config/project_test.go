package config

import (
	"os"
	"path/filepath"
	"testing"
)

// The project file is found from a subdirectory up to the git root and no further.
func TestFindProjectFile(t *testing.T) {
	t.Parallel()
	outer := t.TempDir()
	proj := filepath.Join(outer, "repo")
	sub := filepath.Join(proj, "a", "b")
	for _, d := range []string{filepath.Join(outer, ".spool"), filepath.Join(proj, ".git"), sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file above the git root is not the project's.
	if err := os.WriteFile(filepath.Join(outer, ".spool", "config.yaml"), []byte("mcp: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := FindProjectFile(sub); err != nil || got != "" {
		t.Fatalf("above the git root: %q, %v", got, err)
	}
	if err := os.MkdirAll(filepath.Join(proj, ".spool"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(proj, ".spool", "config.yaml")
	if err := os.WriteFile(want, []byte("mcp: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := FindProjectFile(sub); err != nil || got != want {
		t.Fatalf("from a subdirectory: %q, %v (want %s)", got, err, want)
	}
}
