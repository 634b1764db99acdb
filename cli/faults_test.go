package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// bundle is an export file: 50 good sessions, then one more session line (extra).
func bundle(extra string) string {
	var b strings.Builder
	b.WriteString(`{"spool_export":1,"exported_at":"2026-11-30T00:00:00Z","sessions":51}` + "\n")
	for i := range 50 {
		id := fmt.Sprintf("20261130_0000%02d_good%02d", i, i)
		fmt.Fprintf(&b, `{"type":"session","id":%q,"source":"cli","started_at":"2026-11-30T00:00:00Z","message_count":1,"tool_call_count":0,"usage":{}}`+"\n", id)
		fmt.Fprintf(&b, `{"type":"message","session_id":%q,"id":1,"role":"user","content":"good %d","timestamp":"2026-11-30T00:00:00Z","summary":false,"active":true,"compacted":false}`+"\n", id, i)
	}
	b.WriteString(extra + "\n")
	return b.String()
}

func hostileSession(field string) string {
	return `{"type":"session",` + field + `,"source":"cli","started_at":"2026-11-30T00:00:00Z","message_count":0,"tool_call_count":0,"usage":{}}`
}

// A file with a bad session after good ones is rejected whole: one line naming the problem,
// exit 1, and not one of the good sessions stored (before: the 50 good ones were imported, the
// command exited 1, and some of these ids were accepted).
func TestHostileImportStoresNothing(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, line, want string }{
		{"path traversal", hostileSession(`"id":"../evil"`), "path separator"},
		{"slash", hostileSession(`"id":"a/b"`), "path separator"},
		{"NUL", hostileSession(`"id":"a\u0000b"`), "control character"},
		{"edge whitespace", hostileSession(`"id":" padded"`), "whitespace"},
		{"inner newline", hostileSession(`"id":"two\nlines"`), "whitespace"},
		{"inner space", hostileSession(`"id":"two words"`), "whitespace"},
		{"escape sequence", hostileSession(`"id":"\u001b[2Jwipe"`), "control character"},
		{"too long", hostileSession(`"id":"` + strings.Repeat("x", 100_000) + `"`), "limit is 128"},
		{"long title", hostileSession(`"id":"20261130_titled","title":"` + strings.Repeat("t", 101) + `"`), "the limit is 100"},
		{"bad parent", hostileSession(`"id":"20261130_child","parent_id":"../up","relation":"branch"`), "parent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			file := filepath.Join(t.TempDir(), "hostile.jsonl")
			if err := os.WriteFile(file, []byte(bundle(tc.line)), 0o600); err != nil {
				t.Fatal(err)
			}
			spool(t, home, "sessions", "list").ok(t, "create the database")
			r := spool(t, home, "sessions", "import", file)
			msg := strings.TrimSuffix(r.stderr, "\n")
			if r.code != 1 || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "spool: ") || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "line 102") {
				t.Errorf("import: exit %d, stderr %q; want exit 1 and one line naming line 102 and %q", r.code, r.stderr, tc.want)
			}
			if strings.Contains(msg, "\x1b") || strings.Contains(msg, "\x00") {
				t.Errorf("the error repeats raw control bytes: %q", msg)
			}
			list := spool(t, home, "sessions", "list", "--json").ok(t, "list")
			if strings.Contains(list.stdout, "good") {
				t.Fatalf("a rejected file left sessions behind:\n%s", list.stdout)
			}
		})
	}
	t.Run("good file", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		file := filepath.Join(t.TempDir(), "good.jsonl")
		if err := os.WriteFile(file, []byte(bundle(hostileSession(`"id":"20261130_last"`))), 0o600); err != nil {
			t.Fatal(err)
		}
		r := spool(t, home, "sessions", "import", file).ok(t, "import")
		if !strings.Contains(r.stdout, "Imported 51 sessions (50 messages)") {
			t.Fatalf("import of a good file: %q", r.stdout)
		}
	})
}

