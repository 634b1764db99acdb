package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

// TestRetentionScaledDown runs the retention benchmark end to end (real compressor, real SQLite
// file, both summarizer modes) on a shorter session with a lower trigger, so it still compacts
// five times or more.
func TestRetentionScaledDown(t *testing.T) {
	t.Parallel()
	var out, log bytes.Buffer
	cfg := RetentionConfig{Turns: 90, TriggerTokens: 36_000, OverheadMessages: 200, OverheadRuns: 3, Dir: t.TempDir(), Log: &log}
	err := RunRetention(context.Background(), cfg, &out)
	t.Log(log.String())
	if err != nil {
		t.Fatalf("RunRetention: %v", err)
	}

	var raw struct {
		Modes map[string]map[string]json.RawMessage `json:"modes"`
	}
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	if got := slices.Sorted(maps.Keys(raw.Modes)); !slices.Equal(got, []string{ModeFake, ModeFallback}) {
		t.Fatalf("modes %v, want fake and fallback", got)
	}
	for mode, fields := range raw.Modes {
		for _, k := range []string{"compactions", "facts_total", "facts_present", "facts_recoverable", "facts_lost",
			"user_asks_total", "user_asks_lost", "orphan_tool_pairs", "overhead_ms_p50", "overhead_ms_p99"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("modes.%s has no %q", mode, k)
			}
		}
		if string(fields["facts_lost"]) == "null" {
			t.Errorf("modes.%s.facts_lost is null, want a list", mode)
		}
	}

	var rep RetentionReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.VerifyOK {
		t.Errorf("verify_ok false: %v", rep.TargetsMissed)
	}
	for _, mode := range []string{ModeFake, ModeFallback} {
		m := rep.Modes[mode]
		if m.Compactions < RetentionMinCompactions {
			t.Errorf("%s: %d compactions, want ≥ %d", mode, m.Compactions, RetentionMinCompactions)
		}
		if m.OrphanToolPairs != 0 || m.OrphanToolPairsAfterCompactions != 0 {
			t.Errorf("%s: orphan tool pairs %d (final) %d (after compactions)", mode, m.OrphanToolPairs, m.OrphanToolPairsAfterCompactions)
		}
		for _, f := range m.FactsLost {
			t.Errorf("%s: lost %s %q (planted in turn %d, %s)", mode, f.Kind, f.Text, f.Turn, f.Where)
		}
		if m.UserAsksLost != 0 {
			t.Errorf("%s: %d user asks lost (turns %v)", mode, m.UserAsksLost, m.LostUserAsks)
		}
		if m.FactsTotal != len(m.Facts) || m.FactsPresent+m.FactsRecoverable+len(m.FactsLost) != m.FactsTotal {
			t.Errorf("%s: fact counts do not add up: %d total, %d present, %d recoverable, %d lost",
				mode, m.FactsTotal, m.FactsPresent, m.FactsRecoverable, len(m.FactsLost))
		}
		if m.UserAsksTotal != cfg.Turns || m.UserAsksPresent+m.UserAsksRecoverable+m.UserAsksLost != m.UserAsksTotal {
			t.Errorf("%s: ask counts do not add up: %+v", mode, m)
		}
		// Both paths of the check must be exercised: something stays in context, something is
		// only found by search.
		if m.FactsPresent == 0 || m.FactsRecoverable == 0 || m.UserAsksRecoverable == 0 {
			t.Errorf("%s: present %d, recoverable %d facts; %d asks recoverable: the run does not exercise both outcomes",
				mode, m.FactsPresent, m.FactsRecoverable, m.UserAsksRecoverable)
		}
	}
	if fb := rep.Modes[ModeFallback]; fb.FallbackSummaries != fb.Compactions {
		t.Errorf("fallback mode: %d fallback summaries in %d compactions", fb.FallbackSummaries, fb.Compactions)
	}
	if fk := rep.Modes[ModeFake]; fk.FallbackSummaries != 0 {
		t.Errorf("fake mode used the fallback %d times", fk.FallbackSummaries)
	}
}

