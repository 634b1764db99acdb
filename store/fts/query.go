package fts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxFTSQueryRunes caps the query before sanitising: longer input is cut, not rejected, so a
// pasted log line still searches on its head.
const maxFTSQueryRunes = 2048

// maxFTSNots bounds the NOT operators kept in one query. Every NOT deepens the FTS5 expression
// tree by one level and FTS5 refuses trees deeper than 256 ("fts5 expression tree is too large"),
// so a query made of hundreds of NOTs would otherwise fail instead of searching. Extra NOTs are
// dropped, which turns them into the implicit AND.
const maxFTSNots = 128

// sanitizeFTSQuery turns free text typed by a person or a model into an FTS5 MATCH expression
// for the unicode61 tokenizer. The result is "" (nothing searchable: the caller returns no hits)
// or an expression FTS5 parses without error, whatever the input.
//
// It follows Hermes Agent's sanitiser and goes further where that one can still emit invalid
// syntax:
//   - balanced "..." phrases are kept verbatim (a trailing * makes them a prefix phrase); an
//     unmatched quote is a separator; a phrase with no letter or digit is dropped, so no empty
//     "" phrase is ever emitted;
//   - every ASCII character other than letters, digits, '_', '.', '-' and '*' separates terms
//     (the reference set plus the backtick, which FTS5 also rejects); '%' is kept only when the query contains CJK, for the
//     LIKE fallback, and then only inside a quoted term; non-ASCII symbols, punctuation and spaces
//     (emoji, dashes, smart quotes, CJK punctuation) separate terms too, as unicode61 does;
//   - '*' marks a prefix only right after a term: runs collapse, a leading '*' is dropped;
//   - a term made of words joined by '.', '-', '_' (or '%') is double-quoted in one pass, so
//     chat-send* becomes "chat-send"*; leading and trailing '.' and '-' are cut, which also turns
//     -foo into foo (a dash is far more often a flag or a hyphen than an exclusion);
//     punctuation-only tokens such as --- disappear;
//   - AND, OR and NOT (upper case, whole token) stay operators; one leading and one trailing
//     operator word of any case is removed as in the reference, then operators are repaired so
//     none dangles: leading and trailing ones go and a run of them keeps its last, so
//     "a AND AND b" is "a AND b" and "a AND NOT b" is "a NOT b"; an operator word glued to other
//     term characters ("-AND-", "AND*") is quoted as a term, while "(AND)" stays an operator
//     because parentheses separate;
//   - grouping, column filters, NEAR groups, ^ and + are not offered: their characters separate
//     terms, and the NEAR keyword and distance of NEAR(a b, 3) are dropped, leaving a b.
//
// The output is meant for unicode61. The trigram index tokenises differently: Search routes
// queries with CJK text there with its own terms (cjkGroups); only a group of Latin words in such
// a query comes back here.
func sanitizeFTSQuery(q string) string {
	q = truncateRunes(cleanRunes(q), maxFTSQueryRunes)
	keepPercent := hasCJK(q)

	var items []ftsItem
	var chunk []rune
	flush := func() {
		items = appendChunk(items, chunk, keepPercent)
		chunk = chunk[:0]
	}
	rs := []rune(q)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == '"' {
			end := indexRune(rs, i+1, '"')
			if end < 0 { // unmatched: a separator, as in the reference
				flush()
				continue
			}
			flush()
			next := end + 1
			prefix := false
			for next < len(rs) && rs[next] == '*' {
				prefix = true
				next++
			}
			if hasWordContent(rs[i+1 : end]) {
				text := `"` + string(rs[i+1:end]) + `"`
				if prefix {
					text += "*"
				}
				items = append(items, ftsItem{text: text})
			}
			i = next - 1
			continue
		}
		if isChunkRune(r, keepPercent) {
			chunk = append(chunk, r)
			continue
		}
		if r == '(' && string(chunk) == "NEAR" {
			// NEAR(a b, 3): keep the phrases as plain terms, drop the keyword and the distance.
			chunk = chunk[:0]
			blankNearDistance(rs, i+1)
		}
		flush()
	}
	flush()

	items = trimOperatorWords(items)
	items = repairOperators(items)
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(it.text)
	}
	return b.String()
}

// blankNearDistance turns the ", N" that ends a NEAR group opening at rs[from] into spaces.
func blankNearDistance(rs []rune, from int) {
	end := indexRune(rs, from, ')')
	if end < 0 {
		return
	}
	comma := -1
	for i := end - 1; i >= from; i-- {
		if rs[i] == ',' {
			comma = i
			break
		}
		if rs[i] != ' ' && (rs[i] < '0' || rs[i] > '9') {
			return
		}
	}
	if comma < 0 {
		return
	}
	for i := comma; i < end; i++ {
		rs[i] = ' '
	}
}

// ftsItem is one element of the rebuilt query: a rendered term or phrase, or a boolean operator.
type ftsItem struct {
	text string
	// op marks a real FTS5 operator (AND, OR, NOT in upper case).
	op bool
	// opWord marks a whole token spelling and/or/not in any case: the reference strips one at
	// each end of the query.
	opWord bool
}

// appendChunk renders one run of term characters (no separators, no quotes) into items.
func appendChunk(items []ftsItem, chunk []rune, keepPercent bool) []ftsItem {
	if len(chunk) == 0 {
		return items
	}
	s := string(chunk)
	switch s {
	case "AND", "OR", "NOT":
		return append(items, ftsItem{text: s, op: true, opWord: true})
	}
	if isOperatorWord(s) { // lower or mixed case: a plain word to FTS5
		return append(items, ftsItem{text: s, opWord: true})
	}
	// A '*' ends a prefix term; "a*b" is a* followed by b. Stars with no term before them vanish,
	// which both collapses runs and drops leading ones.
	start := 0
	for i := 0; i <= len(chunk); i++ {
		if i < len(chunk) && chunk[i] != '*' {
			continue
		}
		prefix := i < len(chunk)
		if term, ok := renderTerm(chunk[start:i], prefix); ok {
			items = append(items, ftsItem{text: term})
		}
		start = i + 1
	}
	return items
}