// mountTmpfs mounts a tmpfs of size at a new directory (root only); the test is skipped, saying
// why, where this process cannot mount one.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (run the tests as root, as CI does)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); run as root with CAP_SYS_ADMIN to enable", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// oneFailure asserts r failed with exactly one "spool: " line on stderr containing want.
func oneFailure(t *testing.T, what string, r result, want string) {
	t.Helper()
	msg := strings.TrimSuffix(r.stderr, "\n")
	if r.code == 0 || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "spool: ") || !strings.Contains(msg, want) {
		t.Errorf("%s: exit %d, stderr %q; want a failure in one spool: line saying %q", what, r.code, r.stderr, want)
	}
}

// quietSuccess asserts r succeeded with nothing on stderr.
func quietSuccess(t *testing.T, what string, r result) {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Errorf("%s: exit %d, stderr %q; want success with a quiet stderr\nstdout: %s", what, r.code, r.stderr, r.stdout)
	}
}

// Reading commands work on a database on a read-only filesystem; writing ones fail in one line.
func TestReadOnlyHome(t *testing.T) {
	t.Parallel()
	home := mountTmpfs(t, "16m")
	seed(t, home)
	if out, err := exec.Command("mount", "-o", "remount,ro", home).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	for _, args := range [][]string{
		{"sessions", "list"}, {"sessions", "show", idRoot}, {"search", "tokenizer"},
		{"sessions", "export", "-o", "-"}, {"sessions", "stats"}, {"db", "check"},
	} {
		r := spool(t, home, args...)
		if args[0] == "db" {
			// The full-text checks cannot run read-only; db check says so in one line.
			if r.code != 0 || strings.Count(r.stderr, "\n") > 1 || !strings.Contains(r.stdout, "ok:") {
				t.Errorf("db check read-only: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			continue
		}
		quietSuccess(t, strings.Join(args, " "), r)
	}
	oneFailure(t, "rename", spool(t, home, "sessions", "rename", idAPI, "new name"), "read-only")
	oneFailure(t, "delete", spool(t, home, "sessions", "delete", idAPI, "--yes"), "read-only")
}

// With the disk full, reads keep working and a failing write says so in one line.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	home := mountTmpfs(t, "8m")
	seed(t, home)
	// Fill the filesystem.
	f, err := os.Create(filepath.Join(home, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for size := 64 << 10; size > 0; size /= 2 {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				break
			}
		}
	}
	f.Close()
	for _, args := range [][]string{
		{"sessions", "list"}, {"sessions", "show", idRoot}, {"search", "tokenizer"}, {"db", "check"},
	} {
		quietSuccess(t, strings.Join(args, " "), spool(t, home, args...))
	}
	big := strings.Repeat("a long title that needs a page ", 3)
	oneFailure(t, "rename on a full disk", spool(t, home, "sessions", "rename", idAPI, big[:90]), "full")
	url := startFakeLLM(t)
	oneFailure(t, "run on a full disk", spool(t, home, viaFake(url, "--resume", idAPI, "hello")...), "full")
	oneFailure(t, "new run on a full disk", spool(t, home, viaFake(url, "hello")...), "full")

	// Nearly full: the database opens (room for its -shm and a little WAL), the append of a
	// large prompt does not fit.
	filler := filepath.Join(home, "filler")
	fi, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, fi.Size()-160<<10); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, home)
	prompt := strings.Repeat("a large prompt that will not fit on the disk ", 4500)
	oneFailure(t, "large run on a nearly full disk", spoolIn(t, home, prompt, viaFake(url, "--resume", idAPI, "-")...), "full")
	quietSuccess(t, "show after the failed run", spool(t, home, "sessions", "show", idAPI))
	if after := snapshot(t, home); after != before {
		t.Errorf("the failed run changed the transcripts:\nbefore %s\nafter %s", before, after)
	}
	quietSuccess(t, "list after the failed run", spool(t, home, "sessions", "list"))
}

// Another program's SQLite file at the database path is refused in one line, untouched; a
// read-only database stays read-only.
func TestForeignFileAndModes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "spool.db")
	raw := rawDB(t, path)
	if _, err := raw.Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('theirs')"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := spool(t, home, "sessions", "list")
	oneFailure(t, "list on a foreign file", r, "not a spool database")
	if strings.Contains(r.stderr, "CREATE") || strings.Contains(r.stderr, "SELECT") {
		t.Errorf("raw SQL in the error: %q", r.stderr)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the foreign file was changed")
	}

	mine := seededHome(t)
	db := filepath.Join(mine, "spool.db")
	if err := os.Chmod(db, 0o400); err != nil {
		t.Fatal(err)
	}
	quietSuccess(t, "list of a 0400 database", spool(t, mine, "sessions", "list"))
	if fi, _ := os.Stat(db); fi.Mode().Perm() != 0o400 {
		t.Errorf("mode 0400 became %v", fi.Mode().Perm())
	}
}

