package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
