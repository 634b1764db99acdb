package hermes_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/importer/hermes"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

var bg = context.Background()

const fixture = "testdata/hermes-home"

// copyHome copies the fixture home into a fresh directory.
func copyHome(t *testing.T) string { return copyTree(t, fixture, "") }

// copyTree copies the files of src (all but the one at the relative path skip) into a fresh
// directory.
func copyTree(t *testing.T, src, skip string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "hermes")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case rel == skip:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func openStore(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rawDB opens path with whichever SQLite driver this build registered, bypassing the store.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	for _, name := range []string{"sqlite", "sqlite3"} {
		if slices.Contains(sql.Drivers(), name) {
			db, err := sql.Open(name, path)
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			t.Cleanup(func() { db.Close() })
			return db
		}
	}
	t.Fatalf("no SQLite driver registered (have %v)", sql.Drivers())
	return nil
}

func exec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// snapshot records every file of a home: its bytes' hash and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		sum := sha256.Sum256(b)
		out[rel] = string(sum[:]) + fi.ModTime().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, before, after map[string]string) {
	t.Helper()
	for name, v := range before {
		if after[name] != v {
			t.Errorf("%s changed (bytes or mtime)", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared in the Hermes home", name)
		}
	}
}

type manifestSession struct {
	Messages         int    `json:"messages"`
	MessagesInSQLite int    `json:"messages_in_sqlite"`
	Title            string `json:"title"`
	Source           string `json:"source"`
	EndReason        string `json:"end_reason"`
	Parent           string `json:"parent"`
	Relation         string `json:"relation"`
	SessionKey       string `json:"session_key"`
}

func readManifest(t *testing.T) map[string]manifestSession {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixture, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Sessions      map[string]manifestSession `json:"sessions"`
		SchemaVersion int                        `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Sessions) != 8 || m.SchemaVersion != 10 {
		t.Fatalf("unexpected manifest: %d sessions, schema %d", len(m.Sessions), m.SchemaVersion)
	}
	return m.Sessions
}

func TestFixtureMatchesManifest(t *testing.T) {
	t.Parallel()
	home := copyHome(t)
	before := snapshot(t, home)
	st := openStore(t)
	var warnings []string
	rep, err := hermes.Import(bg, st, home, hermes.Options{Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, before, snapshot(t, home))

	manifest := readManifest(t)
	total := 0
	for id, want := range manifest {
		s, err := st.GetSession(bg, id)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		all, err := st.Conversation(bg, id, store.ViewAll)
		if err != nil {
			t.Fatal(err)
		}
		total += len(all)
		if len(all) != want.Messages || s.MessageCount != want.Messages {
			t.Errorf("%s: %d messages (count %d), manifest says %d", id, len(all), s.MessageCount, want.Messages)
		}
		if s.Title != want.Title {
			t.Errorf("%s: title %q, want %q", id, s.Title, want.Title)
		}
		if want.Source != "" && s.Source != want.Source {
			t.Errorf("%s: source %q, want %q", id, s.Source, want.Source)
		}
		if want.EndReason != "" && s.EndReason != want.EndReason {
			t.Errorf("%s: end reason %q, want %q", id, s.EndReason, want.EndReason)
		}
		if s.ParentID != want.Parent || string(s.Relation) != want.Relation {
			t.Errorf("%s: parent %q relation %q, want %q %q", id, s.ParentID, s.Relation, want.Parent, want.Relation)
		}
		if s.SessionKey != want.SessionKey {
			t.Errorf("%s: session key %q, want %q", id, s.SessionKey, want.SessionKey)
		}
	}
	wantRep := hermes.Report{Home: home, SchemaVersion: 10, Sessions: 8, Messages: total, SystemPrompts: 1,
		FromJSONL: 1, JSONLOnly: 1, Routes: 2, Suspended: 1}
	if rep.Sessions != wantRep.Sessions || rep.Messages != wantRep.Messages || rep.SystemPrompts != 1 ||
		rep.FromJSONL != 1 || rep.JSONLOnly != 1 || rep.Routes != 2 || rep.Suspended != 1 || rep.SchemaVersion != 10 ||
		rep.Relations["compression"] != 1 || rep.Relations["branch"] != 1 || len(rep.Relations) != 2 {
		t.Errorf("report = %+v", rep)
	}
	// The one thing skipped is the corrupt transcript line, with a warning naming it.
	corrupt := "sessions/20260301_070000_fxf001.jsonl:17"
	if len(rep.Skipped) != 1 || rep.Skipped[0].ID != corrupt || rep.Skipped[0].Kind != "jsonl_line" {
		t.Errorf("skipped = %+v", rep.Skipped)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], corrupt) {
		t.Errorf("warnings = %q", warnings)
	}
	if stats, _ := st.Stats(bg); stats.SystemPrompts != 1 || stats.Sessions != 8 {
		t.Errorf("prompts not deduplicated or sessions missing: %+v", stats)
	}

	t.Run("session row", func(t *testing.T) {
		s, _ := st.GetSession(bg, "20260401_090000_fxa001")
		want := store.Usage{InputTokens: 5120, OutputTokens: 310, CacheReadTokens: 4096, CacheWriteTokens: 1024,
			ReasoningTokens: 40, APICalls: 3, CostUSD: 0.0213}
		if s.Usage != want {
			t.Errorf("usage = %+v, want %+v", s.Usage, want)
		}
		if s.Model != "anthropic/claude-sonnet-4" || string(s.ModelConfig) != `{"max_iterations": 90}` {
			t.Errorf("model %q config %s", s.Model, s.ModelConfig)
		}
		if !s.StartedAt.Equal(time.Unix(1775086400, 0)) || !s.EndedAt.Equal(time.Unix(1775090000, 0)) || s.EndReason != "branched" {
			t.Errorf("times %v..%v %q", s.StartedAt, s.EndedAt, s.EndReason)
		}
		if s.ToolCallCount != 1 {
			t.Errorf("tool calls = %d", s.ToolCallCount)
		}
		p, _ := st.SystemPrompt(bg, s.ID)
		if !strings.HasPrefix(p, "You are Hermes, a helpful agent. (fx)") || !strings.Contains(p, "User prefers tabs over spaces.") {
			t.Errorf("system prompt = %q", p)
		}
		if d, _ := st.GetSession(bg, "20260403_080000_fxd001"); d.UserID != "123456789" {
			t.Errorf("user id = %q", d.UserID)
		}
	})

	t.Run("messages", func(t *testing.T) {
		ms, _ := st.Conversation(bg, "20260401_090000_fxa001", store.ViewAll)
		roles := []string{}
		for _, m := range ms {
			roles = append(roles, m.Role)
		}
		if strings.Join(roles, ",") != "user,assistant,tool,assistant,user,assistant" {
			t.Fatalf("roles = %v", roles)
		}
		call := ms[1]
		if len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != "call_1" || call.ToolCalls[0].Function.Name != "read_file" ||
			!strings.Contains(call.ToolCalls[0].Function.Arguments, `"path"`) {
			t.Errorf("tool call = %+v", call.ToolCalls)
		}
		if call.FinishReason != "tool_calls" || call.Reasoning != "The KeyError suggests a missing default." {
			t.Errorf("finish %q reasoning %q", call.FinishReason, call.Reasoning)
		}
		if ms[2].ToolCallID != "call_1" || ms[2].ToolName != "read_file" || !strings.Contains(ms[2].Content, "return TABLE[t]") {
			t.Errorf("tool result = %+v", ms[2])
		}
		if !strings.Contains(ms[3].Content, "修复完成 ✅") || !strings.HasPrefix(ms[4].Content, "数据库迁移") {
			t.Errorf("CJK/emoji content lost: %q / %q", ms[3].Content, ms[4].Content)
		}
		for i, m := range ms {
			if want := time.Unix(1775086410+int64(10*i), 0); !m.Timestamp.Equal(want) {
				t.Errorf("message %d timestamp %v, want %v", i, m.Timestamp, want)
			}
			if i > 0 && m.ID <= ms[i-1].ID {
				t.Errorf("message ids not increasing: %d then %d", ms[i-1].ID, m.ID)
			}
		}
		// The compression child's first message is its summary carrier.
		cont, _ := st.Conversation(bg, "20260402_113000_fxb002", store.ViewAll)
		if !cont[0].Summary || !strings.HasPrefix(cont[0].Content, "[CONTEXT COMPACTION]") || cont[1].Summary {
			t.Errorf("summary carrier not marked: %+v", cont[:2])
		}
		// The longer JSONL won, in its order; the SQLite tail is not appended to it.
		legacy, _ := st.Conversation(bg, "20260301_070000_fxf001", store.ViewAll)
		if legacy[0].Content != "legacy question 0 about invoice INV-1000" || legacy[15].Content != "legacy answer 7" {
			t.Errorf("JSONL transcript = %q ... %q", legacy[0].Content, legacy[15].Content)
		}
		old, _ := st.Conversation(bg, "20260215_060000_fxg001", store.ViewAll)
		if old[1].Content != "hello from 2026-02" {
			t.Errorf("JSONL-only transcript = %+v", old)
		}
		// Where SQLite and JSONL have as many messages, SQLite (with its timestamps) wins.
		dentist, _ := st.Conversation(bg, "20260403_080000_fxd001", store.ViewAll)
		if !dentist[0].Timestamp.Equal(time.Unix(1775432010, 0)) {
			t.Errorf("equal-length JSONL replaced SQLite: %+v", dentist[0])
		}
	})

	t.Run("lineage", func(t *testing.T) {
		tip, err := st.ResumeTarget(bg, "20260402_100000_fxb001")
		if err != nil || tip != "20260402_113000_fxb002" {
			t.Errorf("resume of the chain root = %q, %v", tip, err)
		}
		chain, _ := st.Chain(bg, "20260402_113000_fxb002")
		if len(chain) != 2 || chain[0].ID != "20260402_100000_fxb001" {
			t.Errorf("chain = %+v", chain)
		}
		ls, err := st.ListSessions(bg, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.ID)
			if l.ID == "20260402_100000_fxb001" && (l.TipID != "20260402_113000_fxb002" || !l.LastActive.Equal(time.Unix(1775345630, 0))) {
				t.Errorf("chain root lists tip %q, last active %v (want the tip's last message)", l.TipID, l.LastActive)
			}
		}
		if slices.Contains(ids, "20260402_113000_fxb002") || !slices.Contains(ids, "20260402_100000_fxb001") ||
			!slices.Contains(ids, "20260401_093000_fxc001") || len(ids) != 7 {
			t.Errorf("listing (the chain must list once, the branch on its own) = %v", ids)
		}
		if tip, _ := st.ResumeTarget(bg, "20260401_090000_fxa001"); tip != "20260401_090000_fxa001" {
			t.Errorf("a branched parent resumes at %q", tip)
		}
	})

	t.Run("routes", func(t *testing.T) {
		for key, want := range map[string]struct {
			id        string
			suspended bool
			name      string
		}{
			"agent:main:telegram:dm:123456789": {"20260403_080000_fxd001", false, "Alice"},
			"agent:main:discord:thread:42:777": {"20260403_090000_fxe001", true, "release-chat"},
		} {
			r, err := st.GetRoute(bg, key)
			if err != nil {
				t.Fatal(err)
			}
			var origin map[string]any
			_ = json.Unmarshal(r.Origin, &origin)
			if r.SessionID != want.id || r.Suspended != want.suspended || origin["display_name"] != want.name || r.UpdatedAt.IsZero() {
				t.Errorf("route %s = %+v (origin %v)", key, r, origin)
			}
		}
	})
}

func TestReimportStoresNothingTwice(t *testing.T) {
	t.Parallel()
	home := copyHome(t)
	st := openStore(t)
	if _, err := hermes.Import(bg, st, home, hermes.Options{}); err != nil {
		t.Fatal(err)
	}
	first, _ := st.Stats(bg)
	// A route the gateway has moved since must not be put back.
	if _, err := st.CreateSession(bg, store.NewSession{ID: "20260501_000000_aaaaaa", Source: "telegram"}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRoute(bg, store.Route{Key: "agent:main:telegram:dm:123456789", SessionID: "20260501_000000_aaaaaa"}); err != nil {
		t.Fatal(err)
	}
	rep, err := hermes.Import(bg, st, home, hermes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sessions != 0 || rep.Messages != 0 || rep.Routes != 0 || rep.JSONLOnly != 0 || rep.FromJSONL != 0 {
		t.Errorf("second import stored something: %+v", rep)
	}
	kinds := map[string]int{}
	for _, s := range rep.Skipped {
		kinds[s.Kind+": "+strings.Fields(s.Reason)[0]]++
	}
	if kinds["session: already"] != 8 || kinds["route: already"] != 2 {
		t.Errorf("second import skipped %v", kinds)
	}
	second, _ := st.Stats(bg)
	if second.Messages != first.Messages || second.Sessions != first.Sessions+1 {
		t.Errorf("stats changed: %+v then %+v", first, second)
	}
	if r, _ := st.GetRoute(bg, "agent:main:telegram:dm:123456789"); r.SessionID != "20260501_000000_aaaaaa" {
		t.Errorf("re-import moved a route back to %s", r.SessionID)
	}
}

// liveHome is a copy of the fixture home whose state.db a writer holds open in WAL mode, with
// one more session (id) and its message (content) written but not checkpointed. The writer's
// connection stays open, and so its -wal, until the test ends.
func liveHome(t *testing.T, id, content string) (string, *sql.Conn) {
	t.Helper()
	home := copyHome(t)
	db := rawDB(t, filepath.Join(home, "state.db"))
	exec(t, db, "PRAGMA journal_mode = WAL", "PRAGMA wal_autocheckpoint = 0",
		`INSERT INTO sessions (id, source, started_at, title) VALUES ('`+id+`', 'cli', 1775815200.0, 'live one')`,
		`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('`+id+`', 'user', '`+content+`', 1775815210.0)`)
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return home, conn
}

// TestWALDatabase imports a state.db in WAL mode with rows not yet checkpointed, as a running
// Hermes leaves it, and as a copy of such a home without the -shm (a backup, a crash) holds it:
// the import reads the -wal's rows and the home is byte for byte as before, -shm included (no
// -shm appears, no read mark is taken in one); the writer still writes afterwards.
func TestWALDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		home func(t *testing.T, live string) string
	}{
		{"a writer holds it open", func(_ *testing.T, live string) string { return live }},
		{"copied without its -shm (a backup)", func(t *testing.T, live string) string { return copyTree(t, live, "state.db-shm") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			live, conn := liveHome(t, "20260410_100000_live01", "written while Hermes runs")
			home := tc.home(t, live)
			if fi, err := os.Stat(filepath.Join(home, "state.db-wal")); err != nil || fi.Size() == 0 {
				t.Fatalf("no -wal to read: %v", err)
			}
			before := snapshot(t, home)
			st := openStore(t)
			rep, err := hermes.Import(bg, st, home, hermes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sameFiles(t, before, snapshot(t, home))
			if rep.Sessions != 9 {
				t.Errorf("imported %d sessions, want the 8 checkpointed and the one in the -wal", rep.Sessions)
			}
			ms, err := st.Conversation(bg, "20260410_100000_live01", store.ViewAll)
			if err != nil || len(ms) != 1 || ms[0].Content != "written while Hermes runs" {
				t.Errorf("WAL frames not read: %+v %v", ms, err)
			}
			if _, err := conn.ExecContext(bg, `INSERT INTO messages (session_id, role, content, timestamp) VALUES ('20260410_100000_live01', 'assistant', 'still mine', 1775815220.0)`); err != nil {
				t.Errorf("writer blocked after the import: %v", err)
			}
		})
	}
}

// TestNewerSchema imports a home whose database has what later reference schemas added: more
// tables and columns, content-addressed prompts, session keys and archived rows.
func TestNewerSchema(t *testing.T) {
	t.Parallel()
	home := copyHome(t)
	db := rawDB(t, filepath.Join(home, "state.db"))
	exec(t, db,
		"CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL)",
		"CREATE TABLE gateway_routing (scope TEXT, session_key TEXT, entry_json TEXT, updated_at REAL, PRIMARY KEY (scope, session_key))",
		"CREATE TABLE future_things (x)",
		"ALTER TABLE sessions ADD COLUMN system_prompt_hash TEXT",
		"ALTER TABLE sessions ADD COLUMN session_key TEXT",
		"ALTER TABLE sessions ADD COLUMN cwd TEXT",
		"ALTER TABLE sessions ADD COLUMN git_branch TEXT",
		"ALTER TABLE sessions ADD COLUMN some_future_flag INTEGER DEFAULT 7",
		"ALTER TABLE messages ADD COLUMN active INTEGER DEFAULT 1",
		"ALTER TABLE messages ADD COLUMN compacted INTEGER DEFAULT 0",
		"ALTER TABLE messages ADD COLUMN _compressed_summary INTEGER",
		"ALTER TABLE messages ADD COLUMN api_content TEXT",
		"ALTER TABLE messages ADD COLUMN display_metadata TEXT",
		// v25: the prompt moves out of the row into the content-addressed table.
		"INSERT INTO system_prompts VALUES ('h1', 'prompt from the prompt table')",
		"UPDATE sessions SET system_prompt = NULL, system_prompt_hash = 'h1', cwd = '/src/app', git_branch = 'main' WHERE id = '20260401_090000_fxa001'",
		"UPDATE sessions SET session_key = 'agent:main:cli:x' WHERE id = '20260401_093000_fxc001'",
		// In-place compaction: two rows archived, one superseded, one sent differently on the wire.
		"UPDATE messages SET active = 0, compacted = 1 WHERE id IN (7, 8)",
		"UPDATE messages SET active = 0, compacted = 0 WHERE id = 9",
		"UPDATE messages SET api_content = 'wire text' WHERE id = 10",
	)
	st := openStore(t)
	rep, err := hermes.Import(bg, st, home, hermes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sessions != 8 || rep.Messages != 65 {
		t.Errorf("report = %+v", rep)
	}
	if p, _ := st.SystemPrompt(bg, "20260401_090000_fxa001"); p != "prompt from the prompt table" {
		t.Errorf("prompt = %q", p)
	}
	s, _ := st.GetSession(bg, "20260401_090000_fxa001")
	if s.Cwd != "/src/app" || s.GitBranch != "main" {
		t.Errorf("workspace = %q %q", s.Cwd, s.GitBranch)
	}
	if c, _ := st.GetSession(bg, "20260401_093000_fxc001"); c.SessionKey != "agent:main:cli:x" {
		t.Errorf("session key column not read: %q", c.SessionKey)
	}
	all, _ := st.Conversation(bg, "20260402_100000_fxb001", store.ViewAll)
	active, _ := st.Conversation(bg, "20260402_100000_fxb001", store.ViewActive)
	if len(all) != 24 || len(active) != 21 {
		t.Fatalf("rows %d, active %d", len(all), len(active))
	}
	if !all[0].Compacted || all[0].Active || all[2].Compacted || all[2].Active || !all[3].Active {
		t.Errorf("visibility not kept: %+v", all[:4])
	}
	if all[3].APIContent != "wire text" {
		t.Errorf("api_content = %q", all[3].APIContent)
	}
}

func TestBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(p)
	}
	garbage := make([]byte, 8192)
	for i := range garbage {
		garbage[i] = byte(i * 7)
	}
	// A real SQLite file whose pages were overwritten in the middle.
	damaged, err := os.ReadFile(filepath.Join(fixture, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	damaged = slices.Clone(damaged)
	for i := 4096 * 3; i < 4096*6; i++ {
		damaged[i] = 0xA5
	}
	foreign := filepath.Join(dir, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	exec(t, rawDB(t, filepath.Join(foreign, "state.db")), "CREATE TABLE notes (x)")

	tests := []struct {
		name, dir, want string
	}{
		{"missing", filepath.Join(dir, "nope"), "no such file or directory"},
		{"a file", write("plain/file.txt", []byte("x")) + "/file.txt", "is not a directory"},
		{"not a home", write("empty/notes.txt", []byte("x")), "is not a Hermes home"},
		{"garbage db", write("garbage/state.db", garbage), "state.db"},
		{"damaged db", write("damaged/state.db", damaged), "state.db"},
		{"foreign db", foreign, "not a Hermes session database (no sessions table)"},
		{"bad sessions.json", filepath.Dir(write("gw/sessions/sessions.json", []byte(`{"k": `))), "sessions.json is not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			_, err := hermes.Import(bg, st, tc.dir, hermes.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error = %v, want one line with %q", err, tc.want)
			}
			if stats, _ := st.Stats(bg); stats.Sessions != 0 || stats.Messages != 0 {
				t.Errorf("something was stored: %+v", stats)
			}
		})
	}
}

// TestRowsSpoolCannotStore: a bad row is skipped or carried in part, with its reason; the rest
// of the home imports.
func TestRowsSpoolCannotStore(t *testing.T) {
	t.Parallel()
	home := copyHome(t)
	exec(t, rawDB(t, filepath.Join(home, "state.db")),
		"UPDATE messages SET role = 'narrator' WHERE id = 47",
		"UPDATE messages SET tool_calls = '{not json' WHERE id = 35",
		"UPDATE messages SET codex_reasoning_items = '[{\"id\":\"rs_1\"}]' WHERE id = 39",
		"UPDATE sessions SET title = '"+strings.Repeat("t", 150)+"' WHERE id = '20260401_093000_fxc001'",
		"INSERT INTO sessions (id, source, started_at) VALUES ('bad/../id', 'cli', 1775000000.0)",
	)
	if err := os.WriteFile(filepath.Join(home, "sessions", "20260101_000000_meta01.jsonl"),
		[]byte(`{"role":"session_meta","tools":[]}`+"\n"+`{"role":"user","content":[{"type":"text","text":"part one"},{"type":"text","text":"part two"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	rep, err := hermes.Import(bg, st, home, hermes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range rep.Skipped {
		got[s.Kind+" "+s.ID] = s.Reason
	}
	for key, reason := range map[string]string{
		"message 20260403_090000_fxe001#47":                   `role "narrator"`,
		"tool_calls 20260401_093000_fxc001#35":                "not a JSON list",
		"field 20260401_093000_fxc001#39":                     "codex_reasoning_items",
		"field 20260401_093000_fxc001":                        "without its title",
		"session bad/../id":                                   "path separator",
		"jsonl_line sessions/20260101_000000_meta01.jsonl:1":  `role "session_meta"`,
		"jsonl_line sessions/20260301_070000_fxf001.jsonl:17": "corrupt line",
	} {
		if !strings.Contains(got[key], reason) {
			t.Errorf("skipped[%s] = %q, want it to mention %q (all: %v)", key, got[key], reason, got)
		}
	}
	if len(got) != 7 {
		t.Errorf("skipped %d things, want 7: %v", len(got), got)
	}
	if rep.Sessions != 9 {
		t.Errorf("imported %d sessions, want the 8 and the JSONL-only one", rep.Sessions)
	}
	if c, _ := st.GetSession(bg, "20260401_093000_fxc001"); c.Title != "" || c.Relation != store.RelationBranch {
		t.Errorf("session with a too long title = %+v", c)
	}
	ms, _ := st.Conversation(bg, "20260101_000000_meta01", store.ViewAll)
	if len(ms) != 1 || ms[0].Content != "part one\npart two" {
		t.Errorf("multipart content = %+v", ms)
	}
	if _, err := st.GetSession(bg, "bad/../id"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unsafe id was stored: %v", err)
	}
}

// TestClosedWALDatabase: a WAL-mode state.db that nobody has open is read without leaving -wal or
// -shm files in the home.
func TestClosedWALDatabase(t *testing.T) {
	t.Parallel()
	home := copyHome(t)
	db := rawDB(t, filepath.Join(home, "state.db"))
	exec(t, db, "PRAGMA journal_mode = WAL")
	db.Close()
	before := snapshot(t, home)
	if _, ok := before["state.db-wal"]; ok {
		t.Fatal("the WAL outlived its last connection")
	}
	rep, err := hermes.Import(bg, openStore(t), home, hermes.Options{})
	if err != nil || rep.Sessions != 8 {
		t.Fatalf("import: %+v %v", rep, err)
	}
	sameFiles(t, before, snapshot(t, home))
}

// racingStore is a real store where another writer creates the first session of the first
// batch after the importer checked it was absent and before the batch's transaction.
type racingStore struct {
	*sqlite.DB
	stolen string
}

var errRecorded = errors.New("recorded")

func (r *racingStore) ImportBundle(ctx context.Context, fill func(put store.PutSession) error) error {
	if r.stolen == "" {
		err := fill(func(s store.Session, _ string, _ []store.Message) error {
			r.stolen = s.ID
			return errRecorded
		})
		if !errors.Is(err, errRecorded) {
			return err
		}
		if _, err := r.DB.CreateSession(ctx, store.NewSession{ID: r.stolen, Source: "cli"}); err != nil {
			return err
		}
	}
	return r.DB.ImportBundle(ctx, fill)
}

// TestBatchRefusedSession: a session that appears in the store between the check and the
// batch's transaction is reported as already there, and the rest of its batch still imports.
func TestBatchRefusedSession(t *testing.T) {
	t.Parallel()
	home := copyHome(t)
	base, err := hermes.Import(bg, openStore(t), home, hermes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := &racingStore{DB: openStore(t)}
	rep, err := hermes.Import(bg, st, home, hermes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.stolen == "" || rep.Sessions != base.Sessions-1 {
		t.Fatalf("stolen %q: imported %d sessions, want %d", st.stolen, rep.Sessions, base.Sessions-1)
	}
	found := false
	for _, s := range rep.Skipped {
		found = found || (s.Kind == "session" && s.ID == st.stolen && s.Reason == "already in the store")
	}
	if !found {
		t.Errorf("skips %+v lack %s", rep.Skipped, st.stolen)
	}
	stats, _ := st.Stats(bg)
	if stats.Sessions != base.Sessions {
		t.Errorf("store holds %d sessions, want %d", stats.Sessions, base.Sessions)
	}
}
