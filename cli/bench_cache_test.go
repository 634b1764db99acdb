package cli_test

import (
	"strings"
	"testing"
)

// `spool bench cache --control` runs an agent that breaks the cache every turn in spool's place:
// the benchmark must say so and exit 1, as it would for spool itself.
func TestBenchCacheControlExitsOne(t *testing.T) {
	t.Parallel()
	r := spool(t, t.TempDir(), "bench", "cache", "--turns", "20", "--provider", "openai", "--scenario", "steady", "--control", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, "steady, openai (control): efficiency") || !strings.Contains(r.stdout, "(control:") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	bad := spool(t, t.TempDir(), "bench", "cache", "--provider", "gemini")
	if bad.code == 0 || !strings.Contains(bad.stderr, "unknown provider cache model") {
		t.Errorf("bad provider: exit %d, stderr %q", bad.code, bad.stderr)
	}
}
