package cli_test

import (
	"fmt"
	"strings"
	"testing"
)

type compactOut struct {
	SessionID     string `json:"session_id"`
	Compactions   int    `json:"compactions"`
	CompactionLog []struct {
		Messages     int `json:"messages"`
		TokensBefore int `json:"tokens_before"`
		TokensAfter  int `json:"tokens_after"`
		Target       int `json:"target"`
	} `json:"compaction_log"`
	Notices []string `json:"notices"`
}

type compactedSession struct {
	ID           string `json:"id"`
	MessageCount int    `json:"message_count"`
}

// spool compact compacts a session driven by spool run, through the real binary: fewer active
// rows, a summary whose working set points at the archived turns, and the session goes on.
func TestCompactCommand(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	fakeRun := func(args ...string) []string { return append([]string{"run", "--provider", "fake"}, args...) }
	sid := decode[runOut](t, spool(t, home, fakeRun("--json", "SAY We decided to keep port 5433 for the ledger database.")...).ok(t, "first")).SessionID
	for i := range 12 {
		spool(t, home, fakeRun("--resume", sid, stepSay(i))...).ok(t, "turn")
	}
	before := decode[compactedSession](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show before"))

	out := decode[compactOut](t, spool(t, home, "--json", "compact", sid, "--provider", "fake", "--context-length", "16000", "--focus", "refunds").ok(t, "compact"))
	if out.SessionID != sid || out.Compactions != 1 || len(out.CompactionLog) != 1 {
		t.Fatalf("compact: %+v", out)
	}
	if c := out.CompactionLog[0]; c.Messages == 0 || c.TokensAfter >= c.TokensBefore {
		t.Fatalf("compaction did not shrink the session: %+v", c)
	}
	after := decode[compactedSession](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show after"))
	if after.MessageCount >= before.MessageCount {
		t.Fatalf("active messages %d before, %d after", before.MessageCount, after.MessageCount)
	}
	shown := decode[shownMessages](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show messages"))
	summary := ""
	for _, m := range shown.Messages {
		if strings.Contains(m.Content, "[CONTEXT COMPACTION") {
			summary = m.Content
		}
	}
	if !strings.Contains(summary, "## Working Set") || !strings.Contains(summary, "[m") {
		t.Fatalf("no summary with a working set:\n%s", summary)
	}

	// The session goes on after the compaction; the plain-text form says what it did.
	next := decode[runOut](t, spool(t, home, fakeRun("--json", "--resume", sid, "SAY still here")...).ok(t, "after"))
	if next.SessionID != sid || next.Reply != "still here" {
		t.Fatalf("turn after compact: %+v", next)
	}
	plain := spool(t, home, "compact", "--provider", "fake", "--context-length", "16000", "--resume", sid).ok(t, "plain compact")
	if strings.TrimSpace(plain.stdout) == "" || strings.Count(strings.TrimSpace(plain.stdout), "\n") > 1 {
		t.Fatalf("plain compact output %q", plain.stdout)
	}

	// Bad input: one spool: line naming the problem (a usage error points at --help), non-zero
	// exit, the session untouched.
	kept := decode[compactedSession](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show kept"))
	for _, bad := range []struct {
		args  []string
		code  int
		usage bool
		says  string
	}{
		{[]string{"compact", "--provider", "fake"}, 2, true, "name the session to compact"},
		{[]string{"compact", "--provider", "fake", sid, "--resume", sid}, 2, true, "either as SESSION or with --resume"},
		{[]string{"compact", "--provider", "fake", "no-such-session"}, 1, false, "no-such-session"},
	} {
		r := spool(t, home, bad.args...)
		first, rest, _ := strings.Cut(r.stderr, "\n")
		if r.code != bad.code || !strings.HasPrefix(first, "spool: ") || !strings.Contains(first, bad.says) ||
			strings.Contains(first, "(see spool compact --help)") != bad.usage || strings.TrimSpace(rest) != "" {
			t.Errorf("%v: exit %d, stderr %q", bad.args, r.code, r.stderr)
		}
	}
	if again := decode[compactedSession](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show again")); again.MessageCount != kept.MessageCount {
		t.Fatalf("bad input changed the session: %d -> %d active messages", kept.MessageCount, again.MessageCount)
	}
}

// spool compact runs a session with the window it ran with (--context-length recorded on the
// session), and says exactly why when there is nothing to compact.
func TestCompactUsesTheSessionsWindow(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	run := func(args ...string) result {
		return spool(t, home, append([]string{"run", "--provider", "fake"}, args...)...).ok(t, "run")
	}
	sid := decode[runOut](t, run("--json", "--context-length", "9000", "SAY the ledger database listens on port 5433.")).SessionID
	run("--resume", sid, "SAY noted.")

	// Two exchanges: nothing to compact, and the reason given is the real one.
	out := decode[compactOut](t, spool(t, home, "--json", "compact", sid, "--provider", "fake").ok(t, "compact two turns"))
	if out.Compactions != 0 || len(out.Notices) != 1 || !strings.Contains(out.Notices[0], "Nothing to compact: the session has 4 messages: the first 3 stay as they are") {
		t.Fatalf("compact after two turns: %+v", out)
	}

	for i := range 12 {
		run("--resume", sid, stepSay(i))
	}
	out = decode[compactOut](t, spool(t, home, "--json", "compact", sid, "--provider", "fake").ok(t, "compact"))
	if out.Compactions != 1 || len(out.CompactionLog) != 1 {
		t.Fatalf("compact: %+v", out)
	}
	// Targets follow the window: the 9,000-token one gives a few thousand, 128,000 tens of thousands.
	if tgt := out.CompactionLog[0].Target; tgt <= 0 || tgt >= 9000 {
		t.Errorf("compaction target %d; want one sized for the session's 9,000-token window", tgt)
	}
}

// stepSay is a turn of a few hundred characters: enough turns of it are worth a summary.
func stepSay(i int) string {
	return fmt.Sprintf("SAY step %d of the refunds work is done, see internal/refunds/step_%d.go. %s", i, i,
		strings.Repeat("The refund path now checks the ledger balance before it pays anything out. ", 5))
}
