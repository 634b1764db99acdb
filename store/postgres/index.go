package postgres

import (
	"bytes"
	"cmp"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"

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

// tsVector is a row's word index as PostgreSQL stores it: the distinct lexemes in its order
// (bytewise, shorter first on a tie: Go's string order), each with its positions, increasing
// (weight D). It travels in tsvector's binary format, which the server takes as it is: parsing
// the text literal (tsvectorin: unquoting, sorting, merging) was 7% of an append's server time.
// Where pgx sends parameters as text (the exec and simple-protocol modes) it goes as the literal.
type tsVector struct {
	entries []tsEntry
}

type tsEntry struct {
	lexeme string
	pos    []uint16
}

// weightC marks a position (tsvector's binary form: the weight in the top two bits) as a stem's:
// a row's words are lexemes of weight D, and the English stems of its content and tool-call
// words that differ from the words (fts.Stem) are lexemes of weight C at the word's position,
// as SQLite's word index holds them in its stems column. A query's phrases, identifiers and
// prefixes match weight D only; its bare words match the word (D) or its stem (any weight).
const weightC = 1 << 14

// posOf is a position without its weight.
func posOf(p uint16) uint16 { return p & 0x3fff }

// occurrence is one lexeme at one position (with its weight bits).
type occurrence struct {
	tok string
	pos uint16
}

// rowOccurrences lists the lexemes of a row at their positions: the words of content, tool name
// and tool calls, each column followed by a gap of one position so a phrase never matches across
// two of them, and the stems of the content's and the calls' words. The column texts are
// IndexedText's and CallsText's.
func rowOccurrences(role, content, toolName, toolCalls string, each func(occurrence)) {
	pos := 0
	for col, text := range [3]string{fts.IndexedText(role, content), toolName, toolCalls} {
		raw := fts.Tokens(text)
		for _, r := range raw {
			pos++
			tok := foldDiacritics(r)
			if len(tok) > maxLexeme {
				continue
			}
			p := uint16(min(pos, maxPos))
			each(occurrence{tok, p})
			if col == 1 {
				continue // tool names are not stemmed (fts.RowStems)
			}
			if st := fts.Stem(r); st != "" {
				each(occurrence{st, p | weightC})
			}
		}
		pos++ // the gap between columns
	}
}

// buildTSV computes the word index of a row (rowOccurrences).
func buildTSV(role, content, toolName, toolCalls string) tsVector {
	var occ []occurrence
	bound := 0
	rowOccurrences(role, content, toolName, toolCalls, func(o occurrence) {
		occ = append(occ, o)
		bound += len(o.tok) + 4 + 6
	})
	if bound > tsvSoftLimit {
		// Near PostgreSQL's size limit: lexemes that first occur late may be left out.
		return buildTSVBounded(role, content, toolName, toolCalls)
	}
	slices.SortFunc(occ, func(a, b occurrence) int {
		if c := strings.Compare(a.tok, b.tok); c != 0 {
			return c
		}
		return cmp.Compare(posOf(a.pos), posOf(b.pos))
	})
	v := tsVector{entries: make([]tsEntry, 0, len(occ))}
	all := make([]uint16, 0, len(occ))
	for i := 0; i < len(occ); {
		first := len(all)
		j := i
		for ; j < len(occ) && occ[j].tok == occ[i].tok; j++ {
			// At most maxPositions distinct positions, the first ones (positions past maxPos
			// all read maxPos).
			if n := len(all) - first; n < maxPositions && (n == 0 || posOf(all[len(all)-1]) != posOf(occ[j].pos)) {
				all = append(all, occ[j].pos)
			}
		}
		v.entries = append(v.entries, tsEntry{lexeme: occ[i].tok, pos: all[first:len(all):len(all)]})
		i = j
	}
	return v
}

// buildTSVBounded is buildTSV for a row whose index could pass tsvSoftLimit: a lexeme that
// first occurs once the index holds tsvSoftLimit bytes is left out.
func buildTSVBounded(role, content, toolName, toolCalls string) tsVector {
	index := map[string]int{}
	var v tsVector
	size := 0
	rowOccurrences(role, content, toolName, toolCalls, func(o occurrence) {
		i, ok := index[o.tok]
		if !ok {
			if size > tsvSoftLimit {
				return
			}
			i = len(v.entries)
			index[o.tok] = i
			v.entries = append(v.entries, tsEntry{lexeme: o.tok})
			size += len(o.tok) + 4
		}
		e := &v.entries[i]
		if len(e.pos) < maxPositions && (len(e.pos) == 0 || posOf(e.pos[len(e.pos)-1]) != posOf(o.pos)) {
			e.pos = append(e.pos, o.pos)
			size += 6
		}
	})
	slices.SortFunc(v.entries, func(a, b tsEntry) int { return strings.Compare(a.lexeme, b.lexeme) })
	return v
}

// literal renders v as tsvector text.
func (v tsVector) literal() string {
	var b strings.Builder
	for i, e := range v.entries {
		if i > 0 {
			b.WriteByte(' ')
		}
		writeLexeme(&b, e.lexeme)
		for j, p := range e.pos {
			if j == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(posOf(p))))
			if p&weightC != 0 {
				b.WriteByte('C')
			}
		}
	}
	return b.String()
}

