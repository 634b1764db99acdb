package compress

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPreflight(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	thr := Resolution{Tokens: 100_000, EffectiveWindow: 200_000, Model: Model{Name: "m", ContextLength: 200_000}}
	cool := State{CooldownUntil: t0.Add(time.Minute), CooldownClass: FailTimeout}
	tests := []struct {
		name     string
		cfg      func(*Config)
		st       State
		in       PreflightInput
		action   Action
		source   string
		tokens   int
		msgHas   []string
		stAfter  func(State) bool
		reasonIs string
	}{
		{name: "under the trigger", in: PreflightInput{Estimate: 50_000}, action: Send, source: "estimate", tokens: 50_000},
		{name: "estimate over the trigger", in: PreflightInput{Estimate: 100_000}, action: Compact, source: "estimate", tokens: 100_000},
		{name: "real usage first: anchored count plus growth", st: State{AnchorPrompt: 98_000, AnchorEstimate: 70_000},
			in: PreflightInput{Estimate: 80_000}, action: Compact, source: "usage", tokens: 108_000},
		{name: "real usage says it fits where the estimate does not", st: State{AnchorPrompt: 60_000, AnchorEstimate: 110_000},
			in: PreflightInput{Estimate: 112_000}, action: Send, source: "usage", tokens: 62_000},
		{name: "noisy estimate after a fitting prompt defers", st: State{AnchorPrompt: 99_000, AnchorEstimate: 95_000},
			in: PreflightInput{Estimate: 99_000}, action: Send, source: "usage", tokens: 103_000, reasonIs: "deferred"},
		{name: "right after a compaction: wait for real usage", st: State{AwaitingRealUsage: true, AnchorPrompt: 150_000},
			in: PreflightInput{Estimate: 120_000}, action: Send, source: "estimate", tokens: 120_000, reasonIs: "deferred"},
		{name: "cooldown blocks and tells the user", st: cool, in: PreflightInput{Estimate: 150_000}, action: Send, msgHas: []string{"timeout"}},
		{name: "two ineffective compactions stop automatic compaction", st: State{IneffectiveCount: 2},
			in: PreflightInput{Estimate: 150_000}, action: Send, msgHas: []string{"/compress", "/new", "did not bring"}},
		{name: "two fallbacks in a row stop automatic compaction", st: State{FallbackStreak: 2},
			in: PreflightInput{Estimate: 150_000}, action: Send, msgHas: []string{"/compress", "/new", "fallback"}},
		{name: "manual compaction runs even when blocked", st: State{IneffectiveCount: 5},
			in: PreflightInput{Estimate: 10, Force: true}, action: Compact},
		{name: "provider overflow ignores anti-thrash", st: State{IneffectiveCount: 3},
			in: PreflightInput{Estimate: 10, ProviderOverflow: true}, action: Compact},
		{name: "provider overflow ignores a cooldown once", st: cool, in: PreflightInput{Estimate: 10, ProviderOverflow: true}, action: Compact,
			stAfter: func(s State) bool { return s.OverflowBypassUsed && !s.CooldownUntil.IsZero() }},
		{name: "second overflow during the cooldown compacts mechanically, never ends the turn", st: func() State { s := cool; s.OverflowBypassUsed = true; return s }(),
			in: PreflightInput{Estimate: 10, ProviderOverflow: true}, action: Compact, reasonIs: "mechanical"},
		{name: "blocked but over the window: compacts", st: State{FallbackStreak: 2},
			in: PreflightInput{Estimate: 210_000}, action: Compact, reasonIs: "window"},
		{name: "blocked during a cooldown but over the window: compacts", st: cool,
			in: PreflightInput{Estimate: 210_000}, action: Compact, reasonIs: "window"},
		{name: "told once that compaction is blocked", st: State{FallbackStreak: 2, WarnedBlocked: true},
			in: PreflightInput{Estimate: 150_000}, action: Send, stAfter: func(s State) bool { return s.WarnedBlocked }},
		{name: "attempts exhausted with overflow: fail closed", in: PreflightInput{Estimate: 150_000, ProviderOverflow: true, Attempts: 3},
			action: FailClosed, msgHas: []string{"/compress", "/new"}},
		{name: "attempts exhausted without overflow: send and let the provider judge", in: PreflightInput{Estimate: 150_000, Attempts: 3}, action: Send},
		{name: "system events never compress", in: PreflightInput{Estimate: 150_000, SystemEvent: true}, action: BudgetExceeded},
		{name: "system event under budget", in: PreflightInput{Estimate: 50, SystemEvent: true}, action: Send},
		{name: "disabled: warn once when over the window", cfg: func(c *Config) { c.Enabled = false },
			in: PreflightInput{Estimate: 250_000}, action: Send, msgHas: []string{"disabled"},
			stAfter: func(s State) bool { return s.WarnedOverWindow }},
		{name: "one message: nothing to compact", in: PreflightInput{Estimate: 150_000, Messages: 1}, action: Send},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			g := Gate{Config: cfg, Now: func() time.Time { return t0 }, Hints: Hints{Compact: "/compress <topic>", Fresh: "/new"}}
			st := tt.st
			in := tt.in
			in.Threshold = thr
			if in.Messages == 0 {
				in.Messages = 10
			}
			d := g.Preflight(&st, in)
			if d.Action != tt.action {
				t.Fatalf("action %s, want %s (reason %q)", d.Action, tt.action, d.Reason)
			}
			if tt.source != "" && (d.Source != tt.source || d.Tokens != tt.tokens) {
				t.Fatalf("measured %d from %s, want %d from %s", d.Tokens, d.Source, tt.tokens, tt.source)
			}
			for _, s := range tt.msgHas {
				if !strings.Contains(d.UserMessage, s) {
					t.Errorf("user message %q lacks %q", d.UserMessage, s)
				}
			}
			if tt.reasonIs != "" && !strings.Contains(d.Reason, tt.reasonIs) {
				t.Errorf("reason %q lacks %q", d.Reason, tt.reasonIs)
			}
			if tt.msgHas == nil && d.UserMessage != "" && tt.name == "told once that compaction is blocked" {
				t.Errorf("told again: %q", d.UserMessage)
			}
			if tt.stAfter != nil && !tt.stAfter(st) {
				t.Errorf("state after: %+v", st)
			}
		})
	}
}

