package fts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Snippets are built here rather than with FTS5's snippet(): each snippet() call re-runs the
// MATCH expression, and for a prefix query that means merging the doclists of every term with
// that prefix again, once per hit. The page's rows are already loaded, so marking the matched
// words in Go costs microseconds.

// snipTerm is one word of a sanitized MATCH expression, folded as unicode61 folds it.
type snipTerm struct {
	text   string
	prefix bool
	stem   string // for a bare word: the stem its other forms meet at (StemOf); "" otherwise
}

// matchTerms extracts the positive words of a sanitized MATCH expression: phrase words, bare
// words and prefixes; operators and the words after NOT are left out.
func matchTerms(match string) []snipTerm {
	var terms []snipTerm
	negate := false
	add := func(word string, prefix, bare bool) {
		toks := tokenize(word)
		for i, w := range toks {
			if !negate {
				// A trailing * makes only the phrase's last word a prefix.
				t := snipTerm{text: w.fold, prefix: prefix && i == len(toks)-1}
				if bare && !prefix && len(toks) == 1 {
					t.stem = StemOf(w.fold) // as the index matches it (termIn)
				}
				terms = append(terms, t)
			}
		}
	}
	for rest := strings.TrimSpace(match); rest != ""; rest = strings.TrimSpace(rest) {
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			phrase := rest[1 : end+1]
			rest = rest[min(end+2, len(rest)):]
			prefix := strings.HasPrefix(rest, "*")
			rest = strings.TrimPrefix(rest, "*")
			add(phrase, prefix, false)
			negate = false
			continue
		}
		word, tail, _ := strings.Cut(rest, " ")
		rest = tail
		switch word {
		case "AND", "OR":
			continue
		case "NOT":
			negate = true
			continue
		}
		add(strings.TrimSuffix(word, "*"), strings.HasSuffix(word, "*"), true)
		negate = false
	}
	return terms
}

type token struct {
	start, end int // byte offsets in the text
	fold       string
}

// tokenize splits like FTS5's unicode61: runs of letters, digits and private-use characters,
// case-folded.
func tokenize(s string) []token {
	var out []token
	start := -1
	for i, r := range s {
		if isTokenRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, token{start, i, strings.ToLower(s[start:i])})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, token{start, len(s), strings.ToLower(s[start:])})
	}
	return out
}

func isTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r) || unicode.Is(unicode.Mn, r)
}

func (t snipTerm) matches(fold string) bool {
	if t.prefix {
		return strings.HasPrefix(fold, t.text)
	}
	return fold == t.text || t.stem != "" && StemOf(fold) == t.stem
}

// snippet returns up to window tokens of text around the densest cluster of matched words,
// marking each match with >>> and <<<, with "..." where text was cut. ok is false when no word
// matched (the match was in another column).
func snippet(text string, terms []snipTerm, window int) (string, bool) {
	toks := tokenize(text)
	hit := make([]bool, len(toks))
	any := false
	for i, tk := range toks {
		for _, t := range terms {
			if t.matches(tk.fold) {
				hit[i], any = true, true
				break
			}
		}
	}
	if !any {
		return "", false
	}
	// The window start with the most matches; the first such start wins.
	best, bestN, n := 0, -1, 0
	for i := range toks {
		if hit[i] {
			n++
		}
		if i >= window && hit[i-window] {
			n--
		}
		if start := max(0, i-window+1); n > bestN {
			best, bestN = start, n
		}
	}
	// Start a little before the first match in the window, for context.
	for i := best; i < min(best+window, len(toks)); i++ {
		if hit[i] {
			best = max(0, min(i-window/4, len(toks)-window))
			break
		}
	}
	end := min(best+window, len(toks))
	var b strings.Builder
	if best > 0 {
		b.WriteString("...")
	}
	pos := toks[best].start
	for i := best; i < end; i++ {
		b.WriteString(text[pos:toks[i].start])
		if hit[i] {
			b.WriteString(">>>" + text[toks[i].start:toks[i].end] + "<<<")
		} else {
			b.WriteString(text[toks[i].start:toks[i].end])
		}
		pos = toks[i].end
	}
	if end < len(toks) {
		b.WriteString("...")
	} else {
		b.WriteString(text[pos:])
	}
	return b.String(), true
}

// headSnippet is the first n characters of text, with "..." when it was cut: the snippet when the
// match was not in the text itself, and a listing's preview.
func headSnippet(text string, n int) string {
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	return string([]rune(text)[:n]) + "..."
}
