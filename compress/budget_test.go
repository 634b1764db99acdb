package compress

import (
	"context"
	"fmt"
	"testing"
)

// Every budget grows with the window: a 4K window gets a summary of a few hundred tokens, a 1M
// window the full 10,000 and the whole ledger.
func TestBudgetsFollowTheWindow(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	var prev Budgets
	for i, window := range []int{4_096, 8_192, 32_768, 131_072, 1_048_576} {
		r, err := Resolve(cfg, Model{Name: "m", ContextLength: window})
		if err != nil {
			t.Fatal(err)
		}
		b := NewBudgets(cfg, r, 1_500)
		if b.Target > r.Tokens || b.Room != b.Target-b.Fixed || b.Head+b.Tail+b.Summary+b.LedgerChars/4 > b.Room {
			t.Errorf("%d: budgets do not fit their room: %+v (trigger %d)", window, b, r.Tokens)
		}
		if i > 0 && (b.Summary < prev.Summary || b.Tail < prev.Tail || b.LedgerChars < prev.LedgerChars || b.AskChars < prev.AskChars) {
			t.Errorf("%d: a budget shrank with a larger window: %+v after %+v", window, b, prev)
		}
		prev = b
		switch window {
		case 4_096:
			if b.Summary > 400 || b.LedgerChars > 2_000 {
				t.Errorf("4K: summary %d tokens, ledger %d chars: too big for the window", b.Summary, b.LedgerChars)
			}
		case 1_048_576:
			if b.Summary != 10_000 || b.LedgerChars != MaxLedgerChars || b.Tail != 25_000 {
				t.Errorf("1M: %+v: want the full summary, ledger and tail", b)
			}
		}
	}
}

// On a small window a compaction shrinks the history to half the trigger, whatever the summary
// model writes; before budgets followed the window the summary and ledger alone outgrew it
// (the "~3728 → ~6019 tokens").
func TestSmallWindowCompactionShrinks(t *testing.T) {
	t.Parallel()
	verbose := &recordingSummarizer{reply: "## Goal\n" + fmt.Sprint(make([]int, 2000))} // ~4,000 chars
	for _, window := range []int{4_000, 6_000, 16_000} {
		c, _ := newTestCompressor(verbose, nil)
		model := Model{Name: "m", ContextLength: window}
		r, err := Resolve(c.Config, model)
		if err != nil {
			t.Fatal(err)
		}
		s := plantedSession(6)
		st := &State{}
		for round := 1; round <= 3; round++ {
			for i := 0; EstimateTokens(nil, s.active) < r.Tokens; i++ {
				codingTurn(s, 100*round+i, fmt.Sprintf("Round %d step %d: go on with internal/pkg%d.", round, i, i), "go test ./...", "ok\nexit code: 0")
			}
			plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: model, State: st})
			if err != nil {
				t.Fatalf("window %d round %d: %v", window, round, err)
			}
			if plan.TokensAfter >= plan.TokensBefore || plan.TokensAfter > r.Tokens/2 {
				t.Fatalf("window %d round %d: ~%d → ~%d tokens (trigger %d)", window, round, plan.TokensBefore, plan.TokensAfter, r.Tokens)
			}
			if why := Validate(plan.Messages); why != "" {
				t.Fatal(why)
			}
			s.commit(plan)
		}
	}
}
