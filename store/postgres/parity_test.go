package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/sqlite"
)

var bg = context.Background()

func openFresh(t *testing.T) *DB {
	t.Helper()
	db, err := Open(bg, pgtest.NewDatabase(t), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSearchParityWithSQLite writes the same messages to both backends and runs the same
// queries: every query must find the same messages on PostgreSQL as on SQLite.
func TestSearchParityWithSQLite(t *testing.T) {
	t.Parallel()
	pg := openFresh(t)
	lite, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "parity.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	rows := []store.Message{
		{Role: store.RoleUser, Content: "see issue #123 for details"},
		{Role: store.RoleUser, Content: "open src/main.py and read it"},
		{Role: store.RoleAssistant, Content: "I don't know yet"},
		{Role: store.RoleUser, Content: "coverage went up 50% this week"},
		{Role: store.RoleUser, Content: "mail alice@example.com about the release"},
		{Role: store.RoleAssistant, Content: "is it ok? tell me"},
		{Role: store.RoleUser, Content: "the fee is $5 per month"},
		{Role: store.RoleAssistant, Content: "columns a,b and c"},
		{Role: store.RoleUser, Content: "run chat-send then my-app.config.ts loads sp_new from P2.2"},
		{Role: store.RoleAssistant, Content: "TODO: fix the exact phrase parser, issue in main"},
		{Role: store.RoleUser, Content: "deploy deployment deployed 会话数据库 検索できる 한국어"},
		{Role: store.RoleAssistant, Content: "the server is down, restart the server", ToolCalls: []store.ToolCall{
			{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"systemctl restart pg"}`}}}},
		{Role: store.RoleTool, ToolName: "terminal", ToolCallID: "c1", Content: strings.Repeat("noise ", 2000) + "tailword beyond the prefix"},
		{Role: store.RoleTool, ToolName: "read_file", ToolCallID: "c2", Content: "package main // Ünïcödé ŞTRASSE straße"},
		{Role: store.RoleUser, Content: "数据 in a mixed sentence, 请帮我检查会话数据库的索引"},
		{Role: store.RoleAssistant, Content: "alpha beta gamma; beta gamma delta; gamma only"},
		{Role: store.RoleUser, Content: "we tested the retries; testing retried twice and the tests passed"},
		{Role: store.RoleAssistant, Content: "Décidé: deployments are retried by the café's runner", ToolCalls: []store.ToolCall{
			{ID: "c3", Type: "function", Function: store.ToolFunction{Name: "run_tests", Arguments: `{"cmd":"go test ./migrations/..."}`}}}},
	}
	for _, st := range []store.Backend{pg, lite} {
		if _, err := st.CreateSession(bg, store.NewSession{ID: "p"}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendBatch(bg, "p", rows); err != nil {
			t.Fatal(err)
		}
	}
	queries := []string{"#123", "src/main.py", "don't", "50%", "alice@example.com", "ok?", "$5", "a,b",
		"chat-send*", "my-app.config.ts", "sp_new", "P2.2", "TODO: fix", `"exact phrase" parser`, "issue --- main",
		"**deploy**", "NEAR(issue main)", "deploy", "deploy*", `"server is down"`, `"down server"`, "server OR issue",
		"server NOT restart", "server NOT pg", "terminal", "systemctl", "tailword", "noise", "straße", "STRASSE",
		"ünïcödé", "beta gamma", `"beta gamma" delta`, "alpha OR delta NOT only", "gamma NOT alpha delta",
		"alpha AND beta OR delta", "gam*", `"gamma d"*`, "c1", "function", "会话数据库", "検索でき", "数据", "会话 索引",
		"不存在的词", `"会话数据库"`, "", "   ", `"`, "NOT", "a AND AND b", "OR OR", "x*y*z", "-alpha", "alpha.",
		"tested", "retry", "what did we decide about retries?", "which deployment was retried", "migration",
		"run_tests", "runners", "cafe", "décidé", `"tests passed"`, `"test passed"`, "test*", "tests AND retrying",
		"retrying NOT café", "passing OR servers", "the of and", "src/main.py read", "restarted servers",
	}
	contentsOf := func(st store.Backend, q string) []string {
		hits, err := st.Search(bg, store.SearchQuery{Text: q, Limit: 100, NoContext: true})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		ms, _ := st.Conversation(bg, "p", store.ViewAll)
		var out []string
		for _, h := range hits {
			for i, m := range ms {
				if m.ID == h.MessageID {
					out = append(out, fmt.Sprint(i))
				}
			}
		}
		slices.Sort(out)
		return out
	}
	for _, q := range queries {
		want, got := contentsOf(lite, q), contentsOf(pg, q)
		if !slices.Equal(want, got) {
			t.Errorf("search %q: PostgreSQL found rows %v, SQLite %v (tsquery %q)", q, got, want, buildTSQuery(fts.PlanQuery(q).Match))
		}
	}
}

// TestMigrateConcurrently: replicas opening one fresh database at once migrate it once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(bg, dsn, Options{Logger: slog.New(slog.DiscardHandler), MaxConns: 2})
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	db, err := Open(bg, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.pool.QueryRow(bg, "SELECT count(*) FROM spool_schema").Scan(&n); err != nil || n != SchemaVersion() {
		t.Fatalf("schema rows = %d (%v), want %d", n, err, SchemaVersion())
	}
	if problems, err := db.Check(bg); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	if _, err := db.pool.Exec(bg, "INSERT INTO spool_schema (version, name) VALUES (999, 'future')"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(bg, db.url, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this spool") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

// TestCheckFindsLocaleC: a database whose ctype drops CJK trigrams is reported by Check.
func TestCheckFindsLocaleC(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	db, err := Open(bg, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A message indexed with another build's tokens is found too.
	if _, err := db.CreateSession(bg, store.NewSession{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(bg, "c", store.Message{Role: store.RoleUser, Content: "hello world"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(bg, "UPDATE messages SET tsv = 'hello'::tsvector"); err != nil {
		t.Fatal(err)
	}
	problems, err := db.Check(bg)
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], "indexed differently") {
		t.Fatalf("check of a mis-indexed row: %v %v", problems, err)
	}
}

func TestBadURL(t *testing.T) {
	t.Parallel()
	_, err := Open(bg, "postgres://user:s3cret@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("open of an unreachable server: %v (the password must not appear)", err)
	}
	// sslmode=prefer (the default) makes pgx try twice, TLS then plain: the cause is said once.
	_, err = Open(bg, "postgres://user:s3cret@127.0.0.1:1/x?connect_timeout=2", Options{})
	if err == nil || strings.Count(err.Error(), "connection refused") != 1 || strings.Contains(err.Error(), "\n") {
		t.Fatalf("open of an unreachable server with two attempts: %q (want the cause once, one line)", err)
	}
}

// TestMigrationFiles needs no server: the embedded migrations number 1..n without gaps or
// duplicates (two helpers adding the same number breaks every Open).
func TestMigrationFiles(t *testing.T) {
	t.Parallel()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != SchemaVersion() || len(ms) == 0 {
		t.Fatalf("%d migrations, schema version %d", len(ms), SchemaVersion())
	}
}

// TestMigrationStemsExistingRows: a database whose rows were indexed before stems (words only)
// is upgraded in place: the migration indexes every row anew, so word forms meet on old rows.
func TestMigrationStemsExistingRows(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	db, err := Open(bg, dsn, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(bg, store.NewSession{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendBatch(bg, "old", []store.Message{{Role: store.RoleUser, Content: "upgrade the parser"}}); err != nil {
		t.Fatal(err)
	}
	// What the previous schema's writer stored: the words alone, and no record of schema 13.
	for _, q := range []string{"UPDATE messages SET tsv = ts_filter(tsv, '{d}')", "DELETE FROM spool_schema WHERE version >= 14"} {
		if _, err := db.pool.Exec(bg, q); err != nil {
			t.Fatal(err)
		}
	}
	if hits, err := db.Search(bg, store.SearchQuery{Text: "upgraded"}); err != nil || len(hits) != 0 {
		t.Fatalf("before the upgrade: %d hits (%v), want none (the stems are gone)", len(hits), err)
	}
	db.Close()
	db, err = Open(bg, dsn, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if hits, err := db.Search(bg, store.SearchQuery{Text: "upgraded parsers"}); err != nil || len(hits) != 1 {
		t.Fatalf("after the upgrade: %d hits (%v), want 1", len(hits), err)
	}
	if problems, err := db.Check(bg); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}
