package cli_test

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolhq/spool/provider/fake"
)

// windowRun is the part of `spool run --json` these tests read.
type windowRun struct {
	runOut
	Compactions   int `json:"compactions"`
	CompactionLog []struct {
		Messages     int    `json:"messages"`
		TokensBefore int    `json:"tokens_before"`
		TokensAfter  int    `json:"tokens_after"`
		Target       int    `json:"target"`
		Rung         string `json:"rung"`
	} `json:"compaction_log"`
}

// TestSmallWindowsKeepWorking drives spool run -c, one process a turn, against a model server
// that refuses every prompt over its window (4,000 and 6,000 tokens, as a small local model
// would; one of them while spool is told 32,000), far past the first compactions. Every turn answers; every compaction ends at or under
// its target and smaller than it started; no message suggests spool chat's slash commands to a
// spool run user or says the same thing twice; and the first message, long archived, is still
// found by search. Before budgets followed the window, the 6,000-token session died at turn 45
// and the 4,000-token one at turn 22 ("still exceeds the model's window after 3 compaction
// attempts"), every later turn failing.
func TestSmallWindowsKeepWorking(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("183 spool processes; run without -short")
	}
	// claimed is the window spool is told; 0 means the true one. A local server configured
	// smaller than the flag says proves its window only by refusing.
	for _, tc := range []struct{ window, claimed, turns int }{{6000, 0, 70}, {4000, 0, 45}, {4000, 32000, 65}} {
		t.Run(fmt.Sprintf("%d_told_%d", tc.window, tc.claimed), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(fake.New(fake.Config{ContextWindow: tc.window}).Handler())
			t.Cleanup(srv.Close)
			home := t.TempDir()
			win := []string{"--json", "--context-length", strconv.Itoa(max(tc.window, tc.claimed))}
			first := "Hello. The database listens on port 5433; we must always use tabs."
			spool(t, home, viaFake(srv.URL, append(win, first)...)...).ok(t, "first turn")
			compactions := 0
			for i := 1; i <= tc.turns; i++ {
				ask := fmt.Sprintf("Turn %d: please look into the file internal/foo%d.go and tell me what the function Bar%d does and why; we decided to keep the public API stable for release v1.%d, so say what would break.", i, i, i, i)
				r := spool(t, home, viaFake(srv.URL, append(win, "-c", ask)...)...)
				if r.code != 0 {
					t.Fatalf("turn %d failed (exit %d) after %d compactions:\n%s", i, r.code, compactions, r.stderr)
				}
				if strings.Contains(r.stderr, "/compress") || strings.Contains(r.stderr, "/new") {
					t.Errorf("turn %d: spool run suggests chat-only commands:\n%s", i, r.stderr)
				}
				seen := map[string]bool{}
				for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
					if line != "" && seen[line] {
						t.Errorf("turn %d: %q printed twice", i, line)
					}
					seen[line] = true
				}
				out := decode[windowRun](t, r)
				for _, c := range out.CompactionLog {
					compactions++
					if c.TokensAfter > c.Target || c.TokensAfter >= c.TokensBefore || c.TokensAfter >= tc.window {
						t.Errorf("turn %d: compaction %+v did not reach its target or did not shrink", i, c)
					}
				}
				if out.Compactions != len(out.CompactionLog) {
					t.Errorf("turn %d: %d compactions, %d logged", i, out.Compactions, len(out.CompactionLog))
				}
			}
			if compactions < 2 {
				t.Fatalf("only %d compactions in %d turns: the window does not bind", compactions, tc.turns)
			}
			// Archived, not lost: the first message is found by search.
			hits := decode[[]struct {
				MessageID int64  `json:"message_id"`
				Snippet   string `json:"snippet"`
			}](t, spool(t, home, "search", "5433", "--json").ok(t, "search"))
			if len(hits) == 0 || !strings.Contains(hits[0].Snippet, "5433") {
				t.Fatalf("the first message is not found by search: %+v", hits)
			}
		})
	}
}
