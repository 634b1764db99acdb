package fts

import (
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	_ "modernc.org/sqlite"
)

// ftsTestRows are indexed by every engine check: some queries must find one of them, and a
// non-empty table makes FTS5 evaluate the query, not only parse it.
var ftsTestRows = []string{
	1:  "see issue #123 for details",
	2:  "open src/main.py and read it",
	3:  "I don't know yet",
	4:  "coverage went up 50% this week",
	5:  "mail alice@example.com about the release",
	6:  "is it ok? tell me",
	7:  "the fee is $5 per month",
	8:  "columns a,b and c",
	9:  "run chat-send then my-app.config.ts loads sp_new from P2.2",
	10: "TODO: fix the exact phrase parser, issue in main",
	11: "deploy deployment deployed 会话数据库 検索できる 한국어",
}

// openFTS opens a real SQLite file with an FTS5 table holding ftsTestRows.
func openFTS(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", filepath.Join(tb.TempDir(), "fts.db"))
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(content)`); err != nil {
		tb.Fatalf("create fts5 table: %v", err)
	}
	for id, content := range ftsTestRows {
		if content == "" {
			continue
		}
		if _, err := db.Exec(`INSERT INTO t(rowid, content) VALUES (?, ?)`, id, content); err != nil {
			tb.Fatalf("insert row %d: %v", id, err)
		}
	}
	for id := len(ftsTestRows); id < 40; id++ { // filler so the index has several terms
		if _, err := db.Exec(`INSERT INTO t(rowid, content) VALUES (?, ?)`, id, "filler text number "+strings.Repeat("x", id%7)); err != nil {
			tb.Fatalf("insert filler %d: %v", id, err)
		}
	}
	return db
}

// match runs q as a MATCH expression and returns the matching rowids. Any error, a syntax error
// or otherwise, is returned: a sanitised query must run cleanly.
func match(db *sql.DB, q string) ([]int64, error) {
	rows, err := db.Query(`SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid`, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// sanitizeCases holds Hermes Agent's sanitiser cases first, then the cases where spool goes further.
var sanitizeCases = []struct {
	name, in, want string
}{
	// Reference table. Internal spacing differs from the reference where it allows it:
	// terms are always joined by one space.
	{"plain word", "issue", "issue"},
	{"explicit AND kept", "issue AND main", "issue AND main"},
	{"trailing AND dropped", "hello AND", "hello"},
	{"leading OR dropped", "OR hello", "hello"},
	{"hyphenated quoted", "chat-send", `"chat-send"`},
	{"hyphenated prefix", "chat-send*", `"chat-send"*`},
	{"dotted once", "my-app.config.ts", `"my-app.config.ts"`},
	{"underscore quoted", "sp_new", `"sp_new"`},
	{"version quoted", "P2.2", `"P2.2"`},
	{"hash dropped", "#123", "123"},
	{"slash separates", "src/main.py", `src "main.py"`},
	{"at separates", "alice@example.com", `alice "example.com"`},
	{"percent without CJK", "50%", "50"},
	{"colon is no column filter", "TODO: fix", "TODO fix"},            // reference: "TODO  fix"
	{"balanced phrase", `"exact phrase" more`, `"exact phrase" more`}, //
	{"unbalanced quote", `say "unbalanced`, "say unbalanced"},         // reference: "say  unbalanced"
	{"stars collapse", "**deploy**", "deploy*"},
	{"punctuation-only token", "issue --- main", "issue main"},

	// Beyond the reference.
	{"empty", "", ""},
	{"spaces", " \t\n ", ""},
	{"doubled operator", "a AND AND b", "a AND b"},
	{"operator run keeps last", "a AND NOT b", "a NOT b"},
	{"NOT alone", "NOT", ""},
	{"trailing OR", "a OR", "a"},
	{"operators only", "AND OR NOT AND", ""},
	{"lower-case operator inside is a word", "salt and pepper", "salt and pepper"},
	{"lower-case operator at the end", "hello and", "hello"},
	{"operator in parens is an operator", "a (OR) b", "a OR b"},
	{"operator glued to punctuation is a word", "a -AND- b", `a "AND" b`},
	{"operator with star is a word", "AND*", `"AND"*`},
	{"NEAR group", "NEAR(a b)", "a b"},
	{"NEAR with distance", "NEAR(a b, 3)", "a b"},
	{"NEAR keeps a number phrase", "NEAR(a 3)", "a 3"},
	{"NEAR without group is a word", "NEAR far", "NEAR far"},
	{"near in lower case is a word", "near(a)", "near a"},
	{"dash prefix", "-foo", "foo"},
	{"column filter dash", "hello -world", "hello world"},
	{"lone star", "*", ""},
	{"stars only", "***", ""},
	{"star after space", "foo *", "foo"},
	{"star inside", "a*b", "a* b"},
	{"star after joiner", "foo-*", "foo*"},
	{"c plus plus", "c++", "c"},
	{"call syntax", "foo(bar)", "foo bar"},
	{"braces", "{x}", "x"},
	{"lone quote", `"`, ""},
	{"empty phrase", `""`, ""},
	{"empty phrase among words", `a "" b`, "a b"},
	{"punctuation phrase", `a "--" b`, "a b"},
	{"three quotes", `"a b" "c`, `"a b" c`},
	{"prefix phrase", `"foo bar"*`, `"foo bar"*`},
	{"phrase glued to words", `x"foo"y`, `x "foo" y`},
	{"phrase keeps specials", `"a:b (c)"`, `"a:b (c)"`},
	{"caret and plus", "^a + b", "a b"},
	{"backtick", "alpha`beta", "alpha beta"},
	{"trailing dot", "main.py.", `"main.py"`},
	{"double dot", "a..b", `"a..b"`},
	{"underscores only", "___", ""},
	{"dunder", "__init__", `"__init__"`},
	{"control characters", "a\x00b\x1ac", "a b c"},
	{"invalid UTF-8", "a\xffb", "a b"},
	{"emoji separates", "hello😀world", "hello world"},
	{"em dash separates", "a—b", "a b"},
	{"smart quotes separate", "“quoted”", "quoted"},
	{"accented", "café", "café"},
	{"combining mark stays", "cafe\u0301", "cafe\u0301"},
	{"mark alone dropped", "\u0301", ""},
	{"CJK word", "会话数据库", "会话数据库"},
	{"CJK punctuation separates", "会话。数据库", "会话 数据库"},
	{"percent kept with CJK", "50% 增长", `"50%" 增长`},
	{"percent alone with CJK", "% 增长", "增长"},
	{"fullwidth question mark", "ok？", "ok"},
}

