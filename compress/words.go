package compress

import "math/bits"

// wordSet finds up to 32 lowercase ASCII words (two bytes or longer) in text in one pass,
// ignoring the case of ASCII letters in the text, as searching a copy lowered byte by byte would.
type wordSet struct {
	words []string
	// first[c] and second[c] hold the words whose first or second byte is c (either case): a
	// word can start only where both sets meet, so most positions cost two table lookups.
	first, second [256]uint32
}

func newWordSet(words []string) *wordSet {
	if len(words) > 32 {
		panic("wordSet: more than 32 words")
	}
	ws := &wordSet{words: words}
	for k, w := range words {
		for _, c := range []byte{w[0], upperASCII(w[0])} {
			ws.first[c] |= 1 << k
		}
		for _, c := range []byte{w[1], upperASCII(w[1])} {
			ws.second[c] |= 1 << k
		}
	}
	return ws
}

// find returns the set of words occurring in text (bit k for words[k]); with firstOnly it
// stops at the first word found.
func (ws *wordSet) find(text string, firstOnly bool) uint32 {
	var found uint32
	for i := 0; i+1 < len(text); i++ {
		for m := ws.first[text[i]] & ws.second[text[i+1]] &^ found; m != 0; m &= m - 1 {
			k := bits.TrailingZeros32(m)
			if hasPrefixLowerASCII(text[i:], ws.words[k]) {
				found |= 1 << k
				if firstOnly {
					return found
				}
			}
		}
	}
	return found
}

// next returns the first position at or after from where one of the words starts (ASCII
// case-insensitively), or -1.
func (ws *wordSet) next(text string, from int) int {
	for i := from; i+1 < len(text); i++ {
		for m := ws.first[text[i]] & ws.second[text[i+1]]; m != 0; m &= m - 1 {
			if hasPrefixLowerASCII(text[i:], ws.words[bits.TrailingZeros32(m)]) {
				return i
			}
		}
	}
	return -1
}

// atWordStart reports whether one of the words occurs in text at the start of a word (at the
// start of text or after a byte that is not a letter, digit or underscore).
func (ws *wordSet) atWordStart(text string) bool {
	for i := 0; i+1 < len(text); i++ {
		if i > 0 && isWordByte(text[i-1]) {
			continue
		}
		for m := ws.first[text[i]] & ws.second[text[i+1]]; m != 0; m &= m - 1 {
			if hasPrefixLowerASCII(text[i:], ws.words[bits.TrailingZeros32(m)]) {
				return true
			}
		}
	}
	return false
}

func upperASCII(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// hasPrefixLowerASCII reports whether s starts with the lowercase word w, ignoring the case of
// ASCII letters in s only.
func hasPrefixLowerASCII(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for j := 0; j < len(w); j++ {
		c := s[j]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[j] {
			return false
		}
	}
	return true
}
