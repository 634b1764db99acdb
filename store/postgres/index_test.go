package postgres

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// literalTSV is the word index as a text literal (lexemes in first-occurrence order, the way
// the writer rendered it before it went in binary): the words of each column (weight D) and the
// stems of the content's and the calls' words that differ from them (weight C, at the word's
// position). Rows already stored were indexed so, and `spool db check` compares them with what
// the writer computes now.
func literalTSV(role, content, toolName, toolCalls string) string {
	type lex struct {
		pos  []int
		stem []bool
	}
	lexemes := map[string]*lex{}
	var order []string
	size, pos := 0, 0
	put := func(tok string, p int, stem bool) {
		l := lexemes[tok]
		if l == nil {
			if size > tsvSoftLimit {
				return
			}
			l = &lex{}
			lexemes[tok] = l
			order = append(order, tok)
			size += len(tok) + 4
		}
		if len(l.pos) < maxPositions && (len(l.pos) == 0 || l.pos[len(l.pos)-1] != p) {
			l.pos, l.stem = append(l.pos, p), append(l.stem, stem)
			size += 6
		}
	}
	add := func(text string, stems bool) {
		raw := fts.Tokens(text)
		for i, tok := range tokens(text) {
			pos++
			if len(tok) > maxLexeme {
				continue
			}
			p := min(pos, maxPos)
			put(tok, p, false)
			if st := fts.Stem(raw[i]); stems && st != "" {
				put(st, p, true)
			}
		}
		pos++
	}
	add(fts.IndexedText(role, content), true)
	add(toolName, false)
	add(toolCalls, true)
	var b strings.Builder
	for i, tok := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		writeLexeme(&b, tok)
		l := lexemes[tok]
		for j, p := range l.pos {
			b.WriteString(map[bool]string{true: ":", false: ","}[j == 0])
			b.WriteString(strconv.Itoa(p))
			if l.stem[j] {
				b.WriteByte('C')
			}
		}
	}
	return b.String()
}

// TestTSVectorSameAsLiteral: the word index a row gets in tsvector's binary format (and, in the
// exec modes that send text, as the literal) is the tsvector the text literal of the writer
// before it gave, for 400 random rows and for the edges: no words, a word repeated past
// 255 positions, positions past 16,383, lexemes at and over the length limit, diacritics, CJK,
// tool rows past the indexed prefix, tool calls, and a row big enough to hit the size bound.
// It also reads a tsvector back into a string in the binary format and compares it with the
// server's own text.
func TestTSVectorSameAsLiteral(t *testing.T) {
	t.Parallel()
	msgs := randomRows(400)
	var distinct strings.Builder
	for i := range 60000 {
		fmt.Fprintf(&distinct, "w%07d ", i)
	}
	edge := []store.Message{
		{Role: store.RoleUser, Content: ""},
		{Role: store.RoleUser, Content: "... --- !!!"},
		{Role: store.RoleUser, Content: strings.Repeat("again ", 300) + "end"},
		{Role: store.RoleUser, Content: strings.Repeat("x ", 17000) + "late late"},
		{Role: store.RoleUser, Content: strings.Repeat("a", maxLexeme) + " " + strings.Repeat("b", maxLexeme+1) + " ab a b"},
		{Role: store.RoleUser, Content: "Çа́ va très bien, Straße ŞEKER naïve ǅemal ø Ångström"},
		{Role: store.RoleUser, Content: "会话数据库 検索できる 한국어 text 123 ４５６"},
		{Role: store.RoleTool, ToolName: "read_file", ToolCallID: "call_1", Content: strings.Repeat("tool output ", 1000) + "beyond"},
		{Role: store.RoleAssistant, Content: "calling", ToolCalls: []store.ToolCall{
			{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "grep_files", Arguments: `{"pattern": "it's \\ a path/to/x.go"}`}}}},
		{Role: store.RoleUser, Content: distinct.String()},
	}
	base := pgtest.NewDatabase(t)
	for _, mode := range []string{"cache_statement", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			db, err := Open(bg, base+"&default_query_exec_mode="+mode, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			bounded := 0
			for i, m := range append(slices.Clone(edge), msgs...) {
				enc, _, err := encodeMessages([]store.Message{m})
				if err != nil {
					t.Fatal(err)
				}
				e := enc[0]
				calls := ""
				if e.calls != nil {
					tcs, err := store.DecodeToolCalls(*e.calls)
					if err != nil {
						t.Fatal(err)
					}
					calls = fts.CallsText(tcs)
				}
				lit := literalTSV(e.m.Role, e.m.Content, e.m.ToolName, calls)
				for k := 1; k < len(e.tsv.entries); k++ {
					if e.tsv.entries[k-1].lexeme >= e.tsv.entries[k].lexeme {
						t.Fatalf("row %d: lexemes %q, %q not strictly in PostgreSQL's order", i, e.tsv.entries[k-1].lexeme, e.tsv.entries[k].lexeme)
					}
				}
				if strings.HasPrefix(e.m.Content, "w0000000 ") && len(e.tsv.entries) < 60000 {
					bounded++
				}
				var got, want, back, viaLiteral string
				if err := db.pool.QueryRow(bg, "SELECT $1::tsvector::text, $2::text::tsvector::text, $3::tsvector, $4::text::tsvector::text",
					e.tsv, lit, e.tsv, e.tsv.literal()).Scan(&got, &want, &back, &viaLiteral); err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
				if got != want || viaLiteral != want {
					t.Fatalf("row %d (%.60q): index %.200q, literal method %.200q, the writer before gave %.200q", i, e.m.Content, got, viaLiteral, want)
				}
				if back != want {
					t.Fatalf("row %d: read back as %.200q, the server prints %.200q", i, back, want)
				}
			}
			if bounded == 0 {
				t.Fatal("no row reached the size bound")
			}
		})
	}
}

// randomRows are messages of every role made of words, paths, hashes, identifiers, CJK and
// accented text, in random mixes and lengths, some with tool calls.
func randomRows(n int) []store.Message {
	r := rand.New(rand.NewPCG(20261201, 7))
	pieces := []string{"session", "Session", "SESSION", "deploy", "the", "a", "src/main.go:42", "my-app.config.ts",
		"P2.2", "chat-send", "`parseArgs`", "3f9a0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b", "会话数据", "検索", "naïve", "Ähnlich",
		"it's", `back\\slash`, "foo(bar)", "{x}", "NEAR(a b)", "x_y_z", "ünïcödé", "١٢٣", "ﬁle", "İstanbul", "ǅ", "\u00e9t\u00e9"}
	roles := []string{store.RoleUser, store.RoleAssistant, store.RoleTool}
	out := make([]store.Message, n)
	for i := range out {
		var b strings.Builder
		for range r.IntN(300) {
			b.WriteString(pieces[r.IntN(len(pieces))])
			b.WriteString([]string{" ", " ", ", ", ". ", "\n", "/", "-"}[r.IntN(7)])
		}
		m := store.Message{Role: roles[i%3], Content: b.String()}
		switch m.Role {
		case store.RoleTool:
			m.ToolName, m.ToolCallID = "read_file", fmt.Sprint("call_", i)
		case store.RoleAssistant:
			if r.IntN(2) == 0 {
				m.ToolCalls = []store.ToolCall{{ID: fmt.Sprint("call_", i), Type: "function", Function: store.ToolFunction{
					Name: "search_files", Arguments: fmt.Sprintf(`{"pattern": %q}`, pieces[r.IntN(len(pieces))])}}}
			}
		}
		out[i] = m
	}
	return out
}
