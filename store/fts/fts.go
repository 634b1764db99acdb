package fts

import "github.com/spoolhq/spool/store"

// IndexedToolChars is how much of a tool row's content the full-text indexes hold.
const IndexedToolChars = 8192

// SanitizeQuery returns the MATCH expression Search runs for q ("" when nothing is searchable).
func SanitizeQuery(q string) string { return sanitizeFTSQuery(q) }

// HasCJK reports whether s contains CJK script or punctuation (Search routes such queries to
// substring matching, and writers flag such rows).
func HasCJK(s string) bool { return hasCJK(s) }

// CJKGroup is one OR branch of a CJK query: substrings that must occur, and ones that must not.
type CJKGroup struct{ Pos, Neg []string }

// CJKGroups reads a CJK query with the Latin path's operators: OR separates groups, NOT excludes
// the next term (SearchCJKOperators in store/storetest).
func CJKGroups(q string) []CJKGroup {
	var out []CJKGroup
	for _, g := range cjkGroups(q) {
		out = append(out, CJKGroup{Pos: g.pos, Neg: g.neg})
	}
	return out
}

// CallsText is what the word index holds of a message's tool calls: tool names and argument
// values, not the JSON envelope (SearchToolCallEnvelope in store/storetest).
func CallsText(calls []store.ToolCall) string { return callsText(calls) }

// Tokens splits s as the word index does (unicode61: letters, digits, marks, private use),
// case-folded, in order.
func Tokens(s string) []string {
	toks := tokenize(s)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.fold
	}
	return out
}

// IndexedText is the part of a message's content the indexes hold: all of it, except for tool
// rows, whose first IndexedToolChars characters are indexed.
func IndexedText(role, content string) string {
	if role == store.RoleTool {
		return truncateRunes(content, IndexedToolChars)
	}
	return content
}

// WordSnippet is the snippet of a word-query hit: the densest window of matched words in text,
// else in the tool-call text, else the head of text. match is SanitizeQuery's output.
func WordSnippet(text, toolText, match string) string {
	terms := matchTerms(match)
	if s, ok := snippet(text, terms, snippetTokens); ok {
		return s
	}
	if s, ok := snippet(toolText, terms, snippetTokens); ok {
		return s
	}
	return headSnippet(text, 120)
}

// SubstringSnippet marks the first occurrence of term in content (the snippet of a CJK hit).
func SubstringSnippet(content, term string) string { return substringSnippet(content, term) }

// ShapePreview flattens newlines and cuts a listing's preview to 60 characters plus "...".
func ShapePreview(s string) string { return shapePreview(s) }

// PreviewChars is how much of the first user message a session keeps for pickers.
const PreviewChars = previewChars

// TruncateRunes cuts s to at most n characters.
func TruncateRunes(s string, n int) string { return truncateRunes(s, n) }

// LikeTerm is one literal of a boolean substring match: it must (or, with Neg, must not) occur.
type LikeTerm struct {
	Text string
	Neg  bool
}

// LikeGroups reads a sanitized MATCH expression as the substring subset a tool search applies
// to whole tool bodies: OR separates groups, NOT negates the next term, AND is implied; quotes
// and '*' are dropped (SearchLongToolOutput in store/storetest).
func LikeGroups(match string) [][]LikeTerm {
	var out [][]LikeTerm
	for _, g := range likeGroupsOf(match) {
		var terms []LikeTerm
		for _, t := range g {
			terms = append(terms, LikeTerm{Text: t.text, Neg: t.neg})
		}
		out = append(out, terms)
	}
	return out
}

// CJKSnippet is the snippet of a boolean CJK hit: the first positive term found in text, else
// the matched words of wordMatches (the sanitized expressions of the Latin-only groups).
func CJKSnippet(text string, groups []CJKGroup, wordMatches []string) string {
	gs := make([]cjkGroup, len(groups))
	for i, g := range groups {
		gs[i] = cjkGroup{pos: g.Pos, neg: g.Neg}
	}
	var words []snipTerm
	for _, m := range wordMatches {
		words = append(words, matchTerms(m)...)
	}
	return cjkSnippet(text, gs, words)
}