func TestDisabledWarnsOnce(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Enabled = false
	g := Gate{Config: cfg}
	var st State
	in := PreflightInput{Threshold: Resolution{Tokens: 10, Model: Model{ContextLength: 100}}, Messages: 5, Estimate: 500}
	if d := g.Preflight(&st, in); d.UserMessage == "" {
		t.Fatal("first over-window request not warned")
	}
	if d := g.Preflight(&st, in); d.UserMessage != "" {
		t.Fatalf("warned twice: %q", d.UserMessage)
	}
}

func TestAfterResponseAntiThrash(t *testing.T) {
	t.Parallel()
	g := Gate{Config: DefaultConfig()}
	var st State
	thr := 100_000
	compacted := func() { st.VerifyCompaction, st.AwaitingRealUsage, st.AnchorPrompt = true, true, 0 }

	compacted()
	g.AfterResponse(&st, thr, 120_000, 500, 118_000)
	if st.IneffectiveCount != 1 || st.VerifyCompaction || st.AwaitingRealUsage || st.AnchorPrompt != 120_000 {
		t.Fatalf("after first ineffective compaction: %+v", st)
	}
	// An ordinary response over the trigger (no compaction armed) does not count.
	g.AfterResponse(&st, thr, 125_000, 500, 120_000)
	if st.IneffectiveCount != 1 {
		t.Fatalf("unarmed response counted: %+v", st)
	}
	compacted()
	g.AfterResponse(&st, thr, 110_000, 500, 100_000)
	if blocked, why := g.Blocked(&st); !blocked || !strings.Contains(why, "did not bring") {
		t.Fatalf("two ineffective compactions not blocking: %v %q", blocked, why)
	}
	// A prompt under the trigger resets the counter.
	g.AfterResponse(&st, thr, 40_000, 500, 40_000)
	if st.IneffectiveCount != 0 {
		t.Fatalf("counter not reset: %+v", st)
	}
	// The armed flags are consumed even when the response carries no usage.
	compacted()
	g.AfterResponse(&st, thr, 0, 0, 0)
	if st.VerifyCompaction || st.AwaitingRealUsage || st.IneffectiveCount != 0 {
		t.Fatalf("flags not consumed: %+v", st)
	}
}

