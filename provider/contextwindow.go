package provider

// contextWindows holds the published context windows, in tokens, of the models spool's adapters
// talk to most (2025 model pages). It only answers "how big is this model's window" when nothing
// better is known: a configured context length always wins. Keys and matching are those of the
// price table (normalizeModel, longest key at word boundaries), so dated and vendor-prefixed
// names match.
var contextWindows = map[string]int{
	// OpenAI
	"gpt-4o":       128_000,
	"gpt-4o-mini":  128_000,
	"gpt-4-1":      1_047_576,
	"gpt-4-1-mini": 1_047_576,
	"gpt-4-1-nano": 1_047_576,
	"gpt-5":        400_000,
	"gpt-5-mini":   400_000,
	"gpt-5-nano":   400_000,
	"o1":           200_000,
	"o1-mini":      128_000,
	"o3":           200_000,
	"o3-mini":      200_000,
	"o4-mini":      200_000,

	// Anthropic (the standard window; the 1M beta is opt-in and configured explicitly).
	"claude-opus":       200_000,
	"claude-sonnet":     200_000,
	"claude-haiku":      200_000,
	"claude-3-opus":     200_000,
	"claude-3-7-sonnet": 200_000,
	"claude-3-5-sonnet": 200_000,
	"claude-3-5-haiku":  200_000,
	"claude-3-haiku":    200_000,
}

// LookupContextWindow returns the published context window of model in tokens, matched like
// LookupPrice. ok is false for models not in the table (local and unlisted models).
func LookupContextWindow(model string) (tokens int, ok bool) {
	return lookupModel(contextWindows, model)
}
