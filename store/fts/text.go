package fts

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

// snippetTokens is the window of a word snippet, in tokens.
const snippetTokens = 40

// indexedToolChars is how much of a tool row's text the full-text indexes hold.
const indexedToolChars = IndexedToolChars

// previewChars is how much of the first user message a session keeps for pickers.
const previewChars = 60

// likeTerm is one literal of a boolean LIKE match: a substring that must (or, negated, must not)
// occur.
type likeTerm struct {
	text string
	neg  bool
}

// likeGroupsOf reads a sanitized MATCH expression as the reference's LIKE subset: OR separates
// groups, NOT negates the next term, AND is implied; quotes and '*' are dropped. A group with no
// positive term is dropped.
func likeGroupsOf(match string) [][]likeTerm {
	var groups [][]likeTerm
	var cur []likeTerm
	flush := func() {
		if slices.ContainsFunc(cur, func(t likeTerm) bool { return !t.neg }) {
			groups = append(groups, cur)
		}
		cur = nil
	}
	neg := false
	for rest := strings.TrimSpace(match); rest != ""; rest = strings.TrimSpace(rest) {
		var word string
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			word, rest = rest[1:end+1], rest[min(end+2, len(rest)):]
		} else {
			word, rest, _ = strings.Cut(rest, " ")
		}
		switch word {
		case "AND":
			continue
		case "OR":
			flush()
			neg = false
			continue
		case "NOT":
			neg = true
			continue
		}
		if word = strings.Trim(word, "*"); word != "" {
			cur = append(cur, likeTerm{text: word, neg: neg})
		}
		neg = false
	}
	flush()
	return groups
}

// callsText is what the word index holds of a message's tool calls: tool names and argument
// values (arguments that are not JSON as they are), not the JSON around them, cut to
// indexedToolChars like a tool row's text.
func callsText(calls []store.ToolCall) string {
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.Function.Name)
		var v any
		if json.Unmarshal([]byte(c.Function.Arguments), &v) != nil {
			v = c.Function.Arguments
		}
		appendJSONValues(&b, v)
	}
	return truncateRunes(b.String(), indexedToolChars)
}

func appendJSONValues(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		for _, k := range keys {
			appendJSONValues(b, x[k])
		}
	case []any:
		for _, e := range x {
			appendJSONValues(b, e)
		}
	case string:
		b.WriteString(" " + x)
	case float64:
		b.WriteString(" " + strconv.FormatFloat(x, 'g', -1, 64))
	}
}

// cjkSnippet marks the first positive term found in text, else the matched words.
func cjkSnippet(text string, groups []cjkGroup, words []snipTerm) string {
	for _, g := range groups {
		for _, t := range g.pos {
			if strings.Contains(text, t) {
				return substringSnippet(text, t)
			}
		}
	}
	if s, ok := snippet(text, words, snippetTokens); ok {
		return s
	}
	return headSnippet(text, 120)
}

// cjkGroup is one OR branch of a CJK query: literal substrings that must occur, and ones that
// must not.
type cjkGroup struct{ pos, neg []string }

// cjkGroups reads a CJK query with the operators of the Latin path: OR separates groups, NOT
// excludes the next term, AND (or nothing) requires both. Operators are upper case, as in FTS5;
// a dangling or doubled one is repaired the same way (repairOperators). Quotes and FTS syntax
// characters around a term are dropped, and so are lower-case operator words and NEAR. A group
// with nothing positive in it is dropped.
func cjkGroups(s string) []cjkGroup {
	var items []ftsItem
	for _, f := range strings.Fields(cleanRunes(truncateRunes(s, maxFTSQueryRunes))) {
		f = strings.Trim(f, `"*()+-^:`)
		switch {
		case f == "AND" || f == "OR" || f == "NOT":
			items = append(items, ftsItem{text: f, op: true, opWord: true})
		case f == "", isOperatorWord(f), strings.EqualFold(f, "NEAR"):
		default:
			items = append(items, ftsItem{text: f})
		}
	}
	items = repairOperators(items)
	var groups []cjkGroup
	var cur cjkGroup
	flush := func() {
		if len(cur.pos) > 0 {
			groups = append(groups, cur)
		}
		cur = cjkGroup{}
	}
	neg := false
	for _, it := range items {
		switch {
		case it.op && it.text == "OR":
			flush()
		case it.op && it.text == "NOT":
			neg = true
			continue
		case it.op:
		case neg:
			cur.neg = append(cur.neg, it.text)
		default:
			cur.pos = append(cur.pos, it.text)
		}
		neg = false
	}
	flush()
	return groups
}

// substringSnippet shows 120 characters from 40 before the first occurrence of term, marked.
func substringSnippet(content, term string) string {
	i := strings.Index(content, term)
	if i < 0 {
		return truncateRunes(content, 120)
	}
	r := []rune(content)
	at := utf8.RuneCountInString(content[:i])
	n := utf8.RuneCountInString(term)
	start := max(0, at-40)
	end := min(len(r), start+120)
	var b strings.Builder
	if start > 0 {
		b.WriteString("...")
	}
	b.WriteString(string(r[start:at]))
	b.WriteString(">>>" + string(r[at:min(at+n, len(r))]) + "<<<")
	if at+n < end {
		b.WriteString(string(r[at+n : end]))
	}
	if end < len(r) {
		b.WriteString("...")
	}
	return b.String()
}

// shapePreview flattens newlines and cuts to 60 characters plus "..." when longer.
func shapePreview(s string) string {
	return headSnippet(strings.Join(strings.Fields(s), " "), previewChars)
}
