package postgres

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

// The word index is a tsvector the writer builds in Go: the same tokens, in the same places, as
// SQLite's unicode61 index holds for the row (content, tool name, tool-call JSON), so a sanitized
// query finds the same rows on both backends. PostgreSQL's own parser would split paths, hosts,
// e-mail addresses and hyphenated words differently.

// PostgreSQL's limits: positions 1..16383, at most 256 positions per lexeme, lexemes under 2 KiB,
// a tsvector under 1 MiB (tsvSoftLimit leaves room for the positions).
const (
	maxPos       = 16383
	maxPositions = 255
	maxLexeme    = 2046
	tsvSoftLimit = 512 << 10
)

// buildTSV renders the tsvector literal of a row. Columns are separated by a gap of one
// position, so a phrase never matches across two of them.
func buildTSV(role, content, toolName, toolCalls string) string {
	type lex struct {
		pos []int
	}
	lexemes := map[string]*lex{}
	var order []string
	size := 0
	pos := 0
	add := func(text string) {
		for _, tok := range tokens(text) {
			pos++
			if len(tok) > maxLexeme {
				continue
			}
			l := lexemes[tok]
			if l == nil {
				if size > tsvSoftLimit {
					continue
				}
				l = &lex{}
				lexemes[tok] = l
				order = append(order, tok)
				size += len(tok) + 4
			}
			p := min(pos, maxPos)
			if len(l.pos) < maxPositions && (len(l.pos) == 0 || l.pos[len(l.pos)-1] != p) {
				l.pos = append(l.pos, p)
				size += 6
			}
		}
		pos++ // the gap between columns
	}
	add(fts.IndexedText(role, content))
	add(toolName)
	add(toolCalls)
	var b strings.Builder
	b.Grow(size)
	for i, tok := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		writeLexeme(&b, tok)
		for j, p := range lexemes[tok].pos {
			if j == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(p))
		}
	}
	return b.String()
}

func writeLexeme(b *strings.Builder, tok string) {
	b.WriteByte('\'')
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; c {
		case '\'':
			b.WriteString("''")
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
}

// buildTSQuery translates a sanitized FTS5 MATCH expression (fts.SanitizeQuery's output:
// barewords, "phrases", a trailing * for a prefix, AND, OR, NOT) into tsquery text with the same
// meaning. FTS5 binds adjacent terms (implicit AND) tighter than any operator, then NOT, AND, OR;
// each run of adjacent terms becomes one parenthesized group, and NOT becomes "& !", which
// tsquery's precedence (! over & over |) then reads as FTS5 does. "" means nothing to search.
func buildTSQuery(match string) string {
	var out []string
	var run []string
	op := ""
	flush := func() {
		if len(run) == 0 {
			return
		}
		if len(out) > 0 {
			out = append(out, cmpOr(op, "&"))
		}
		out = append(out, "("+strings.Join(run, " & ")+")")
		run, op = nil, ""
	}
	for rest := strings.TrimSpace(match); rest != ""; rest = strings.TrimSpace(rest) {
		var text string
		var prefix bool
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			text = rest[1 : end+1]
			rest = rest[min(end+2, len(rest)):]
			prefix = strings.HasPrefix(rest, "*")
			rest = strings.TrimLeft(rest, "*")
		} else {
			word, tail, _ := strings.Cut(rest, " ")
			rest = tail
			switch word {
			case "AND", "OR", "NOT":
				flush()
				if len(out) > 0 {
					op = map[string]string{"AND": "&", "OR": "|", "NOT": "& !"}[word]
				}
				continue
			}
			text, prefix = strings.TrimRight(word, "*"), strings.HasSuffix(word, "*")
		}
		if phrase := renderPhrase(text, prefix); phrase != "" {
			run = append(run, phrase)
		}
	}
	flush()
	return strings.Join(out, " ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// renderPhrase is one term or phrase: its tokens in sequence, the last one a prefix when asked.
func renderPhrase(text string, prefix bool) string {
	var toks []string
	for _, t := range tokens(text) {
		if len(t) <= maxLexeme {
			toks = append(toks, t)
		}
	}
	if len(toks) == 0 {
		return ""
	}
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteString(" <-> ")
		}
		writeLexeme(&b, t)
		if prefix && i == len(toks)-1 {
			b.WriteString(":*")
		}
	}
	if len(toks) == 1 {
		return b.String()
	}
	return "(" + b.String() + ")"
}

// cjkText is what the substring index holds for a row: its indexed text when it contains CJK.
func cjkText(role, content string) *string {
	if !fts.HasCJK(content) {
		return nil
	}
	s := fts.IndexedText(role, content)
	return &s
}

// rowIndex computes a message's index columns.
// Tool calls (calls, the stored JSON) are indexed as SQLite indexes them: names and argument
// values, not the JSON envelope.
func rowIndex(m store.Message, calls *string) (tsv string, cjk *string) {
	c := ""
	if calls != nil {
		if tcs, err := store.DecodeToolCalls(*calls); err == nil {
			c = fts.CallsText(tcs)
		}
	}
	return buildTSV(m.Role, m.Content, m.ToolName, c), cjkText(m.Role, m.Content)
}

// tokens splits text as the SQLite index does: fts.Tokens, then unicode61's default
// remove_diacritics=1, which folds a Latin letter carrying one diacritic to its base letter
// ("Ş" and "s" are one token; "ß" stays itself).
func tokens(text string) []string {
	toks := fts.Tokens(text)
	for i, t := range toks {
		toks[i] = foldDiacritics(t)
	}
	return toks
}

func foldDiacritics(tok string) string {
	ascii := true
	for i := 0; i < len(tok); i++ {
		if tok[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return tok
	}
	var b strings.Builder
	for _, r := range tok {
		if (0xC0 <= r && r <= 0x24F) || (0x1E00 <= r && r <= 0x1EFF) {
			d := []rune(norm.NFD.String(string(r)))
			if len(d) == 2 && d[0] < 0x250 {
				r = d[0]
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}
