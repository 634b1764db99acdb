package provider

import "strings"

// Price is what a model charges in USD per million tokens. A zero CacheRead or CacheWrite price
// means those tokens cost the plain input price (OpenAI charges nothing extra to write its cache).
type Price struct {
	Input      float64
	Output     float64
	CacheRead  float64
	CacheWrite float64
}

// prices holds public list prices (standard tier, 5-minute Anthropic cache writes, prompts under
// any long-context surcharge threshold) as published in 2025. Keys are normalized model names
// (see normalizeModel); the longest key found in a model name wins, so "gpt-4o-mini" beats
// "gpt-4o" and a dated or vendor-prefixed name ("openai/gpt-4o-2024-08-06") still matches.
var prices = map[string]Price{
	// OpenAI
	"gpt-4o":       {Input: 2.50, Output: 10.00, CacheRead: 1.25},
	"gpt-4o-mini":  {Input: 0.15, Output: 0.60, CacheRead: 0.075},
	"gpt-4-1":      {Input: 2.00, Output: 8.00, CacheRead: 0.50},
	"gpt-4-1-mini": {Input: 0.40, Output: 1.60, CacheRead: 0.10},
	"gpt-4-1-nano": {Input: 0.10, Output: 0.40, CacheRead: 0.025},
	"gpt-5":        {Input: 1.25, Output: 10.00, CacheRead: 0.125},
	"gpt-5-mini":   {Input: 0.25, Output: 2.00, CacheRead: 0.025},
	"gpt-5-nano":   {Input: 0.05, Output: 0.40, CacheRead: 0.005},
	"o1":           {Input: 15.00, Output: 60.00, CacheRead: 7.50},
	"o1-mini":      {Input: 1.10, Output: 4.40, CacheRead: 0.55},
	"o1-pro":       {Input: 150.00, Output: 600.00},
	"o3":           {Input: 2.00, Output: 8.00, CacheRead: 0.50},
	"o3-mini":      {Input: 1.10, Output: 4.40, CacheRead: 0.55},
	"o3-pro":       {Input: 20.00, Output: 80.00},
	"o4-mini":      {Input: 1.10, Output: 4.40, CacheRead: 0.275},

	// Anthropic: cache reads are 0.1x input, 5-minute cache writes 1.25x.
	"claude-opus":       {Input: 5.00, Output: 25.00, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-5":   {Input: 5.00, Output: 25.00, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-1":   {Input: 15.00, Output: 75.00, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-opus-4":     {Input: 15.00, Output: 75.00, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-3-opus":     {Input: 15.00, Output: 75.00, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-sonnet":     {Input: 3.00, Output: 15.00, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-3-7-sonnet": {Input: 3.00, Output: 15.00, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-3-5-sonnet": {Input: 3.00, Output: 15.00, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-haiku":      {Input: 1.00, Output: 5.00, CacheRead: 0.10, CacheWrite: 1.25},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4.00, CacheRead: 0.08, CacheWrite: 1.00},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CacheRead: 0.03, CacheWrite: 0.30},
}

// normalizeModel lowercases, drops a routing prefix ("openai/", "anthropic/") and writes version
// dots as dashes, so "anthropic/claude-sonnet-4.5" and "claude-sonnet-4-5-20250929" agree.
func normalizeModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return strings.ReplaceAll(m, ".", "-")
}

// LookupPrice finds the price of model by the longest table key that occurs in its normalized
// name at word boundaries (start or after '-'; end, or before '-', ':', '@' or '_').
func LookupPrice(model string) (Price, bool) {
	return lookupModel(prices, model)
}

// lookupModel returns the entry of table whose key is the longest that occurs in model's
// normalized name at word boundaries; ok is false when none does.
func lookupModel[V any](table map[string]V, model string) (v V, ok bool) {
	m := normalizeModel(model)
	best := ""
	for key := range table {
		if len(key) > len(best) && containsAtBoundary(m, key) {
			best = key
		}
	}
	if best == "" {
		return v, false
	}
	return table[best], true
}

func containsAtBoundary(s, key string) bool {
	for from := 0; from+len(key) <= len(s); {
		i := strings.Index(s[from:], key)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(key)
		startOK := i == 0 || s[i-1] == '-'
		endOK := end == len(s) || strings.IndexByte("-:@_", s[end]) >= 0
		if startOK && endOK {
			return true
		}
		from = i + 1
	}
	return false
}

// EstimateCost prices u for model. known is false when the model is not in the table (local and
// unlisted models), and the cost is then 0. Reasoning tokens are already inside OutputTokens.
func EstimateCost(model string, u Usage) (usd float64, known bool) {
	p, ok := LookupPrice(model)
	if !ok {
		return 0, false
	}
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	plain := u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens
	if plain < 0 {
		plain = 0
	}
	hour := min(max(u.CacheWrite1h, 0), u.CacheWriteTokens)
	usd = (float64(plain)*p.Input + float64(u.CacheReadTokens)*read + float64(u.CacheWriteTokens-hour)*write +
		float64(hour)*2*p.Input + float64(u.OutputTokens)*p.Output) / 1e6
	return usd, true
}