// TestRetentionSessionPlantsEveryFact checks the generator: deterministic, every fact in a
// message of its planted turn, every ask in its user message, every call answered.
func TestRetentionSessionPlantsEveryFact(t *testing.T) {
	t.Parallel()
	for _, turns := range []int{12, 90, 400} {
		a := generateRetentionSession(7, turns)
		b := generateRetentionSession(7, turns)
		if len(a.turns) != turns || len(a.asks) != turns {
			t.Fatalf("%d turns: got %d turns, %d asks", turns, len(a.turns), len(a.asks))
		}
		for i := range a.turns {
			if !slices.EqualFunc(a.turns[i], b.turns[i], func(x, y store.Message) bool {
				return x.Content == y.Content && slices.Equal(x.ToolCalls, y.ToolCalls)
			}) {
				t.Fatalf("%d turns: turn %d differs between two generations with the same seed", turns, i)
			}
		}
		var all []store.Message
		for _, tm := range a.turns {
			all = append(all, tm...)
		}
		if n := orphanToolPairs(all); n != 0 {
			t.Errorf("%d turns: generated history has %d orphan tool pairs", turns, n)
		}
		seen := map[string]bool{}
		for _, f := range a.facts {
			if seen[f.Text] {
				t.Errorf("fact %q planted twice", f.Text)
			}
			seen[f.Text] = true
			found := false
			for _, m := range a.turns[f.Turn] {
				text := m.Content
				for _, tc := range m.ToolCalls {
					text += tc.Function.Arguments
				}
				found = found || strings.Contains(text, f.Text)
			}
			if !found {
				t.Errorf("%d turns: fact %q not in turn %d", turns, f.Text, f.Turn)
			}
		}
		for _, ask := range a.asks {
			if u := a.turns[ask.Turn][0]; u.Role != store.RoleUser || !strings.HasPrefix(u.Content, ask.Sentence) {
				t.Errorf("ask of turn %d is not the start of its user message", ask.Turn)
			}
		}
	}
}

func TestOrphanToolPairs(t *testing.T) {
	t.Parallel()
	call := func(ids ...string) store.Message {
		m := store.Message{Role: store.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, store.ToolCall{ID: id, Function: store.ToolFunction{Name: "terminal"}})
		}
		return m
	}
	result := func(id string) store.Message { return store.Message{Role: store.RoleTool, ToolCallID: id} }
	user := store.Message{Role: store.RoleUser, Content: "hi"}
	text := store.Message{Role: store.RoleAssistant, Content: "ok"}
	for _, tc := range []struct {
		name string
		ms   []store.Message
		want int
	}{
		{"empty", nil, 0},
		{"answered", []store.Message{user, call("a", "b"), result("a"), result("b"), text}, 0},
		{"result without call", []store.Message{user, result("a"), text}, 1},
		{"call without result", []store.Message{user, call("a", "b"), result("a"), text}, 1},
		{"result of another message", []store.Message{user, call("a"), result("a"), text, result("a")}, 1},
		{"result after a user turn", []store.Message{user, call("a"), user, result("a")}, 2},
		{"trailing call", []store.Message{user, call("a")}, 1},
	} {
		if got := orphanToolPairs(tc.ms); got != tc.want {
			t.Errorf("%s: %d orphans, want %d", tc.name, got, tc.want)
		}
	}
}

// BenchmarkRetentionCompress1000 measures one compaction of the first 1,000 messages of the
// retention session per summarizer mode (the model call included here; the report subtracts it).
func BenchmarkRetentionCompress1000(b *testing.B) {
	cfg := RetentionConfig{OverheadRuns: 1}.withDefaults()
	sess := generateRetentionSession(cfg.Seed, cfg.Turns)
	for _, mode := range []string{ModeFake, ModeFallback} {
		b.Run(mode, func(b *testing.B) {
			r, err := newRetentionRun(cfg, sess, mode, nil)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				var m RetentionMode
				if err := r.overhead1000(context.Background(), &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
