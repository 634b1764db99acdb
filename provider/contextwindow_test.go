package provider

import "testing"

func TestLookupContextWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model string
		want  int
		ok    bool
	}{
		{"gpt-4o", 128_000, true},
		{"openai/gpt-4o-2024-08-06", 128_000, true},
		{"gpt-4.1-mini", 1_047_576, true},
		{"gpt-5", 400_000, true},
		{"GPT-5-Mini", 400_000, true},
		{"claude-sonnet-4-5-20250929", 200_000, true},
		{"anthropic/claude-3.5-haiku", 200_000, true},
		{"o3", 200_000, true},
		{"o3-pro", 200_000, true}, // a variant takes its family's window
		{"gpt-4o-mini-2024-07-18", 128_000, true},
		{"gpt-4o-mini", 128_000, true},
		{"gpt-4.10", 0, false}, // not gpt-4.1 at a word boundary
		{"llama3.1:8b", 0, false},
		{"", 0, false},
		{"claude", 0, false},
	} {
		got, ok := LookupContextWindow(tc.model)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LookupContextWindow(%q) = %d, %v; want %d, %v", tc.model, got, ok, tc.want, tc.ok)
		}
	}
}
