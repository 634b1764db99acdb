package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

const hermesFixture = "../importer/hermes/testdata/hermes-home"

func TestImportHermes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	// No DIR: $HERMES_HOME, as the reference resolves its home.
	abs, err := filepath.Abs(hermesFixture)
	if err != nil {
		t.Fatal(err)
	}
	r := spoolEnv(t, home, "", []string{"HERMES_HOME=" + abs}, "import", "hermes").ok(t, "import hermes")
	for _, want := range []string{"state.db schema 10", "sessions              8  (1 branch, 1 compression)",
		"routes                2  (1 suspended)", "jsonl_line: not a JSON message (corrupt line) (1): sessions/20260301_070000_fxf001.jsonl:17"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "warning: sessions/20260301_070000_fxf001.jsonl:17") {
		t.Errorf("no warning for the corrupt line: %q", r.stderr)
	}
	type report struct {
		Sessions, Messages, Routes int
		Skipped                    []struct{ Kind, ID, Reason string }
	}
	again := decode[report](t, spool(t, home, "import", "hermes", hermesFixture, "--json").ok(t, "import again"))
	if again.Sessions != 0 || again.Messages != 0 || again.Routes != 0 || len(again.Skipped) != 10 {
		t.Errorf("second import = %+v", again)
	}
	withStore(t, home, func(st store.Backend) {
		ls, err := st.ListSessions(context.Background(), store.ListOptions{})
		if err != nil || len(ls) != 7 {
			t.Errorf("listed %d sessions (%v), want 7: the chain once", len(ls), err)
		}
		if tip, _ := st.ResumeTarget(context.Background(), "20260402_100000_fxb001"); tip != "20260402_113000_fxb002" {
			t.Errorf("chain resumes at %q", tip)
		}
	})
}

func TestImportHermesBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notHome := filepath.Join(dir, "empty")
	corrupt := filepath.Join(dir, "corrupt")
	for _, d := range []string{notHome, corrupt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(corrupt, "state.db"), []byte(strings.Repeat("not sqlite ", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	dirDB := filepath.Join(dir, "dirdb")
	if err := os.MkdirAll(filepath.Join(dirDB, "state.db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dirDB, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirDB, "sessions", "20260101_000000_aaaaaa.jsonl"), []byte(`{"role":"user","content":"hi"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ dir, want string }{
		"missing":     {filepath.Join(dir, "nope"), "no such file or directory"},
		"not a home":  {notHome, "is not a Hermes home"},
		"corrupt db":  {corrupt, "state.db"},
		"db is a dir": {dirDB, "state.db is a directory, not a regular file"},
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			r := spool(t, home, "import", "hermes", tc.dir)
			if r.code != 1 || !strings.HasPrefix(r.stderr, "spool: import hermes: ") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 ||
				!strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want one line with %q", r.code, r.stderr, tc.want)
			}
			if _, err := os.Stat(filepath.Join(home, "spool.db")); err == nil {
				withStore(t, home, func(st store.Backend) {
					if stats, _ := st.Stats(context.Background()); stats.Sessions != 0 {
						t.Errorf("stored %d sessions", stats.Sessions)
					}
				})
			}
		})
	}
	if r := spool(t, t.TempDir(), "import", "hermes", "a", "b"); r.code != 2 {
		t.Errorf("two directories: exit %d", r.code)
	}
}

// TestImportHermesMemoryAndConfig: the memory files and config.yaml are brought in, and what
// could not be mapped is listed under "Skipped or changed".
func TestImportHermesMemoryAndConfig(t *testing.T) {
	t.Parallel()
	home, src := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{
		"memories/MEMORY.md": "Tests run with make test.\n§\nThe API lives in api/.\n",
		"memories/USER.md":   "Prefers terse answers.\n",
		"config.yaml":        "model:\n  default: claude-sonnet-4-5\n  provider: anthropic\ndisplay:\n  skin: mono\n",
	} {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := spool(t, home, "import", "hermes", src).ok(t, "import hermes")
	for _, want := range []string{"memory entries        3  (MEMORY.md 2, USER.md 1)",
		"settings              2  (provider.name: anthropic, provider.model: claude-sonnet-4-5)",
		"Skipped or changed 1:", "config: no spool setting of that name (1): display"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	mem, err := os.ReadFile(filepath.Join(home, "memories", "MEMORY.md"))
	if err != nil || !strings.Contains(string(mem), "The API lives in api/.") {
		t.Errorf("spool's MEMORY.md = %q (%v)", mem, err)
	}
}
