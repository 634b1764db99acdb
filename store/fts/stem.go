package fts

import "strings"

// Stem is the English stem of a folded word token (Porter's 1980 algorithm), or "" when the
// token is not stemmed: tokens shorter than three letters, tokens with anything but a-z
// (identifiers, numbers, other scripts), and tokens that are their own stem. Both backends
// index the stems of a row's words beside the words themselves and match a query's bare words
// through them, so "tested", "tests" and "testing" meet; quoted phrases and identifiers are
// matched on the words alone, never stemmed.
func Stem(tok string) string {
	if len(tok) < 3 {
		return ""
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < 'a' || tok[i] > 'z' {
			return ""
		}
	}
	s := porter(tok)
	if s == tok {
		return ""
	}
	return s
}

// StemOf is the stem a query's bare word is matched by: Stem, or the word itself.
func StemOf(tok string) string {
	if s := Stem(tok); s != "" {
		return s
	}
	return tok
}

// StemText is what a row's stem column holds: the distinct stems of the words of text that
// differ from their word (Stem), in first-occurrence order, space-separated.
func StemText(text string) string {
	seen := map[string]bool{}
	var b strings.Builder
	for _, t := range tokenize(text) {
		s := Stem(t.fold)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

// RowStems is the stem text of a message row: the stems of its indexed content (IndexedText)
// and of its tool-call text (CallsText).
func RowStems(role, content, callText string) string {
	return StemText(IndexedText(role, content) + " " + callText)
}

// porter stems a lower-case a-z word of three letters or more.
func porter(w string) string {
	b := []byte(w)
	b = step1a(b)
	b = step1b(b)
	b = step1c(b)
	b = step2(b)
	b = step3(b)
	b = step4(b)
	b = step5(b)
	return string(b)
}

// isCons reports whether b[i] is a consonant in Porter's sense (y after a consonant is a vowel).
func isCons(b []byte, i int) bool {
	switch b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !isCons(b, i-1)
	}
	return true
}

// measure is m, the number of vowel-consonant sequences in b.
func measure(b []byte) int {
	n, i := 0, 0
	for i < len(b) && isCons(b, i) {
		i++
	}
	for i < len(b) {
		for i < len(b) && !isCons(b, i) {
			i++
		}
		if i >= len(b) {
			break
		}
		for i < len(b) && isCons(b, i) {
			i++
		}
		n++
	}
	return n
}

func hasVowel(b []byte) bool {
	for i := range b {
		if !isCons(b, i) {
			return true
		}
	}
	return false
}

func doubleCons(b []byte) bool {
	n := len(b)
	return n >= 2 && b[n-1] == b[n-2] && isCons(b, n-1)
}

// cvc: the stem ends consonant-vowel-consonant, the last not w, x or y.
func cvc(b []byte) bool {
	n := len(b)
	if n < 3 || !isCons(b, n-1) || isCons(b, n-2) || !isCons(b, n-3) {
		return false
	}
	c := b[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}

func hasSuffix(b []byte, s string) bool { return strings.HasSuffix(string(b), s) }

// replace swaps suffix for repl when the stem before suffix has a measure above m.
func replace(b []byte, suffix, repl string, m int) ([]byte, bool) {
	if !hasSuffix(b, suffix) {
		return b, false
	}
	stem := b[:len(b)-len(suffix)]
	if measure(stem) > m {
		return append(stem[:len(stem):len(stem)], repl...), true
	}
	return b, true
}

func step1a(b []byte) []byte {
	switch {
	case hasSuffix(b, "sses"), hasSuffix(b, "ies"):
		return b[:len(b)-2]
	case hasSuffix(b, "ss"):
		return b
	case hasSuffix(b, "s"):
		return b[:len(b)-1]
	}
	return b
}

func step1b(b []byte) []byte {
	if hasSuffix(b, "eed") {
		if measure(b[:len(b)-3]) > 0 {
			return b[:len(b)-1]
		}
		return b
	}
	var stem []byte
	switch {
	case hasSuffix(b, "ed") && hasVowel(b[:len(b)-2]):
		stem = b[:len(b)-2]
	case hasSuffix(b, "ing") && hasVowel(b[:len(b)-3]):
		stem = b[:len(b)-3]
	default:
		return b
	}
	stem = stem[:len(stem):len(stem)]
	switch {
	case hasSuffix(stem, "at"), hasSuffix(stem, "bl"), hasSuffix(stem, "iz"):
		return append(stem, 'e')
	case doubleCons(stem):
		if c := stem[len(stem)-1]; c != 'l' && c != 's' && c != 'z' {
			return stem[:len(stem)-1]
		}
		return stem
	case measure(stem) == 1 && cvc(stem):
		return append(stem, 'e')
	}
	return stem
}

// step1c turns a final y into i after a consonant that is not the first letter (Porter2's
// rule: Porter's "after any vowel" stemmed "deployed" to deploi but "deployment" to deploy).
func step1c(b []byte) []byte {
	if n := len(b); n > 2 && b[n-1] == 'y' && isCons(b, n-2) {
		c := append([]byte{}, b...)
		c[len(c)-1] = 'i'
		return c
	}
	return b
}

var step2Rules = [][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"izer", "ize"},
	{"abli", "able"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
	{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"},
	{"fulness", "ful"}, {"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
}

var step3Rules = [][2]string{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func applyRules(b []byte, rules [][2]string) []byte {
	for _, r := range rules {
		if out, ok := replace(b, r[0], r[1], 0); ok {
			return out
		}
	}
	return b
}

func step2(b []byte) []byte { return applyRules(b, step2Rules) }
func step3(b []byte) []byte { return applyRules(b, step3Rules) }

var step4Suffixes = []string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
	"ism", "ate", "iti", "ous", "ive", "ize",
}

func step4(b []byte) []byte {
	// The longest matching suffix decides (ement before ment before ent).
	best := ""
	for _, s := range step4Suffixes {
		if hasSuffix(b, s) && len(s) > len(best) {
			best = s
		}
	}
	if best == "" {
		return b
	}
	stem := b[:len(b)-len(best)]
	if measure(stem) <= 1 {
		return b
	}
	if best == "ion" {
		if n := len(stem); n == 0 || (stem[n-1] != 's' && stem[n-1] != 't') {
			return b
		}
	}
	return stem
}

func step5(b []byte) []byte {
	if hasSuffix(b, "e") {
		stem := b[:len(b)-1]
		if m := measure(stem); m > 1 || (m == 1 && !cvc(stem)) {
			b = stem
		}
	}
	if measure(b) > 1 && doubleCons(b) && b[len(b)-1] == 'l' {
		b = b[:len(b)-1]
	}
	return b
}
