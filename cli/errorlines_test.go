package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every failing command says what went wrong in one line, and no part of that line repeats the
// one before it ("search "x": search "x": …", "create session: create session S: …"): each
// layer adds only what the one below did not say.
func TestErrorLinesSayEachThingOnce(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"spool_export\":1}\n{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badConfig := t.TempDir()
	if err := os.WriteFile(filepath.Join(badConfig, "config.yaml"), []byte("provider:\n  name: nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		home string
		env  []string
		args []string
	}{
		{home, nil, []string{"sessions", "show", "no-such-session"}},
		{home, nil, []string{"sessions", "rename", "no-such-session", "t"}},
		{home, nil, []string{"sessions", "delete", "no-such-session", "--yes"}},
		{home, nil, []string{"sessions", "export", "no-such-session", "-o", filepath.Join(t.TempDir(), "x")}},
		{home, nil, []string{"sessions", "import", filepath.Join(t.TempDir(), "missing.jsonl")}},
		{home, nil, []string{"sessions", "import", bad}},
		{home, nil, []string{"sessions", "prune", "--older-than", "soon", "--yes"}},
		{home, nil, []string{"search", "x", "--sort", "sideways"}},
		{home, nil, []string{"run", "--resume", "no-such-session", "hello"}},
		{home, nil, []string{"run", "--provider", "openai", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "hello"}},
		{home, nil, []string{"import", "hermes", filepath.Join(t.TempDir(), "missing")}},
		{home, nil, []string{"sessions", "export", "-o", filepath.Join(t.TempDir(), "no", "such", "dir", "x.jsonl")}},
		{badConfig, nil, []string{"sessions", "list"}},
		{t.TempDir(), []string{"SPOOL_DATABASE_URL=postgres://u:pw@127.0.0.1:1/x?connect_timeout=2"}, []string{"sessions", "list"}},
	}
	for _, c := range cases {
		r := spoolEnv(t, c.home, "", c.env, c.args...)
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			if !strings.HasPrefix(l, "No model provider configured") {
				lines = append(lines, l)
			}
		}
		if r.code == 0 || len(lines) == 0 || !strings.HasPrefix(lines[0], "spool: ") {
			t.Errorf("spool %v: exit %d, stderr %q (want a non-zero exit and a spool: line)", c.args, r.code, r.stderr)
			continue
		}
		if rep := repeatedPart(strings.TrimPrefix(lines[0], "spool: ")); rep != "" {
			t.Errorf("spool %v repeats itself (%q): %s", c.args, rep, lines[0])
		}
	}
}

// repeatedPart returns a ": "-separated part of msg that begins with the same two words as an
// earlier part, or "".
func repeatedPart(msg string) string {
	seen := map[string]bool{}
	for _, part := range strings.Split(msg, ": ") {
		f := strings.Fields(part)
		if len(f) < 2 {
			continue
		}
		key := f[0] + " " + f[1]
		if seen[key] {
			return part
		}
		seen[key] = true
	}
	return ""
}

func TestRepeatedPart(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]string{
		`search "x": search "x": index pending messages: disk full`:  `search "x"`,
		"create session: create session 2026_a: database is damaged": "create session 2026_a",
		"flush 1 messages on s: append to s: database busy":          "",
		`session "nope" not found`:                                   "",
	} {
		if got := repeatedPart(msg); got != want {
			t.Errorf("repeatedPart(%q) = %q, want %q", msg, got, want)
		}
	}
}
