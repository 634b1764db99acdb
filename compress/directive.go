package compress

import "strings"

// Directive is what a sentence of a user message asks of the rest of the session, as
// ClassifyDirective reads it.
type Directive int

// Directives, weakest first.
const (
	// DirectiveNone is a sentence that binds nothing: a task, a question, a report.
	DirectiveNone Directive = iota
	// DirectiveDecision is a plan or a choice ("let's use sqlite", "we decided ...", "goal:").
	DirectiveDecision
	// DirectiveConstraint is a rule the user sets for the rest of the session ("never use
	// sudo", "always run the race detector", "use pgx, not lib/pq", "make sure ...").
	DirectiveConstraint
	// DirectiveCorrection is the user correcting what was done ("no, use X", "that's wrong",
	// "I said ..."). Corrections bind like constraints.
	DirectiveCorrection
)

// Binding reports whether d is a constraint or a correction: the user's words the ledger keeps
// at every window (see LedgerEntry.binding).
func (d Directive) Binding() bool { return d >= DirectiveConstraint }

func (d Directive) String() string {
	switch d {
	case DirectiveDecision:
		return "decision"
	case DirectiveConstraint:
		return "constraint"
	case DirectiveCorrection:
		return "correction"
	}
	return "none"
}

// leadFillers may open an imperative without changing it ("please never ...", "ok, use ...").
var leadFillers = map[string]bool{
	"please": true, "ok": true, "okay": true, "and": true, "also": true, "so": true, "but": true,
	"then": true, "now": true, "again": true, "just": true, "and,": true, "also,": true, "ok,": true,
	"okay,": true, "so,": true, "now,": true, "again,": true, "hey,": true, "hey": true,
}

// imperativeStarts bind when they open the sentence (after leadFillers): "Use pgx.", "Keep
// the diff small.", "Stop adding TODOs.", "Only touch internal/.".
var imperativeStarts = map[string]bool{
	"use": true, "keep": true, "stop": true, "avoid": true, "only": true, "leave": true,
	"never": true, "always": true, "don't": true, "dont": true, "prefer": true,
}

// correctionStarts open a correction: "No, ...", "Nope, ...", "Actually, ...", "Wrong: ...".
var correctionStarts = []string{"no,", "no.", "no -", "no —", "no:", "nope", "actually,", "wrong", "not like that", "that's wrong", "that is wrong"}

// correctionPhrases are corrections wherever they stand.
var correctionPhrases = []string{
	"that's wrong", "that is wrong", "that's not what", "that is not what", "not what i asked", "not what i said",
	"i said ", "i told you", "i meant ", "i asked you to", "you were supposed to", "undo that", "revert that", "put it back",
}

// constraintPhrases bind wherever they stand (at a word start).
var constraintPhrases = []string{
	"instead of", "rather than", "from now on", "make sure", "must not", "mustn't", "should not",
	"shouldn't", "do not", "don't", "dont", "never", "always", "avoid", "no more", "only use",
	"is not allowed", "are not allowed", "is forbidden", "are forbidden", "must ", "ensure ", "at all times",
}

// decisionPhrases mark a plan or a choice.
var decisionPhrases = []string{
	"let's", "let us", "we will", "we'll", "we should", "decided", "decide", "the plan is", "goal",
	"prefer", "remember", "keep ", "going with", "we chose", "i chose",
}

// notBinding are the words after "don't"/"do not" that make the phrase a statement of the
// speaker's state, not a rule ("I don't know why", "I don't think so").
var notBinding = map[string]bool{
	"know": true, "think": true, "understand": true, "see": true, "remember": true, "care": true,
	"mind": true, "get": true, "have": true, "recall": true, "believe": true, "need": true, "want": true,
}

// narrators before "never"/"always" make the sentence a report of what happened or how
// something behaves ("I never saw that error", "it always fails"), not a rule. "we" and "you"
// are left out: "we never deploy on Fridays" is a rule.
var narrators = map[string]bool{
	"i": true, "it": true, "he": true, "she": true, "they": true, "that": true, "this": true,
	"which": true, "who": true, "there": true, "as": true, "almost": true, "nearly": true,
}

// inferences before "must" make it a guess, not a rule ("it must be the cache").
var inferences = map[string]bool{"it": true, "that": true, "this": true, "there": true, "he": true, "she": true, "they": true, "you": true}

