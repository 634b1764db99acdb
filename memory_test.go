package spool_test

import (
	"context"
	"os"
	"testing"

	"github.com/spoolhq/spool"
)

// spool.Memory keeps a chat in memory: nothing is written to the working directory or TMPDIR,
// while the handle is open or after it closed.
func TestMemoryWritesNoFile(t *testing.T) {
	ctx := context.Background()
	wd, tmp := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	t.Setenv("TMPDIR", tmp)
	empty := func(when string) {
		t.Helper()
		for _, dir := range []string{wd, tmp} {
			if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
				t.Fatalf("%s: %s holds %v (%v)", when, dir, ents, err)
			}
		}
	}
	db, err := spool.Open(ctx, spool.Memory)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.NewSession(ctx, "in memory")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, spool.UserMessage("hello"), spool.AssistantMessage("hi")); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Load(ctx); err != nil || len(h) != 2 {
		t.Fatalf("history = %v, %v", h, err)
	}
	empty("while open")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	empty("after Close")
}