// appendBinary appends v in tsvector's binary format (tsvectorsend's): the number of lexemes,
// then each lexeme NUL-terminated, its number of positions and the positions (weight D, 0).
// Tokens hold only letters, digits and marks, never a NUL.
func (v tsVector) appendBinary(buf []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(v.entries)))
	for _, e := range v.entries {
		buf = append(buf, e.lexeme...)
		buf = append(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(e.pos)))
		for _, p := range e.pos {
			buf = binary.BigEndian.AppendUint16(buf, p)
		}
	}
	return buf
}

// TextValue makes v a pgtype.TextValuer: the literal, for the modes that send text.
func (v tsVector) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: v.literal(), Valid: true}, nil
}

// tsvectorOID is the built-in tsvector type's OID.
const tsvectorOID = 3614

// registerTSVector teaches a connection tsvector's binary format (Options.AfterConnect).
func registerTSVector(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "tsvector", OID: tsvectorOID, Codec: tsvCodec{}})
}

// tsvCodec encodes a tsVector in binary or text and reads a tsvector into a string (its text
// form, as the server prints it, from either format).
type tsvCodec struct{}

func (tsvCodec) FormatSupported(format int16) bool {
	return format == pgtype.TextFormatCode || format == pgtype.BinaryFormatCode
}

func (tsvCodec) PreferredFormat() int16 { return pgtype.BinaryFormatCode }

func (tsvCodec) PlanEncode(_ *pgtype.Map, _ uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(tsVector); !ok {
		return nil
	}
	if format == pgtype.BinaryFormatCode {
		return tsvEncodeBinary{}
	}
	return tsvEncodeText{}
}

type tsvEncodeBinary struct{}

func (tsvEncodeBinary) Encode(value any, buf []byte) ([]byte, error) {
	return value.(tsVector).appendBinary(buf), nil
}

type tsvEncodeText struct{}

func (tsvEncodeText) Encode(value any, buf []byte) ([]byte, error) {
	return append(buf, value.(tsVector).literal()...), nil
}

func (tsvCodec) PlanScan(_ *pgtype.Map, _ uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*string); !ok {
		return nil
	}
	return tsvScanString{format: format}
}

type tsvScanString struct{ format int16 }

func (p tsvScanString) Scan(src []byte, target any) error {
	if src == nil {
		return errors.New("cannot scan NULL tsvector into *string")
	}
	s, err := tsvText(p.format, src)
	if err != nil {
		return err
	}
	*target.(*string) = s
	return nil
}

func (tsvCodec) DecodeDatabaseSQLValue(_ *pgtype.Map, _ uint32, format int16, src []byte) (driver.Value, error) {
	if src == nil {
		return nil, nil
	}
	return tsvText(format, src)
}

func (tsvCodec) DecodeValue(_ *pgtype.Map, _ uint32, format int16, src []byte) (any, error) {
	if src == nil {
		return nil, nil
	}
	return tsvText(format, src)
}