func TestGatewayHygiene(t *testing.T) {
	t.Parallel()
	anchored := State{AnchorPrompt: 160_000, AnchorEstimate: 150_000}
	tests := []struct {
		name          string
		messages, est int
		st            State
		due           bool
		source        string
		tokens        int
	}{
		{"the usage anchor plus growth", 10, 161_000, anchored, true, "usage", 171_000},
		{"the anchor counts though the estimate is far below", 10, 20_000, State{AnchorPrompt: 175_000, AnchorEstimate: 100_000}, true, "usage", 175_000},
		{"no growth is no shrinking", 10, 140_000, anchored, false, "usage", 160_000},
		{"a compaction awaits real usage: the estimate", 10, 120_000, State{AnchorPrompt: 190_000, AnchorEstimate: 180_000, AwaitingRealUsage: true}, false, "estimate", 120_000},
		{"no anchor: the estimate", 10, 169_999, State{}, false, "estimate", 169_999},
		{"85% exactly", 10, 170_000, State{}, true, "estimate", 170_000},
		{"fewer than 4 messages never", 3, 199_000, State{}, false, "estimate", 199_000},
	}
	for _, tt := range tests {
		h := GatewayHygiene(0, 200_000, tt.messages, tt.est, tt.st)
		if h.Due != tt.due || h.Source != tt.source || h.Tokens != tt.tokens || h.Limit != 170_000 {
			t.Errorf("%s: got %+v", tt.name, h)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	st := State{CompressionCount: 3, IneffectiveCount: 1, FallbackStreak: 1, CooldownUntil: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		CooldownClass: FailTimeout, TimeoutStrikes: 2, AnchorPrompt: 5, AnchorEstimate: 6, AwaitingRealUsage: true, VerifyCompaction: true}
	p := Plan{State: st}
	raw, err := json.Marshal(map[string]json.RawMessage{"other": json.RawMessage(`1`), StateConfigKey: p.statePatch()[StateConfigKey]})
	if err != nil {
		t.Fatal(err)
	}
	got, err := StateFromModelConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("round trip: got %+v want %+v", got, st)
	}
	if _, err := StateFromModelConfig(json.RawMessage(`[1]`)); err == nil {
		t.Fatal("bad model_config accepted")
	}
}

// A message names only the remedies of the command that shows it: a one-shot command has no
// slash commands to offer.
func TestGateMessagesFitTheCommand(t *testing.T) {
	t.Parallel()
	thr := Resolution{Tokens: 100_000, EffectiveWindow: 200_000, Model: Model{Name: "m", ContextLength: 200_000}}
	in := PreflightInput{Threshold: thr, Messages: 10, Estimate: 150_000, ProviderOverflow: true, Attempts: 3}
	for _, tt := range []struct {
		hints     Hints
		has, lack []string
	}{
		{Hints{Compact: "/compress <topic>", Fresh: "/new"}, []string{"/compress <topic>", "/new"}, nil},
		{Hints{Fresh: "`spool run` without --continue"}, []string{"spool run` without --continue"}, []string{"/compress", "/new"}},
		{Hints{}, nil, []string{"/compress", "/new", "To go on"}},
	} {
		st := State{}
		d := Gate{Config: DefaultConfig(), Hints: tt.hints}.Preflight(&st, in)
		if d.Action != FailClosed {
			t.Fatalf("action %s", d.Action)
		}
		for _, s := range tt.has {
			if !strings.Contains(d.UserMessage, s) {
				t.Errorf("%+v: %q lacks %q", tt.hints, d.UserMessage, s)
			}
		}
		for _, s := range tt.lack {
			if strings.Contains(d.UserMessage, s) {
				t.Errorf("%+v: %q has %q", tt.hints, d.UserMessage, s)
			}
		}
	}
}
