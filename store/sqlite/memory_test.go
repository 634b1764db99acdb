package sqlite

import (
	"context"
	"os"
	"testing"

	"github.com/spoolhq/spool/store"
)

// Memory opens a database of its own that leaves nothing behind: no file named ":memory:" in
// the working directory, two handles do not share rows, and Close removes its directory.
func TestMemoryLeavesNothingBehind(t *testing.T) {
	ctx := context.Background()
	wd := t.TempDir()
	t.Chdir(wd)
	a, err := Open(ctx, Memory, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, Memory, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.CreateSession(ctx, store.NewSession{ID: "mem1", Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, s.ID, store.Message{Role: store.RoleUser, Content: "kept in memory"}); err != nil {
		t.Fatal(err)
	}
	if ms, err := a.Conversation(ctx, s.ID, store.ViewActive); err != nil || len(ms) != 1 {
		t.Fatalf("the memory database lost its message: %v %v", ms, err)
	}
	if _, err := b.GetSession(ctx, s.ID); err == nil {
		t.Fatal("a second memory database sees the first one's session")
	}
	if ents, _ := os.ReadDir(wd); len(ents) != 0 {
		t.Fatalf("memory databases wrote into the working directory: %v", ents)
	}
	dir := a.scratch
	for _, db := range []*DB{a, b} {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s behind: %v", dir, err)
	}
}