// tsvText is a tsvector's text form: src itself in text, the server's rendering of it in binary.
func tsvText(format int16, src []byte) (string, error) {
	if format == pgtype.TextFormatCode {
		return string(src), nil
	}
	bad := errors.New("invalid binary tsvector")
	if len(src) < 4 {
		return "", bad
	}
	n := int(binary.BigEndian.Uint32(src))
	src = src[4:]
	var b strings.Builder
	for i := range n {
		end := bytes.IndexByte(src, 0)
		if end < 0 || len(src) < end+3 {
			return "", bad
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		writeLexeme(&b, string(src[:end]))
		npos := int(binary.BigEndian.Uint16(src[end+1:]))
		src = src[end+3:]
		if len(src) < 2*npos {
			return "", bad
		}
		for j := range npos {
			wp := binary.BigEndian.Uint16(src[2*j:])
			if j == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(wp & 0x3fff)))
			if w := wp >> 14; w > 0 {
				b.WriteByte("DCBA"[w])
			}
		}
		src = src[2*npos:]
	}
	return b.String(), nil
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
func buildTSQuery(match string) string { return renderTSQuery(match, renderTerm) }

// rankTSQuery is a unit's tsquery as rankedUnits scores it: buildTSQuery's, except that a bare
// word is its stem alone (the word as asked is not counted again, so the other units' rarity
// weighs more than the form a word was asked in; SQLite's ftsExpr reads units the same way).
func rankTSQuery(unit string) string {
	return renderTSQuery(unit, func(t fts.Term) string {
		if raw := fts.Tokens(t.Text); !t.Exact() && len(raw) == 1 {
			if st := fts.Stem(raw[0]); st != "" {
				var b strings.Builder
				writeLexeme(&b, st)
				return b.String()
			}
		}
		return renderTerm(t)
	})
}

// renderTSQuery is buildTSQuery with render for the operands.
func renderTSQuery(match string, render func(fts.Term) string) string {
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
	fts.WalkMatch(match, func(t fts.Term) {
		if q := render(t); q != "" {
			run = append(run, q)
		}
	}, func(o string) {
		flush()
		if len(out) > 0 {
			op = tsOperators[o]
		}
	})
	flush()
	return strings.Join(out, " ")
}

// tsOperators are FTS5's operators in tsquery.
var tsOperators = map[string]string{"AND": "&", "OR": "|", "NOT": "& !"}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// renderTerm is one operand: a bare word as its stem (fts.StemOf) at any weight, written (D)
// or a stem of another form (C), so word forms meet as on SQLite, or'd with the word as written;
// a phrase, identifier or prefix as its words in sequence, weight D (never a stem), the last one
// a prefix when asked.
func renderTerm(t fts.Term) string {
	raw := fts.Tokens(t.Text)
	if !t.Exact() && len(raw) == 1 {
		tok := foldDiacritics(raw[0])
		if len(tok) > maxLexeme {
			return ""
		}
		var b strings.Builder
		if st := fts.Stem(raw[0]); st != "" {
			// The stem finds every form; the form as asked counts again, so it ranks above
			// the other forms of the word (as on SQLite).
			b.WriteString("(")
			writeLexeme(&b, st)
			b.WriteString(" | ")
			writeLexeme(&b, tok)
			b.WriteString(":D)")
			return b.String()
		}
		writeLexeme(&b, tok)
		return b.String()
	}
	var toks []string
	for _, r := range raw {
		if t := foldDiacritics(r); len(t) <= maxLexeme {
			toks = append(toks, t)
		}
	}
	if len(toks) == 0 {
		return ""
	}
	var b strings.Builder
	for i, tok := range toks {
		if i > 0 {
			b.WriteString(" <-> ")
		}
		writeLexeme(&b, tok)
		if t.Prefix && i == len(toks)-1 {
			b.WriteString(":*D")
		} else {
			b.WriteString(":D")
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
func rowIndex(m store.Message, calls *string) (tsv tsVector, cjk *string) {
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