// renderTerm renders a star-free run of term characters as a bareword or a quoted phrase.
func renderTerm(seg []rune, prefix bool) (string, bool) {
	for len(seg) > 0 && isTrimmable(seg[0]) {
		seg = seg[1:]
	}
	for len(seg) > 0 && isTrimmable(seg[len(seg)-1]) {
		seg = seg[:len(seg)-1]
	}
	if !hasWordContent(seg) {
		return "", false
	}
	s := string(seg)
	quote := strings.ContainsAny(s, "._-%")
	switch s {
	case "AND", "OR", "NOT": // part of a larger token: a word, not an operator
		quote = true
	}
	if quote {
		s = `"` + s + `"`
	}
	if prefix {
		s += "*"
	}
	return s, true
}

// trimOperatorWords removes one leading and one trailing operator word of any case, as the
// reference does ("hello AND" searches hello, "OR hello" too).
func trimOperatorWords(items []ftsItem) []ftsItem {
	if len(items) > 0 && items[0].opWord {
		items = items[1:]
	}
	if len(items) > 0 && items[len(items)-1].opWord {
		items = items[:len(items)-1]
	}
	return items
}

// repairOperators leaves every operator between two operands: FTS5 operators are binary, so a
// leading, trailing or doubled one is a syntax error. Past maxFTSNots, NOT is dropped.
func repairOperators(items []ftsItem) []ftsItem {
	out := items[:0]
	for _, it := range items {
		switch {
		case !it.op:
			out = append(out, it)
		case len(out) == 0:
		case out[len(out)-1].op:
			out[len(out)-1] = it
		default:
			out = append(out, it)
		}
	}
	if len(out) > 0 && out[len(out)-1].op {
		out = out[:len(out)-1]
	}
	nots := 0
	kept := out[:0]
	for _, it := range out {
		if it.op && it.text == "NOT" {
			if nots == maxFTSNots {
				continue
			}
			nots++
		}
		kept = append(kept, it)
	}
	return kept
}

func isOperatorWord(s string) bool {
	return strings.EqualFold(s, "AND") || strings.EqualFold(s, "OR") || strings.EqualFold(s, "NOT")
}

// isChunkRune reports whether r can be part of a term. Everything else separates terms.
func isChunkRune(r rune, keepPercent bool) bool {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return true
		case r == '_', r == '.', r == '-', r == '*':
			return true
		case r == '%':
			return keepPercent
		}
		return false
	}
	return isWordRune(r) || unicode.Is(unicode.M, r)
}

// isWordRune reports whether r is a character unicode61 indexes: letters, digits and private-use
// characters (its default token categories L*, N* and Co).
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// isTrimmable reports the joiners cut from the ends of a term: "main.py." is "main.py", "-v" is "v".
func isTrimmable(r rune) bool { return r == '.' || r == '-' }

func hasWordContent(rs []rune) bool {
	for _, r := range rs {
		if isWordRune(r) {
			return true
		}
	}
	return false
}

func indexRune(rs []rune, from int, r rune) int {
	for i := from; i < len(rs); i++ {
		if rs[i] == r {
			return i
		}
	}
	return -1
}

// cleanRunes replaces invalid UTF-8 and control characters with spaces. A NUL inside a quoted
// FTS5 string ends it early ("unterminated string"), and the others only ever separate words.
func cleanRunes(s string) string {
	s = strings.ToValidUTF8(s, " ")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

func truncateRunes(s string, n int) string {
	if len(s) <= n { // bytes >= runes: short strings need no count
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// hasCJK reports whether s contains Chinese, Japanese or Korean script (Han, Hiragana, Katakana,
// Hangul) or CJK punctuation (CJK Symbols and Punctuation, Halfwidth and Fullwidth Forms, CJK
// Compatibility Forms, Vertical Forms). The ideographic space U+3000 alone does not count: it is
// whitespace, and a Latin query typed through an IME often carries one. unicode61 indexes a run of
// CJK as one token, so such queries need the trigram index or a LIKE scan.
func hasCJK(s string) bool {
	for _, r := range s {
		if isCJKLetter(r) || isCJKPunct(r) {
			return true
		}
	}
	return false
}

// isCJKLetter reports the characters of CJK words. Kana are matched by block rather than
// script so the prolonged sound mark (ー, U+30FC) and the voicing marks, which Unicode files
// under Common and Inherited, stay inside their words.
func isCJKLetter(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case 0x3040 <= r && r <= 0x30FF, // Hiragana, Katakana
		0x31F0 <= r && r <= 0x31FF, // Katakana Phonetic Extensions
		0xFF66 <= r && r <= 0xFF9F: // halfwidth Katakana
		return true
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func isCJKPunct(r rune) bool {
	switch {
	case 0x3001 <= r && r <= 0x303F: // CJK Symbols and Punctuation, minus the ideographic space
		return true
	case 0xFF00 <= r && r <= 0xFFEF: // Halfwidth and Fullwidth Forms
		return true
	case 0xFE30 <= r && r <= 0xFE4F: // CJK Compatibility Forms
		return true
	case 0xFE10 <= r && r <= 0xFE1F: // Vertical Forms
		return true
	}
	return false
}