// Stored text with escape sequences and control bytes never reaches the terminal raw: show,
// list and search print them as visible escapes.
func TestStoredControlBytesAreEscaped(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	hostile := "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\x00\u202eevil"
	withStore(t, home, func(st store.Backend) {
		ctx := context.Background()
		check(st.CreateSession(ctx, store.NewSession{ID: "20261130_000000_esc000", Model: "m\x1b[1m"}))(t)
		check(st.AppendBatch(ctx, "20261130_000000_esc000", []store.Message{
			{Role: store.RoleUser, Content: "needle " + hostile},
			{Role: store.RoleAssistant, Content: "ok", Reasoning: hostile, ToolCalls: []store.ToolCall{
				{ID: "c\x1b1", Type: "function", Function: store.ToolFunction{Name: "t", Arguments: `{"a":"` + "\x1b[2J" + `"}`}}}},
		}))(t)
	})
	for _, args := range [][]string{
		{"sessions", "show", "20261130_000000_esc000"}, {"sessions", "list"}, {"search", "needle"},
	} {
		r := spool(t, home, args...).ok(t, strings.Join(args, " "))
		for _, bad := range []string{"\x1b", "\x07", "\x00", "\r", "\u202e"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("%s printed %q raw:\n%q", strings.Join(args, " "), bad, r.stdout)
			}
		}
		if args[1] == "show" && !strings.Contains(r.stdout, `\x1b[2J`) {
			t.Errorf("show does not make the escape visible:\n%s", r.stdout)
		}
	}
	// The preview goes on past a NUL byte.
	list := decode[[]map[string]any](t, spool(t, home, "sessions", "list", "--json").ok(t, "list --json"))
	if len(list) != 1 || !strings.HasSuffix(fmt.Sprint(list[0]["preview"]), "\u202eevil") {
		t.Errorf("preview stops early: %q", list)
	}
}

// Config problems the user should see: a duplicate key fails with its line, a misspelt
// SPOOL_ section variable warns in one line and the command still works.
func TestConfigDuplicatesAndEnvTypos(t *testing.T) {
	t.Parallel()
	home := writeConfig(t, "leases:\n  ttl: 10m\n  ttl: 20m\n")
	oneFailure(t, "duplicate key", spool(t, home, "sessions", "list"), "config.yaml:3: leases.ttl: appears twice (first on line 2)")
	home = writeConfig(t, "leases:\n  ttl: 30s\n")
	oneFailure(t, "short ttl alone", spool(t, home, "sessions", "list"), "config.yaml:2: leases.ttl: 30s is not longer")
	r := spoolEnv(t, t.TempDir(), "", []string{"SPOOL_LEASES_TTLL=1h"}, "sessions", "list")
	if r.code != 0 || strings.TrimSpace(r.stderr) != "spool: warning: SPOOL_LEASES_TTLL names no setting and is ignored (did you mean SPOOL_LEASES_TTL?)" {
		t.Errorf("env typo: exit %d, stderr %q", r.code, r.stderr)
	}
}

// The reliability benchmark runs end to end, scaled down, and reports 0 in every column.
func TestBenchReliabilityScaledDown(t *testing.T) {
	t.Parallel()
	r := spool(t, t.TempDir(), "bench", "reliability", "--json", "--minutes", "0.05", "--kills", "4", "--fences", "1", "--imports", "5", "--queries", "100")
	if r.code != 0 {
		t.Fatalf("bench reliability: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	rep := decode[map[string]map[string]any](t, r)
	if rep["kill"]["trials"] != float64(4) || rep["fence"]["trials"] != float64(1) || rep["import"]["files"] != float64(5) || rep["search"]["queries"] != float64(100) {
		t.Fatalf("report = %v", rep)
	}
	if c, _ := rep["mixed"]["commands"].(float64); c == 0 {
		t.Fatalf("no mixed-load commands ran: %v", rep["mixed"])
	}
}
