//go:build unix

package hermes_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/importer/hermes"
)

// TestFIFOsRefused: a named pipe where a transcript or sessions.json belongs is refused without
// waiting for a writer: a *.jsonl pipe is reported as a skipped file while the rest of the home
// imports (a session in state.db keeps its rows); a sessions.json pipe fails the import, one
// line, before anything is stored.
func TestFIFOsRefused(t *testing.T) {
	t.Parallel()
	mkfifo := func(t *testing.T, path string) {
		t.Helper()
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skipf("cannot make a FIFO here: %v", err)
		}
	}
	// run imports home, with a hang guard only: an import blocked in open(2) would never return.
	run := func(t *testing.T, home string, fifos ...string) (hermes.Report, error) {
		t.Helper()
		type result struct {
			rep hermes.Report
			err error
		}
		done := make(chan result, 1)
		st := openStore(t)
		go func() {
			rep, err := hermes.Import(bg, st, home, hermes.Options{})
			done <- result{rep, err}
		}()
		select {
		case r := <-done:
			return r.rep, r.err
		case <-time.After(2 * time.Minute):
			for _, f := range fifos { // let the blocked open go
				if w, err := os.OpenFile(f, os.O_RDWR, 0); err == nil {
					defer w.Close()
				}
			}
			t.Fatal("the import blocked on a FIFO")
			return hermes.Report{}, nil
		}
	}

	t.Run("transcripts", func(t *testing.T) {
		t.Parallel()
		home := copyHome(t)
		names := []string{"20260301_070000_fxf001.jsonl", "20260215_060000_fxg001.jsonl", "20260501_000000_pipe01.jsonl"}
		var fifos []string
		for _, n := range names {
			p := filepath.Join(home, "sessions", n)
			mkfifo(t, p)
			fifos = append(fifos, p)
		}
		rep, err := run(t, home, fifos...)
		if err != nil {
			t.Fatalf("import failed: %v", err)
		}
		for _, n := range names {
			want := hermes.Skip{Kind: "file", ID: "sessions/" + n, Reason: "is a named pipe (FIFO), not a regular file; not read"}
			if !slices.Contains(rep.Skipped, want) {
				t.Errorf("report lacks %+v: %+v", want, rep.Skipped)
			}
		}
		if rep.Sessions == 0 || rep.FromJSONL != 0 || rep.JSONLOnly != 0 {
			t.Errorf("report = %+v, want the state.db sessions and none from a transcript", rep)
		}
	})

	t.Run("sessions.json", func(t *testing.T) {
		t.Parallel()
		home := copyHome(t)
		gw := filepath.Join(home, "sessions", "sessions.json")
		mkfifo(t, gw)
		_, err := run(t, home, gw)
		if err == nil || !strings.Contains(err.Error(), "sessions/sessions.json: is a named pipe (FIFO), not a regular file") ||
			strings.Contains(err.Error(), "\n") {
			t.Fatalf("error = %v, want one line naming the pipe", err)
		}
	})
}
