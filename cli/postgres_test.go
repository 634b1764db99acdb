package cli_test

import (
	"strings"
	"testing"

	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// TestPostgresBackend: SPOOL_DATABASE_URL selects PostgreSQL and every command works on it
// unchanged: a turn, the listing, search, db check.
func TestPostgresBackend(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	url := pgtest.NewDatabase(t)
	env := []string{"SPOOL_DATABASE_URL=" + url}
	run := func(args ...string) result {
		t.Helper()
		return spoolEnv(t, home, "", env, args...)
	}
	run("run", "remember the flamingo parser").ok(t, "run on postgres")
	list := decode[[]listedSession](t, run("sessions", "list", "--json").ok(t, "list"))
	if len(list) != 1 {
		t.Fatalf("sessions on postgres = %+v, want 1", list)
	}
	if r := run("search", "flamingo").ok(t, "search"); !strings.Contains(r.stdout, "flamingo") {
		t.Errorf("search on postgres: %q", r.stdout)
	}
	chk := decode[map[string]any](t, run("db", "check", "--json").ok(t, "db check"))
	if chk["ok"] != true || !strings.HasPrefix(chk["path"].(string), "postgres://") {
		t.Errorf("db check on postgres = %v", chk)
	}
	// Nothing went to the SQLite file in the home.
	if r := spool(t, home, "sessions", "list", "--json").ok(t, "list sqlite"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("the SQLite store got sessions too: %s", r.stdout)
	}
}

// TestPostgresURLErrors: a bad or unreachable URL is one line, exit non-zero, no password.
func TestPostgresURLErrors(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"postgres://spool:hunter2@127.0.0.1:1/spool?sslmode=disable&connect_timeout=2",
		"mysql://spool:hunter2@127.0.0.1/spool",
	} {
		r := spoolEnv(t, t.TempDir(), "", []string{"SPOOL_DATABASE_URL=" + url}, "sessions", "list")
		if r.code == 0 || strings.Contains(r.stderr, "hunter2") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("URL %s: exit %d, stderr %q (want one line, non-zero, no password)", url, r.code, r.stderr)
		}
	}
}
