package provider

import (
	"math"
	"testing"
)

func TestLookupPrice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		input float64 // 0: unknown
	}{
		{"gpt-4o", 2.50},
		{"gpt-4o-2024-08-06", 2.50},
		{"gpt-4o-mini-2024-07-18", 0.15},
		{"openai/gpt-4o-mini", 0.15},
		{"gpt-4.1-2025-04-14", 2.00},
		{"gpt-4.1-mini", 0.40},
		{"GPT-4.1-nano", 0.10},
		{"o3", 2.00},
		{"o3-mini-2025-01-31", 1.10},
		{"o3-pro", 20.00},
		{"o4-mini", 1.10},
		{"o1-preview", 15.00},
		{"claude-sonnet-4-5-20250929", 3.00},
		{"anthropic/claude-sonnet-4.5", 3.00},
		{"claude-3-5-haiku-latest", 0.80},
		{"claude-3-haiku-20240307", 0.25},
		{"claude-haiku-4-5", 1.00},
		{"claude-opus-4-1-20250805", 15.00},
		{"claude-opus-4-5-20251101", 5.00},
		{"claude-opus-4-20250514", 15.00},
		{"us.anthropic.claude-3-5-sonnet-20241022-v2:0", 3.00},
		{"llama3.1:8b", 0},
		{"chatgpt-4o-latest", 0},
		{"gpt-4o1", 0},
		{"", 0},
	}
	for _, tt := range tests {
		p, ok := LookupPrice(tt.model)
		if ok != (tt.input != 0) || p.Input != tt.input {
			t.Errorf("%q: %+v %v, want input %v", tt.model, p, ok, tt.input)
		}
	}
}

func TestEstimateCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		u     Usage
		want  float64
		known bool
	}{
		// openai fixture 01: 1144 prompt tokens, 1024 of them cached, 2 out.
		{"gpt-4.1-2025-04-14", Usage{InputTokens: 1144, OutputTokens: 2, CacheReadTokens: 1024}, (120*2.00 + 1024*0.50 + 2*8.00) / 1e6, true},
		// anthropic fixture 06b: 3 plain + 1111 read + 418 written, 33 out.
		{"claude-sonnet-4-5-20250929", Usage{InputTokens: 1532, OutputTokens: 33, CacheReadTokens: 1111, CacheWriteTokens: 418}, (3*3.00 + 1111*0.30 + 418*3.75 + 33*15.00) / 1e6, true},
		// OpenAI entries have no write price: writes cost plain input.
		{"gpt-4o", Usage{InputTokens: 100, CacheWriteTokens: 100}, 100 * 2.50 / 1e6, true},
		// Reasoning tokens are part of OutputTokens and not charged twice.
		{"o3", Usage{InputTokens: 10, OutputTokens: 100, ReasoningTokens: 80}, (10*2.00 + 100*8.00) / 1e6, true},
		// Inconsistent counters never go negative.
		{"gpt-4o", Usage{InputTokens: 5, CacheReadTokens: 10}, 10 * 1.25 / 1e6, true},
		{"qwen2.5-coder:7b", Usage{InputTokens: 1000, OutputTokens: 1000}, 0, false},
	}
	for _, tt := range tests {
		got, known := EstimateCost(tt.model, tt.u)
		if known != tt.known || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s %+v: %v %v, want %v %v", tt.model, tt.u, got, known, tt.want, tt.known)
		}
	}
}