func TestSanitizeFTSQuery(t *testing.T) {
	t.Parallel()
	db := openFTS(t)
	for _, tc := range sanitizeCases {
		got := sanitizeFTSQuery(tc.in)
		if got != tc.want {
			t.Errorf("%s: sanitizeFTSQuery(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
		if got == "" {
			continue
		}
		if _, err := match(db, got); err != nil {
			t.Errorf("%s: MATCH %q (from %q): %v", tc.name, got, tc.in, err)
		}
	}
}

// TestSanitizeFTSQueryPunctuation is the upstream behavioural requirement, widened to every
// printable ASCII punctuation character and to finding the row, not only running cleanly.
func TestSanitizeFTSQueryPunctuation(t *testing.T) {
	t.Parallel()
	db := openFTS(t)
	for c := rune('!'); c <= '~'; c++ {
		if isWordRune(c) {
			continue
		}
		content := "alpha" + string(c) + "beta"
		res, err := db.Exec(`INSERT INTO t(content) VALUES (?)`, content)
		if err != nil {
			t.Fatalf("insert %q: %v", content, err)
		}
		id, _ := res.LastInsertId()
		q := sanitizeFTSQuery(content)
		if q == "" {
			continue
		}
		ids, err := match(db, q)
		if err != nil {
			t.Errorf("alpha%cbeta: MATCH %q: %v", c, q, err)
			continue
		}
		if !slices.Contains(ids, id) {
			t.Errorf("alpha%cbeta: MATCH %q found %v, not row %d", c, q, ids, id)
		}
	}
}

// TestSanitizeFTSQueryFinds: these queries must find the message that contains them.
func TestSanitizeFTSQueryFinds(t *testing.T) {
	t.Parallel()
	db := openFTS(t)
	for _, tc := range []struct {
		q   string
		row int64
	}{
		{"#123", 1},
		{"src/main.py", 2},
		{"don't", 3},
		{"50%", 4},
		{"alice@example.com", 5},
		{"ok?", 6},
		{"$5", 7},
		{"a,b", 8},
		{"chat-send*", 9},
		{"my-app.config.ts", 9},
		{"sp_new", 9},
		{"P2.2", 9},
		{"TODO: fix", 10},
		{`"exact phrase" parser`, 10},
		{"issue --- main", 10},
		{"**deploy**", 11},
		{"NEAR(issue main)", 10},
	} {
		q := sanitizeFTSQuery(tc.q)
		ids, err := match(db, q)
		if err != nil {
			t.Errorf("%q: MATCH %q: %v", tc.q, q, err)
			continue
		}
		if !slices.Contains(ids, tc.row) {
			t.Errorf("%q: MATCH %q found rows %v, want row %d (%q)", tc.q, q, ids, tc.row, ftsTestRows[tc.row])
		}
	}
}

func TestSanitizeFTSQueryTruncates(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("会", maxFTSQueryRunes+10)
	if got := utf8.RuneCountInString(sanitizeFTSQuery(long)); got != maxFTSQueryRunes {
		t.Errorf("CJK input of %d runes kept %d, want %d", maxFTSQueryRunes+10, got, maxFTSQueryRunes)
	}
	// The cap counts runes, not bytes: the 2,048th rune survives, the 2,049th does not.
	in := strings.Repeat("é", maxFTSQueryRunes-1) + "x" + "y"
	got := sanitizeFTSQuery(in)
	if !strings.HasSuffix(got, "x") {
		t.Errorf("rune cap cut at the wrong place: ends %q", got[max(0, len(got)-8):])
	}
}

// TestSanitizeFTSQueryDeepNOT: each NOT deepens the FTS5 tree and FTS5 caps the depth at 256,
// so a query of hundreds of NOTs must still run.
func TestSanitizeFTSQueryDeepNOT(t *testing.T) {
	t.Parallel()
	db := openFTS(t)
	q := sanitizeFTSQuery(strings.Repeat("a NOT ", 400) + "b")
	if n := strings.Count(q, "NOT"); n != maxFTSNots {
		t.Errorf("kept %d NOTs, want %d", n, maxFTSNots)
	}
	if _, err := match(db, q); err != nil {
		t.Errorf("MATCH of a deep NOT chain: %v", err)
	}
}

func TestHasCJK(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"", false},
		{"hello world", false},
		{"café ñ Ωμέγα", false},
		{"emoji 😀", false},
		{"ideographic\u3000space", false},
		{"会话", true},
		{"ひらがな", true},
		{"カタカナ", true},
		{"ｶﾀｶﾅ", true},
		{"한국어", true},
		{"x。", true},
		{"ok？", true},
		{"「x」", true},
		{"𠀀", true}, // CJK Extension B
	} {
		if got := hasCJK(tc.in); got != tc.want {
			t.Errorf("hasCJK(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzSanitizeFTSQuery checks, for any input, that the sanitiser does not panic, returns valid
// UTF-8 of bounded size, and returns "" or an expression the real FTS5 engine runs without error.
func FuzzSanitizeFTSQuery(f *testing.F) {
	for _, tc := range sanitizeCases {
		f.Add(tc.in)
	}
	for _, s := range []string{
		"c++", "foo(bar)", "{x}", "***", "NEAR(a b)", "NEAR(a b, 2)", `"`, `"""`, `"a`, `a"b"c"`,
		`say "it's" "`, "a AND", "OR", "AND AND", "a OR OR b", "NOT NOT a", "a NOT", "(a OR b) AND c",
		"a:b", "content: x", "-a", "- a", "a - b", "^a", "a + b", "{a b}: c", "*a", "a**", "a.*",
		"会话数据库", "会话 数据库 %", "検索でき", "한국어", "「会話」", "50%增长", "x\u3000y",
		"\x00", "\"\x00\"", "\xff\xfe", "\u200b", "\u0301a", "a\u0301", "\U0010FFFF", "\uE000",
		"`rm -rf /`", "e.g.", "...", "-- --", "__", "a_", "AND*", "NOT*a", "a-AND-b", "\"AND\"",
	} {
		f.Add(s)
	}
	db := openFTS(f)
	f.Fuzz(func(t *testing.T, in string) {
		out := sanitizeFTSQuery(in)
		if !utf8.ValidString(out) {
			t.Fatalf("sanitizeFTSQuery(%q) = %q: invalid UTF-8", in, out)
		}
		if n := utf8.RuneCountInString(out); n > 2*maxFTSQueryRunes+2 {
			t.Fatalf("sanitizeFTSQuery(%q) has %d runes, cap is %d", in, n, 2*maxFTSQueryRunes+2)
		}
		if len(out) > 2*len(in)+2 {
			t.Fatalf("sanitizeFTSQuery(%q) = %q: %d bytes from %d", in, out, len(out), len(in))
		}
		if out != strings.TrimSpace(out) {
			t.Fatalf("sanitizeFTSQuery(%q) = %q: surrounding space", in, out)
		}
		if out == "" {
			return
		}
		if strings.Contains(out, `""`) {
			t.Fatalf("sanitizeFTSQuery(%q) = %q: empty phrase", in, out)
		}
		if _, err := match(db, out); err != nil {
			t.Fatalf("sanitizeFTSQuery(%q) = %q: MATCH: %v", in, out, err)
		}
	})
}
