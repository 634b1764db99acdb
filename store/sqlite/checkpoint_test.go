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
// over once copied), every row is there, and Close stops the checkpointer. The checkpointer's
// passes run where its goroutine would run them, every checkpointEvery commits, from the test
// itself: how far the WAL grows then depends on the algorithm, not on how soon a loaded machine
// schedules a goroutine (TestCheckpointerRunsWhenIdle covers the goroutine).
func TestCheckpointerKeepsTheWALShort(t *testing.T) {
	t.Parallel()
	db, err := Open(bg, filepath.Join(t.TempDir(), "t.db"), Options{Logger: discardLogger(), manualCheckpoints: true})
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
		if db.ckpt.commits.Load()%checkpointEvery == 0 {
			db.ckpt.pass() // what the kick committed() just sent would run
		}
	}
	if p := db.ckpt.passes.Load(); p < n/checkpointEvery {
		t.Fatalf("%d checkpoint passes for %d commits", p, n)
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
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Close stops a running checkpointer's goroutine.
	db2, err := Open(bg, db.path, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	stopped := db2.ckpt.stopped
	if err := db2.Close(); err != nil {
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
	// No deadline of our own: on a loaded machine the goroutine may be late, never absent (the
	// test binary's timeout catches a checkpointer that never runs).
	for db.ckpt.passes.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
}