// ClassifyDirective reads one sentence of a user message and says whether it binds the rest of
// the session: a correction, a constraint, a decision, or none. It is deterministic and reads
// words only: questions, reports of what happened ("I never saw that error") and statements
// of the speaker's state ("I don't know") bind nothing.
func ClassifyDirective(sentence string) Directive {
	s := normalizeSentence(sentence)
	if s == "" || strings.HasSuffix(strings.TrimRight(s, " \"'`)*_"), "?") {
		return DirectiveNone
	}
	w := strings.Fields(s)
	lead := 0
	for lead < len(w)-1 && leadFillers[w[lead]] {
		lead++
	}
	rest := strings.Join(w[lead:], " ")
	for _, p := range correctionStarts {
		if strings.HasPrefix(rest, p) && len(w)-lead >= 3 {
			return DirectiveCorrection
		}
	}
	for _, p := range correctionPhrases {
		if atWord(s, p) {
			return DirectiveCorrection
		}
	}
	first := strings.Trim(w[lead], ",:;.")
	if first == "do" && lead+1 < len(w) && w[lead+1] == "not" {
		first = "do not"
	}
	if imperativeStarts[first] || first == "do not" {
		if !strings.HasPrefix(first, "do") || !notBinding[wordAfter(rest, first)] {
			return DirectiveConstraint
		}
	}
	if strings.Contains(s, ", not ") && len(w) > 3 {
		return DirectiveConstraint // "Amounts are int64 cents, not float64."
	}
	for _, p := range constraintPhrases {
		if boundPhrase(s, p) {
			return DirectiveConstraint
		}
	}
	for _, p := range decisionPhrases {
		if atWord(s, p) {
			return DirectiveDecision
		}
	}
	return DirectiveNone
}

// normalizeSentence lowers the sentence, turns typographic apostrophes into ASCII ones and
// trims it.
func normalizeSentence(s string) string {
	return strings.TrimSpace(strings.ToLower(typographic.Replace(s)))
}

var typographic = strings.NewReplacer("\u2019", "'", "\u2018", "'")

// atWord reports whether phrase occurs in s starting at a word start.
func atWord(s, phrase string) bool { return phraseAt(s, phrase, 0) >= 0 }

// phraseAt returns the first position at or after from where phrase starts a word in s, or -1.
func phraseAt(s, phrase string, from int) int {
	for from <= len(s) {
		i := strings.Index(s[from:], phrase)
		if i < 0 {
			return -1
		}
		i += from
		if i == 0 || !isWordByte(s[i-1]) && s[i-1] != '\'' {
			// The phrase must also end at a word end unless it ends in a space.
			end := i + len(phrase)
			if phrase[len(phrase)-1] == ' ' || end == len(s) || !isWordByte(s[end]) {
				return i
			}
		}
		from = i + 1
	}
	return -1
}

// boundPhrase reports whether a constraint phrase occurs in s as a rule: "never"/"always" not
// after a narrator, "don't"/"do not" not before a verb of the speaker's state, "must" not as a
// guess.
func boundPhrase(s, p string) bool {
	for at := phraseAt(s, p, 0); at >= 0; at = phraseAt(s, p, at+1) {
		prev := wordBefore(s, at)
		next := wordAfter(s[at:], strings.TrimSpace(p))
		switch strings.TrimSpace(p) {
		case "never", "always":
			if narrators[prev] {
				continue
			}
		case "don't", "dont", "do not":
			if notBinding[next] {
				continue
			}
		case "must":
			if inferences[prev] || next == "have" || next == "'ve" {
				continue
			}
		}
		return true
	}
	return false
}

// wordBefore is the word ending right before position i of s ("" at the start).
func wordBefore(s string, i int) string {
	f := strings.Fields(s[:i])
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[len(f)-1], ",;:.\"'")
}

// wordAfter is the word following the leading phrase of s ("" when there is none).
func wordAfter(s, phrase string) string {
	rest := strings.Fields(strings.TrimPrefix(s, phrase))
	if len(rest) == 0 {
		return ""
	}
	return strings.Trim(rest[0], ",;:.\"'")
}

// Directives returns up to limit sentences of text that ClassifyDirective finds binding or
// deciding, in order.
func Directives(text string, limit int) []string {
	var out []string
	for _, s := range sentences(text) {
		if ClassifyDirective(s) != DirectiveNone {
			out = append(out, s)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}
