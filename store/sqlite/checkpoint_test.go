package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// Appends far past the checkpoint threshold: the checkpointer keeps the WAL short (it starts
// over once copied), every row is there, and Close stops the checkpointer.
func TestCheckpointerKeepsTheWALShort(t *testing.T) {
	t.Parallel()
	db, err := Open(bg, filepath.Join(t.TempDir(), "t.db"), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if db.ckpt == nil {
		t.Fatal("no checkpointer on a WAL database")
	}
	var auto int
	if err := db.w.QueryRow("PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("the writer checkpoints by itself too (wal_autocheckpoint %d, %v)", auto, err)
	}
	const sessions, n = 20, 6000
	for s := range sessions {
		if _, err := db.CreateSession(bg, store.NewSession{ID: fmt.Sprint("s", s)}); err != nil {
			t.Fatal(err)
		}
	}
	text := strings.Repeat("a line of tool output that fills pages ", 60)
	for i := range n {
		if _, err := db.Append(bg, fmt.Sprint("s", i%sessions), store.Message{Role: store.RoleTool, ToolCallID: "c", Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	// The WAL file only grows past what it held since it last started over (it is cut back to
	// walSizeLimit then). n appends write several times walCheckpointPages frames: without
	// restarts the file would hold them all.
	fi, err := os.Stat(db.path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if frames := fi.Size() / (4096 + 24); frames > 2*walCheckpointPages {
		t.Errorf("the WAL reached %d frames (threshold %d)", frames, walCheckpointPages)
	}
	st, err := db.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != n {
		t.Errorf("%d messages stored, want %d", st.Messages, n)
	}
	stopped := db.ckpt.stopped
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Error("the checkpointer still runs after Close")
	}
}

// A process that commits a little and then goes quiet still gets its WAL copied back. Not
// parallel: it shortens the idle interval for the databases it opens.
func TestCheckpointerRunsWhenIdle(t *testing.T) {
	defer func(d time.Duration) { checkpointIdle = d }(checkpointIdle)
	checkpointIdle = 20 * time.Millisecond
	db, err := Open(bg, filepath.Join(t.TempDir(), "t.db"), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	time.Sleep(100 * time.Millisecond)
	if n := db.ckpt.passes.Load(); n != 0 {
		t.Fatalf("%d checkpoints with nothing committed", n)
	}
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for db.ckpt.passes.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint within 5 s of a commit, with a 20 ms idle interval")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
