package fts

import (
	"slices"
	"strings"
	"unicode"
)

// Term is one operand of a sanitized MATCH expression: a bare word, or a "quoted" phrase (an
// identifier such as chat-send or main.py is quoted by the sanitizer), with whether a * made
// its last word a prefix.
type Term struct {
	Text   string
	Quoted bool
	Prefix bool
}

// Exact reports whether t is matched on the words as written, never through stems: phrases,
// identifiers and prefixes.
func (t Term) Exact() bool { return t.Quoted || t.Prefix }

// WalkMatch reads a sanitized MATCH expression (SanitizeQuery's output) left to right: term
// gets each operand, operator each AND, OR and NOT. Two operands in a row are joined by the
// implicit AND.
func WalkMatch(match string, term func(Term), operator func(op string)) {
	for rest := strings.TrimSpace(match); rest != ""; rest = strings.TrimSpace(rest) {
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			text := rest[1 : end+1]
			rest = rest[min(end+2, len(rest)):]
			prefix := strings.HasPrefix(rest, "*")
			rest = strings.TrimLeft(rest, "*")
			term(Term{Text: text, Quoted: true, Prefix: prefix})
			continue
		}
		word, tail, _ := strings.Cut(rest, " ")
		rest = tail
		switch word {
		case "AND", "OR", "NOT":
			operator(word)
		default:
			term(Term{Text: strings.TrimRight(word, "*"), Prefix: strings.HasSuffix(word, "*")})
		}
	}
}

// Query is a search as the backends run it.
type Query struct {
	// Match is the sanitized expression ("" when nothing is searchable).
	Match string
	// Units, when there are two or more, are the operands of a question asked in plain words:
	// Match is their OR, and hits rank by relevance over them (BM25: rows matching more and
	// rarer units first) instead of needing all of them.
	Units []string
}

// UnitsWindow bounds how many matches of a Ranked query are ranked: the newest UnitsWindow of
// their OR (ten times a single term's window, since an OR of common words matches much of a
// store; the cost of ranking grows with it).
const UnitsWindow = 10000

// Ranked reports whether q is a plain-words query of several units (OR semantics).
func (q Query) Ranked() bool { return len(q.Units) > 1 }

// PlanQuery reads a query as typed by a person or a model. With an explicit operator (AND, OR,
// NOT in upper case) it means what it says, every other term joined by the implicit AND, as
// SanitizeQuery renders it. Without one it is read as a question: each word, quoted phrase,
// identifier or prefix is a unit, common words (stopwords) are dropped unless nothing else is
// left, and a row needs only one unit; identifiers (paths, file names, hyphenated or dotted
// names, anything with a digit) and quoted phrases count twice, so they rank above loose words.
// A path-like token (src/main.py:42, user@host, pkg::name) is one phrase rather than its parts.
func PlanQuery(q string) Query {
	match := SanitizeQuery(quoteIdentifiers(q))
	var terms []Term
	explicit := false
	WalkMatch(match, func(t Term) { terms = append(terms, t) }, func(string) { explicit = true })
	if explicit || len(terms) < 2 {
		return Query{Match: match}
	}
	var units []string
	seen := map[string]bool{}
	for _, keepCommon := range []bool{false, true} {
		for _, t := range terms {
			if !keepCommon && !t.Exact() && isStopword(strings.ToLower(t.Text)) {
				continue
			}
			key := strings.ToLower(t.String())
			if seen[key] {
				continue
			}
			seen[key] = true
			units = append(units, t.String())
			if t.Quoted || strings.ContainsFunc(t.Text, unicode.IsDigit) {
				units = append(units, t.String())
			}
		}
		if len(units) > 0 {
			break
		}
	}
	if len(seen) < 2 {
		return Query{Match: strings.Join(units[:1], " ")}
	}
	return Query{Match: strings.Join(units, " OR "), Units: units}
}

// String writes t back in the sanitized syntax.
func (t Term) String() string {
	s := t.Text
	if t.Quoted {
		s = `"` + s + `"`
	}
	if t.Prefix {
		s += "*"
	}
	return s
}

// quoteIdentifiers quotes the path-like tokens of a query without quotes of its own: a token
// holding '/', '\', '@' or ':' between word characters (after trailing punctuation is cut) is
// searched as one phrase.
func quoteIdentifiers(q string) string {
	if strings.ContainsRune(q, '"') {
		return q
	}
	fields := strings.Fields(q)
	changed := false
	for i, f := range fields {
		core := strings.TrimRight(strings.TrimLeft(f, "([{<'`"), ".,;:!?)]}>'`")
		inner := strings.IndexAny(core, `/\@:`)
		if inner <= 0 || inner == len(core)-1 || strings.HasSuffix(core, "*") || !hasWordContent([]rune(core)) {
			continue
		}
		fields[i] = `"` + core + `"`
		changed = true
	}
	if !changed {
		return q
	}
	return strings.Join(fields, " ")
}

// isStopword reports the English function words a question is full of and an answer need not
// contain (the words of a question's frame: "what did we", "which", "how do I"), and the
// fragments an apostrophe leaves ("didn't" is didn and t).
func isStopword(w string) bool {
	if len(w) == 1 {
		return true
	}
	_, ok := stopwords[w]
	return ok
}

var stopwords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`about above after again against all also am an and any are as at be
		because been before being below between both but by can could did didn do does doesn doing don done
		down during each either else ever few for from further get got had hadn has hasn have haven having he
		her here hers herself him himself his how however if in into is isn it its itself just let lets ll me
		might more most much must my myself no nor not now of off on once one only or other our ours
		ourselves out over own per please re same shall she should shouldn so some such than that the their
		theirs them themselves then there these they this those though through thus to too under until up
		upon us ve very via was wasn we were weren what whatever when where whether which while who whom
		whose why will with within without won would wouldn yet you your yours yourself yourselves`) {
		m[w] = struct{}{}
	}
	return m
}()

// MatchedTerms lists the operands of a sanitized match expression that occur in a hit's texts
// (its content, its tool-call text), as written in the query: a bare word when one of the texts'
// words is it or shares its stem, a phrase or identifier when its words occur in sequence (the
// last as a prefix when asked). Negated operands are left out. Search results name them, so a
// caller sees which of a question's words a hit answers.
func MatchedTerms(match string, texts ...string) []string {
	var words [][]string
	for _, s := range texts {
		var w []string
		for _, t := range tokenize(s) {
			w = append(w, t.fold)
		}
		words = append(words, w)
	}
	var out []string
	seen := map[string]bool{}
	negate := false
	WalkMatch(match, func(t Term) {
		neg := negate
		negate = false
		key := strings.ToLower(t.Text)
		if neg || seen[key] {
			return
		}
		for _, w := range words {
			if termIn(t, w) {
				seen[key] = true
				out = append(out, t.Text)
				return
			}
		}
	}, func(op string) { negate = op == "NOT" })
	return out
}

// termIn reports whether t occurs in the folded words w.
func termIn(t Term, w []string) bool {
	var toks []string
	for _, tk := range tokenize(t.Text) {
		toks = append(toks, tk.fold)
	}
	if len(toks) == 0 {
		return false
	}
	if !t.Exact() && len(toks) == 1 {
		stem := StemOf(toks[0])
		return slices.ContainsFunc(w, func(x string) bool { return x == toks[0] || StemOf(x) == stem })
	}
	for i := 0; i+len(toks) <= len(w); i++ {
		ok := true
		for j, tok := range toks {
			last := j == len(toks)-1
			if w[i+j] != tok && !(last && t.Prefix && strings.HasPrefix(w[i+j], tok)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
