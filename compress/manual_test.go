package compress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// A compaction asked for on a small session in a big window says the truth: it makes a real
// summary or says there is nothing worth compacting, never that the window is too small; a
// session of two exchanges says which messages compaction keeps.
func TestManualCompactionOnSmallSessions(t *testing.T) {
	t.Parallel()
	big := Model{Name: "main-model", Provider: "fake", ContextLength: 128_000}
	// About 3,000 tokens: twelve exchanges of a few hundred characters.
	small := func() []store.Message {
		s := newSession(nil)
		for i := range 12 {
			s.append(store.Message{Role: store.RoleUser, Content: fmt.Sprintf("ask %d: %s", i, strings.Repeat("please look at the parser again. ", 15))},
				store.Message{Role: store.RoleAssistant, Content: fmt.Sprintf("answer %d: %s", i, strings.Repeat("the parser reads tokens one by one. ", 15))})
		}
		return s.active
	}
	cases := []struct {
		name    string
		msgs    []store.Message
		sum     Summarizer
		summary bool   // a plan with a real summary
		reason  string // else: the reason given
	}{
		{"small session, short summary", small(), &recordingSummarizer{}, true, ""},
		{"two exchanges", hist("u a u a"), &recordingSummarizer{}, false, "the session has 4 messages: the first 3 stay as they are and compaction needs 2 more"},
		{"three exchanges", hist("u a u a u a"), &recordingSummarizer{}, false, "a summary would not be smaller than what it replaces (1 older message, ~14 tokens)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			comp, _ := newTestCompressor(c.sum, nil)
			plan, err := comp.Compress(context.Background(), Request{SessionID: "sess", Messages: c.msgs, Model: big, State: &State{}, Force: true})
			for _, n := range plan.Notices {
				if strings.Contains(n, "too small") {
					t.Errorf("notice %q", n)
				}
			}
			if c.summary {
				if err != nil || plan.Rung == RungPointer || plan.Compacted == 0 || plan.ActiveTokens() >= plan.FixedTokens+plan.TokensBefore {
					t.Fatalf("plan rung %q, %d compacted, %d → %d tokens, err %v", plan.Rung, plan.Compacted, plan.TokensBefore, plan.TokensAfter, err)
				}
				return
			}
			var why *NothingError
			if !errors.As(err, &why) || !errors.Is(err, ErrNothingToCompress) || !strings.Contains(why.Reason, c.reason) {
				t.Fatalf("err %v (rung %q); want nothing to compact: %q", err, plan.Rung, c.reason)
			}
		})
	}
}
