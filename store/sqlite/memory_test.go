package sqlite

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/storetest"
)

// Memory is a database in memory: no file anywhere (not in the working directory, not in
// TMPDIR), two handles do not share rows, and the rows are there until Close.
func TestMemoryCreatesNoFile(t *testing.T) {
	ctx := context.Background()
	wd, tmp := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	t.Setenv("TMPDIR", tmp)
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
	l, err := a.AcquireLease(ctx, s.ID, "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.WatchLease(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := a.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if ms, err := a.Conversation(ctx, s.ID, store.ViewActive); err != nil || len(ms) != 1 {
		t.Fatalf("the memory database lost its message: %v %v", ms, err)
	}
	if hits, err := a.Search(ctx, store.SearchQuery{Text: "memory"}); err != nil || len(hits) != 1 {
		t.Fatalf("search in memory = %v, %v", hits, err)
	}
	if st, err := a.Stats(ctx); err != nil || st.Bytes <= 0 || st.Sessions != 1 {
		t.Fatalf("stats of a memory database = %+v, %v", st, err)
	}
	if _, err := b.GetSession(ctx, s.ID); err == nil {
		t.Fatal("a second memory database sees the first one's session")
	}
	noFiles(t, "while open", wd, tmp)
	for _, db := range []*DB{a, b} {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	noFiles(t, "after Close", wd, tmp)
}

// noFiles fails when any of dirs holds a file or directory.
func noFiles(t *testing.T, when string, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		var found []string
		_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
			if p != dir {
				found = append(found, p)
			}
			return nil
		})
		if len(found) != 0 {
			t.Fatalf("%s, a memory database has files: %v", when, found)
		}
	}
}

// memoryHarness opens each test's database in memory under a name of its own, reopened by it
// as a file is by its path. A memory database lives in one process: the suite's tests that
// start other processes on it are skipped.
var memoryHarness = storetest.Harness{
	NewDSN:     func(*testing.T) string { return Memory + rand.Text() },
	Open:       openStore,
	OneProcess: true,
}

// TestConformanceMemory: an in-memory database passes every tier.
func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, memoryHarness)
}

// TestConformanceMemoryControls: every tier fails on a memory database broken in its domain.
func TestConformanceMemoryControls(t *testing.T) {
	storetest.Controls(t, memoryHarness)
}
