package cli_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type listedSession struct {
	ID           string  `json:"id"`
	Title        string  `json:"title"`
	Source       string  `json:"source"`
	ParentID     string  `json:"parent_id"`
	MessageCount int     `json:"message_count"`
	Preview      *string `json:"preview"`
	LastActive   *string `json:"last_active"`
}

func ids(ls []listedSession) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	slices.Sort(out)
	return out
}

func TestSessionsList(t *testing.T) {
	t.Parallel()
	home := seededHome(t)

	all := decode[[]listedSession](t, spool(t, home, "sessions", "list", "--json").ok(t, "list"))
	// Compression continuations are folded into their root unless --all.
	if got, want := ids(all), []string{idOld, idRoot, idBranch, idAPI}; !slices.Equal(got, sorted(want)) {
		t.Errorf("list ids = %v, want %v", got, sorted(want))
	}
	for _, l := range all {
		if l.Preview == nil || l.LastActive == nil {
			t.Errorf("list entry %s lacks preview or last_active", l.ID)
		}
	}
	withKids := decode[[]listedSession](t, spool(t, home, "sessions", "list", "--all", "--json").ok(t, "list --all"))
	if !slices.Contains(ids(withKids), idCont) {
		t.Errorf("list --all lacks the continuation %s: %v", idCont, ids(withKids))
	}
	api := decode[[]listedSession](t, spool(t, home, "sessions", "list", "--source", "api", "--json").ok(t, "list --source"))
	if got := ids(api); !slices.Equal(got, []string{idAPI}) {
		t.Errorf("list --source api = %v", got)
	}
	one := decode[[]listedSession](t, spool(t, home, "sessions", "list", "--limit", "1", "--json").ok(t, "list --limit"))
	if len(one) != 1 || one[0].ID != idAPI {
		t.Errorf("list --limit 1 = %v, want the newest (%s)", ids(one), idAPI)
	}

	human := spool(t, home, "sessions", "list").ok(t, "list").stdout
	for _, want := range []string{"ID", "TITLE", idRoot, "Parser fix", "Gateway chat", "api"} {
		if !strings.Contains(human, want) {
			t.Errorf("table lacks %q:\n%s", want, human)
		}
	}
	if strings.Contains(human, "\x1b[") {
		t.Error("escape codes in output to a pipe")
	}
	empty := spool(t, t.TempDir(), "sessions", "list", "--json").ok(t, "list empty")
	if strings.TrimSpace(empty.stdout) != "[]" {
		t.Errorf("empty list JSON = %q, want []", empty.stdout)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

type shownSession struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	SystemPrompt *string  `json:"system_prompt"`
	Children     []string `json:"children"`
	Messages     []struct {
		ID        int64  `json:"id"`
		Role      string `json:"role"`
		Content   string `json:"content"`
		Active    bool   `json:"active"`
		Compacted bool   `json:"compacted"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

func TestSessionsShow(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	for _, ref := range []string{idRoot, "20261120_093000"} {
		s := decode[shownSession](t, spool(t, home, "sessions", "show", ref, "--json").ok(t, "show "+ref))
		if s.ID != idRoot || s.Title != "Parser fix" {
			t.Fatalf("show %q gave %s %q", ref, s.ID, s.Title)
		}
	}
	// A title names its compression chain, whose newest link ("Parser fix #2") is the live one.
	for _, ref := range []string{"Parser fix", "Parser fix #2"} {
		s := decode[shownSession](t, spool(t, home, "sessions", "show", ref, "--json").ok(t, "show "+ref))
		if s.ID != idCont {
			t.Errorf("show %q gave %s %q, want the continuation %s", ref, s.ID, s.Title, idCont)
		}
	}
	s := decode[shownSession](t, spool(t, home, "sessions", "show", idRoot, "--json").ok(t, "show"))
	if s.SystemPrompt == nil || *s.SystemPrompt != "You are careful." {
		t.Errorf("system_prompt = %v", s.SystemPrompt)
	}
	if !slices.Contains(s.Children, idBranch) || !slices.Contains(s.Children, idCont) {
		t.Errorf("children = %v", s.Children)
	}
	var calls, archived int
	roles := map[string]bool{}
	for _, m := range s.Messages {
		roles[m.Role] = true
		if !m.Active && m.Compacted {
			archived++
		}
		for _, c := range m.ToolCalls {
			calls++
			if c.ID != "call_1" || c.Function.Name != "read_file" || c.Function.Arguments != `{"path":"parse.go"}` {
				t.Errorf("tool call = %+v", c)
			}
		}
	}
	if calls != 1 || archived == 0 || !roles["tool"] || !roles["assistant"] || !roles["user"] {
		t.Errorf("show --json messages: %d tool calls, %d archived, roles %v", calls, archived, roles)
	}
	active := decode[shownSession](t, spool(t, home, "sessions", "show", idRoot, "--active", "--json").ok(t, "show --active"))
	for _, m := range active.Messages {
		if !m.Active {
			t.Errorf("show --active lists inactive row %d", m.ID)
		}
	}
	if len(active.Messages) >= len(s.Messages) {
		t.Errorf("--active shows %d rows, display view %d", len(active.Messages), len(s.Messages))
	}

	human := spool(t, home, "sessions", "show", idRoot).ok(t, "show").stdout
	for _, want := range []string{"Session:", idRoot, "Parser fix", "read_file", "archived", "now write a test 测试", "Children:"} {
		if !strings.Contains(human, want) {
			t.Errorf("show output lacks %q:\n%s", want, human)
		}
	}
}

func TestSessionsRename(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	spool(t, home, "sessions", "rename", idAPI, "Renamed chat").ok(t, "rename")
	s := decode[shownSession](t, spool(t, home, "sessions", "show", "Renamed chat", "--json").ok(t, "show renamed"))
	if s.ID != idAPI {
		t.Errorf("title resolves to %s", s.ID)
	}
	out := decode[map[string]string](t, spool(t, home, "sessions", "rename", idAPI, "", "--json").ok(t, "clear title"))
	if out["id"] != idAPI || out["title"] != "" {
		t.Errorf("rename --json = %v", out)
	}
}

type searchHit struct {
	SessionID string   `json:"session_id"`
	Role      string   `json:"role"`
	Snippet   string   `json:"snippet"`
	Source    string   `json:"source"`
	Active    bool     `json:"active"`
	ToolName  string   `json:"tool_name"`
	Summary   bool     `json:"summary"`
	Terms     []string `json:"terms"`
}

func TestSearch(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	hits := decode[[]searchHit](t, spool(t, home, "search", "tokenizer", "--json").ok(t, "search"))
	sessions := map[string]bool{}
	archived := false
	for _, h := range hits {
		sessions[h.SessionID] = true
		if !strings.Contains(h.Snippet, ">>>") || !strings.Contains(h.Snippet, "<<<") {
			t.Errorf("snippet without markers: %q", h.Snippet)
		}
		archived = archived || !h.Active
	}
	if !sessions[idRoot] || !sessions[idAPI] {
		t.Errorf("search tokenizer found sessions %v", sessions)
	}
	// A question in plain words: each result names the terms of it that it holds.
	asked := decode[[]searchHit](t, spool(t, home, "search", "what about the tokenizer?", "--json").ok(t, "search asked"))
	if len(asked) == 0 || !slices.Equal(asked[0].Terms, []string{"tokenizer"}) {
		t.Errorf("search asked: hits %+v, want the first to name the term tokenizer", asked)
	}
	if !archived {
		t.Error("archived rows are not searchable")
	}
	api := decode[[]searchHit](t, spool(t, home, "search", "tokenizer", "--source", "api", "--json").ok(t, "search --source"))
	if len(api) == 0 {
		t.Error("search --source api found nothing")
	}
	for _, h := range api {
		if h.Source != "api" {
			t.Errorf("--source api returned a %s hit", h.Source)
		}
	}
	asst := decode[[]searchHit](t, spool(t, home, "search", "tokenizer", "--role", "assistant", "--json").ok(t, "search --role"))
	if len(asst) == 0 {
		t.Error("search --role assistant found nothing")
	}
	for _, h := range asst {
		if h.Role != "assistant" {
			t.Errorf("--role assistant returned a %s hit", h.Role)
		}
	}
	lim := decode[[]searchHit](t, spool(t, home, "search", "tokenizer", "--limit", "1", "--json").ok(t, "search --limit"))
	if len(lim) != 1 {
		t.Errorf("--limit 1 gave %d hits", len(lim))
	}
	// Tool hits name their tool; summaries say they are one.
	tools := decode[[]searchHit](t, spool(t, home, "search", "tokenize", "--role", "tool", "--json").ok(t, "search --role tool"))
	if len(tools) != 1 || tools[0].ToolName != "read_file" {
		t.Errorf("tool hit without its tool name: %+v", tools)
	}
	sums := decode[[]searchHit](t, spool(t, home, "search", "summary", "--json").ok(t, "search summary"))
	if len(sums) == 0 || !sums[0].Summary {
		t.Errorf("summary hit not labelled: %+v", sums)
	}
	if out := spool(t, home, "search", "tokenize", "--role", "tool").ok(t, "search --role tool").stdout; !strings.Contains(out, "tool read_file") {
		t.Errorf("human tool hit does not name the tool:\n%s", out)
	}
	// Text the FTS engine would choke on is still a valid query.
	spool(t, home, "search", `"unbalanced AND (`, "--json").ok(t, "search odd syntax")

	human := spool(t, home, "search", "tokenizer").ok(t, "search").stdout
	if !strings.Contains(human, ">>>") || strings.Contains(human, "\x1b[") {
		t.Errorf("plain output should keep the markers and have no escapes:\n%s", human)
	}
	none := spool(t, home, "search", "zebraquux").ok(t, "search no hits")
	if !strings.Contains(none.stdout, "No matches") {
		t.Errorf("no-hit output %q", none.stdout)
	}
}

type importResult struct {
	Sessions int      `json:"sessions"`
	Messages int      `json:"messages"`
	Skipped  []string `json:"skipped"`
	Orphaned []string `json:"orphaned"`
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	file := filepath.Join(t.TempDir(), "all.jsonl")
	out := decode[map[string]any](t, spool(t, home, "sessions", "export", "-o", file, "--json").ok(t, "export"))
	if out["file"] != file {
		t.Errorf("export --json = %v", out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export file: %v %v", fi, err)
	}
	other := t.TempDir()
	res := decode[importResult](t, spool(t, other, "sessions", "import", file, "--json").ok(t, "import"))
	if res.Sessions != 5 || len(res.Skipped) != 0 {
		t.Errorf("import = %+v, want 5 sessions", res)
	}
	if a, b := snapshot(t, home), snapshot(t, other); stripIDs(a) != stripIDs(b) {
		t.Errorf("stores differ after the round trip:\n%s\n---\n%s", a, b)
	}
	// Importing again skips everything and changes nothing.
	before := snapshot(t, other)
	res = decode[importResult](t, spool(t, other, "sessions", "import", file, "--json").ok(t, "re-import"))
	if res.Sessions != 0 || len(res.Skipped) != 5 {
		t.Errorf("re-import = %+v, want 5 skipped", res)
	}
	if after := snapshot(t, other); after != before {
		t.Errorf("re-import changed the store")
	}
	human := spool(t, other, "sessions", "import", file).ok(t, "re-import human")
	if !strings.Contains(human.stdout, "Skipped 5") {
		t.Errorf("import output %q", human.stdout)
	}

	// A tree export of the root brings its branch and continuation, not the others.
	tree := filepath.Join(t.TempDir(), "tree.jsonl")
	spool(t, home, "sessions", "export", idRoot, "--tree", "-o", tree).ok(t, "export --tree")
	data, _ := os.ReadFile(tree)
	for id, want := range map[string]bool{idRoot: true, idBranch: true, idCont: true, idAPI: false, idOld: false} {
		if got := strings.Contains(string(data), `"id":"`+id+`"`); got != want {
			t.Errorf("tree export contains %s = %v, want %v", id, got, want)
		}
	}
	// Export to stdout, import from stdin.
	piped := spool(t, home, "sessions", "export", idAPI, "-o", "-").ok(t, "export to stdout")
	third := t.TempDir()
	res = decode[importResult](t, spoolIn(t, third, piped.stdout, "sessions", "import", "-", "--json").ok(t, "import stdin"))
	if res.Sessions != 1 || res.Messages != 1 {
		t.Errorf("stdin import = %+v", res)
	}
}

// stripIDs drops message row ids, which an import reassigns.
func stripIDs(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "  ") {
			if _, rest, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
				line = "  " + rest
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func TestPruneStatsDeleteCheck(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	stats := decode[map[string]any](t, spool(t, home, "sessions", "stats", "--json").ok(t, "stats"))
	if stats["sessions"] != float64(5) {
		t.Errorf("stats sessions = %v", stats["sessions"])
	}
	if by, ok := stats["sessions_by_source"].(map[string]any); !ok || by["api"] != float64(1) {
		t.Errorf("stats by source = %v", stats["sessions_by_source"])
	}
	if human := spool(t, home, "sessions", "stats").ok(t, "stats").stdout; !strings.Contains(human, "Sessions:") {
		t.Errorf("stats output %q", human)
	}
	// The message breakdown covers every row.
	if n := stats["messages"].(float64); n != stats["active_messages"].(float64)+stats["archived_messages"].(float64)+stats["superseded_messages"].(float64) {
		t.Errorf("stats do not add up: %v", stats)
	}

	// Only the ended session from over a year ago is older than 30 days.
	// Without a terminal nobody can confirm: --yes is required, and nothing goes without it.
	for _, argv := range [][]string{{"sessions", "prune", "--older-than", "30d"}, {"sessions", "delete", idAPI}} {
		r := spool(t, home, argv...)
		if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "--yes") {
			t.Errorf("%v without --yes and without a terminal: exit %d, stderr %q", argv, r.code, r.stderr)
		}
	}
	spool(t, home, "sessions", "show", idOld).ok(t, "show after a refused prune")
	spool(t, home, "sessions", "show", idAPI).ok(t, "show after a refused delete")

	pr := decode[map[string]any](t, spool(t, home, "sessions", "prune", "--older-than", "30d", "--json", "--yes").ok(t, "prune"))
	if pr["pruned"] != float64(1) {
		t.Errorf("prune = %v, want 1", pr)
	}
	if r := spool(t, home, "sessions", "show", idOld); r.code == 0 {
		t.Error("pruned session still shows")
	}
	// Other units, all longer than the two days of the recent seed, so nothing more goes (a bare
	// number is refused, as TestBadInputIsOneLineAndChangesNothing shows).
	for _, d := range []string{"72h", "4320m", "259200s", "3d"} {
		spool(t, home, "sessions", "prune", "--older-than", d, "--yes").ok(t, "prune "+d)
	}

	del := decode[map[string]any](t, spool(t, home, "sessions", "delete", idAPI, "--json", "--yes").ok(t, "delete"))
	if del["deleted"] != idAPI {
		t.Errorf("delete --json = %v", del)
	}
	spool(t, home, "sessions", "delete", "Parser fix (alt)", "--yes").ok(t, "delete --yes")
	left := decode[[]listedSession](t, spool(t, home, "sessions", "list", "--all", "--json").ok(t, "list"))
	if got := ids(left); !slices.Equal(got, sorted([]string{idRoot, idCont})) {
		t.Errorf("after prune and deletes: %v", got)
	}

	chk := decode[map[string]any](t, spool(t, home, "db", "check", "--json").ok(t, "db check"))
	if chk["ok"] != true {
		t.Errorf("db check = %v", chk)
	}
	if r := spool(t, home, "db", "check").ok(t, "db check"); !strings.HasPrefix(r.stdout, "ok") {
		t.Errorf("db check output %q", r.stdout)
	}
}

func TestDBCheckFindsProblems(t *testing.T) {
	t.Parallel()
	t.Run("counters", func(t *testing.T) {
		t.Parallel()
		home := seededHome(t)
		// Damage behind the store's back: a counter that disagrees with the rows.
		raw := rawDB(t, filepath.Join(home, "spool.db"))
		if _, err := raw.Exec("UPDATE sessions SET message_count = 999 WHERE id = ?", idAPI); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		r := spool(t, home, "db", "check")
		t.Logf("db check: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		if r.code != 1 || !strings.Contains(r.stdout, idAPI) || !strings.HasPrefix(r.stderr, "spool: 1 problem found") {
			t.Errorf("db check of bad counters: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		j := spool(t, home, "db", "check", "--json")
		rep := decode[map[string]any](t, j)
		if j.code != 1 || rep["ok"] != false {
			t.Errorf("db check --json: exit %d, %v", j.code, rep)
		}
		if ps, _ := rep["problems"].([]any); len(ps) != 1 {
			t.Errorf("problems = %v", rep["problems"])
		}
	})
	t.Run("damaged file", func(t *testing.T) {
		t.Parallel()
		home := seededHome(t)
		db := filepath.Join(home, "spool.db")
		data, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 8*4096 {
			t.Skipf("database is only %d bytes; too small to damage pages past the schema", len(data))
		}
		for i := 3 * 4096; i < len(data)-4096; i++ {
			data[i] = byte(i * 7)
		}
		if err := os.WriteFile(db, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := spool(t, home, "db", "check")
		t.Logf("db check of a damaged file: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		if r.code == 0 {
			t.Fatalf("db check of a damaged file exited 0:\n%s", r.stdout)
		}
		if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.HasPrefix(r.stderr, "spool: ") {
			t.Errorf("stderr should be one spool: line, got %q", r.stderr)
		}
	})
}

// rawDB opens path with whichever SQLite driver this build registered, bypassing the store.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	for _, name := range []string{"sqlite", "sqlite3"} {
		if slices.Contains(sql.Drivers(), name) {
			db, err := sql.Open(name, path)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	}
	t.Fatalf("no SQLite driver registered (have %v)", sql.Drivers())
	return nil
}

func TestBenchStoreScaledDown(t *testing.T) {
	t.Parallel()
	cmd := []string{"bench", "store", "--json", "--quiet", "--dir", t.TempDir()}
	env := []string{"BENCH_SESSIONS=2", "BENCH_MESSAGES=40", "BENCH_QUERIES=5", "BENCH_LIST_ITERS=2", "BENCH_W5_PROCS=2", "BENCH_W5_MSGS=10"}
	r := spoolEnv(t, t.TempDir(), "", env, cmd...).ok(t, "bench store")
	rep := decode[map[string]any](t, r)
	w, ok := rep["workload"].(map[string]any)
	if !ok || w["messages_sha256"] == nil {
		t.Fatalf("bench report lacks workload checksums: %s", r.stdout)
	}
	if cfg, _ := rep["config"].(map[string]any); cfg["synchronous"] != "NORMAL" || cfg["scaled_down"] != true {
		t.Errorf("bench config = %v", cfg)
	}
}

func TestBadInputIsOneLineAndChangesNothing(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A valid export of a new session, broken on its third line: nothing of it may land.
	valid := spool(t, home, "sessions", "export", idAPI, "-o", "-").ok(t, "export").stdout
	lines := strings.SplitAfter(valid, "\n")
	newSession := strings.ReplaceAll(lines[0]+lines[1], idAPI, "20261122_000000_ffffff")
	malformed := write("bad.jsonl", newSession+`{"type":"message","session_id":"20261122_000000_ffffff","role":`+"\n")
	badRole := write("role.jsonl", newSession+`{"type":"message","session_id":"20261122_000000_ffffff","id":1,"role":"wizard","content":"x","timestamp":"2026-11-22T00:00:00Z","summary":false,"active":true,"compacted":false}`+"\n")
	empty := write("empty.jsonl", "")
	notExport := write("notes.txt", "hello\nworld\n")
	missingOut := filepath.Join(dir, "never-written.jsonl")

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"show unknown", []string{"sessions", "show", "nope"}, `session "nope" not found`},
		{"show unknown json", []string{"sessions", "show", "nope", "--json"}, `session "nope" not found`},
		{"show ambiguous prefix", []string{"sessions", "show", "20261120_09"}, "ambiguous"},
		{"rename unknown", []string{"sessions", "rename", "nope", "x"}, `session "nope" not found`},
		{"rename to a taken title", []string{"sessions", "rename", idAPI, "Parser fix (alt)"}, "already in use"},
		{"delete unknown", []string{"sessions", "delete", "nope", "--yes"}, `session "nope" not found`},
		{"delete ambiguous", []string{"sessions", "delete", "2026112", "--yes"}, "ambiguous"},
		{"export unknown", []string{"sessions", "export", "nope", "-o", missingOut}, `session "nope" not found`},
		{"export into a missing dir", []string{"sessions", "export", "-o", filepath.Join(dir, "no", "such", "x.jsonl")}, "no such file"},
		{"import malformed line", []string{"sessions", "import", malformed}, "line 3"},
		{"import bad role", []string{"sessions", "import", badRole}, `line 3: message has unknown role "wizard"`},
		{"import empty file", []string{"sessions", "import", empty}, "not a spool export"},
		{"import not an export", []string{"sessions", "import", notExport}, "line 1"},
		{"import missing file", []string{"sessions", "import", filepath.Join(dir, "missing.jsonl")}, "no such file"},
		{"import a directory", []string{"sessions", "import", dir}, "is a directory"},
	}
	// Bad flag values are usage errors: exit 2.
	usage := []struct {
		name string
		args []string
		want string
	}{
		{"prune bad duration", []string{"sessions", "prune", "--older-than", "3x"}, `"3x" is not a duration`},
		{"prune negative duration", []string{"sessions", "prune", "--older-than", "-5d"}, "not a duration"},
		{"prune zero duration", []string{"sessions", "prune", "--older-than", "0d"}, "positive duration"},
		{"prune duration without a unit", []string{"sessions", "prune", "--older-than", "30"}, "has no unit"},
		{"search bad role", []string{"search", "tokenizer", "--role", "wizard"}, `unknown role "wizard"`},
		{"search bad sort", []string{"search", "tokenizer", "--sort", "random"}, `unknown --sort "random"`},
		{"bench recall postgres without a url", []string{"bench", "recall", "--backend", "postgres"}, "needs --postgres-url"},
		{"bench recall unknown backend", []string{"bench", "recall", "--backend", "mysql"}, `--backend must be sqlite or postgres, not "mysql"`},
		{"bench recall negative filler", []string{"bench", "recall", "--filler", "-1"}, "--filler must be 0 or more"},
		{"bench scale postgres without a url", []string{"bench", "scale", "--backend", "postgres"}, "needs --postgres-url"},
		{"bench scale url without postgres", []string{"bench", "scale", "--postgres-url", "postgres://x/y"}, "--postgres-url needs --backend postgres"},
	}
	before := snapshot(t, home)
	for i, tc := range append(tests, usage...) {
		code := 1
		if i >= len(tests) {
			code = 2
		}
		r := spool(t, home, tc.args...)
		t.Logf("%s: %s", tc.name, strings.TrimSpace(r.stderr))
		if r.code == 0 {
			t.Errorf("%s: exit 0, want failure; stdout %q", tc.name, r.stdout)
			continue
		}
		if r.code != code {
			t.Errorf("%s: exit %d, want %d", tc.name, r.code, code)
		}
		msg := strings.TrimSuffix(r.stderr, "\n")
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "spool: ") {
			t.Errorf("%s: stderr is not one spool: line: %q", tc.name, r.stderr)
		}
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: stderr %q does not say %q", tc.name, msg, tc.want)
		}
		if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "Usage:") {
			t.Errorf("%s: stack trace or usage dump on a runtime error: %q", tc.name, r.stderr)
		}
		if after := snapshot(t, home); after != before {
			t.Fatalf("%s changed the database:\nbefore:\n%s\nafter:\n%s", tc.name, before, after)
		}
	}
	if _, err := os.Stat(missingOut); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s behind (%v)", missingOut, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) > 0 {
		t.Errorf("temporary export files left: %v", left)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	before := snapshot(t, home)
	tests := [][]string{
		{"sessions", "show"},
		{"sessions", "rename", idAPI},
		{"sessions", "delete"},
		{"bogus"},
		{"sessions", "bogus"},
		{"sessions", "list", "--limit", "many"},
		{"sessions", "list", "--limit", "-1"},
		{"sessions", "list", "--bogus"},
		{"sessions", "prune"},
		{"sessions", "export"},
		{"search"},
		{"search", "x", "--limit", "0"},
		{"bench", "store", "--synchronous", "extra"},
		{"sessions", "prune", "--older-than", "30days"},
		{"sessions", "prune", "--older-than", "0s"},
		{"run", "one", "two"},
		{"sesions", "list"},
		{"run", "--mdoel", "x", "hi"},
	}
	for _, args := range tests {
		r := spool(t, home, args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
		if !strings.HasPrefix(r.stderr, "spool: ") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, " --help)") {
			t.Errorf("%v: want one spool: line that points at --help, got %q", args, r.stderr)
		}
	}
	if after := snapshot(t, home); after != before {
		t.Fatal("a usage error changed the database")
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("database:\n  synchronous: sometimes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := spool(t, home, "sessions", "list")
	want := "spool: config: " + filepath.Join(home, "config.yaml") + ":2: database.synchronous:"
	if r.code != 1 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("bad config: exit %d, stderr %q; want one line starting %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(home, "spool.db")); !os.IsNotExist(err) {
		t.Error("a bad config still created the database")
	}
	// Environment overrides reach the command: a database path elsewhere.
	other := filepath.Join(t.TempDir(), "elsewhere.db")
	good := t.TempDir()
	spoolEnv(t, good, "", []string{"SPOOL_DATABASE_PATH=" + other}, "sessions", "list").ok(t, "env db path")
	if _, err := os.Stat(other); err != nil {
		t.Errorf("SPOOL_DATABASE_PATH was not used: %v", err)
	}
}
