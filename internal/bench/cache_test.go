package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// TestCacheBenchScaledDown runs the steady scenario on both provider cache models: spool keeps
// close to the ideal ceiling, while an agent that renders its system prompt again at every
// compaction, and one that renders it every turn, score visibly lower against the same ceiling
// (the old ceiling, taken from what the agent itself kept after a compaction, gave the rebuild
// agent ~1.0).
func TestCacheBenchScaledDown(t *testing.T) {
	t.Parallel()
	rep, err := RunCache(context.Background(), CacheConfig{Turns: 80, Providers: []string{"openai", "anthropic"}, Scenarios: []string{ScenarioSteady}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"openai", "anthropic"} {
		p := rep.Scenarios[ScenarioSteady][name]
		if p == nil || p.Naive == nil || p.Rebuild == nil {
			t.Fatalf("no %s figures: %+v", name, p)
		}
		s := p.Spool
		t.Logf("%s: spool %+v\nrebuild %+v\nnaive %+v", name, s, *p.Rebuild, *p.Naive)
		if s.Requests <= 80 || s.PromptTokens == 0 || s.CachedTokens == 0 {
			t.Errorf("%s: %d requests for 80 turns, %d prompt, %d cached", name, s.Requests, s.PromptTokens, s.CachedTokens)
		}
		if s.Compactions == 0 || p.Rebuild.Compactions == 0 {
			t.Errorf("%s: the session never compacted", name)
		}
		if s.Efficiency <= 0 || s.Efficiency > 1 || s.CachedTokens > s.CeilingTokens {
			t.Errorf("%s: efficiency %.4f (%d cached of a %d ceiling): the ceiling is not a ceiling", name, s.Efficiency, s.CachedTokens, s.CeilingTokens)
		}
		// The rebuild agent misses its system prompt (about 2,000 tokens) after every compaction
		// but the first, where spool misses the end of it too (its compaction note): visibly
		// more than spool, whose misses are what the provider's accounting cannot serve.
		rebuildMiss, spoolMiss := p.Rebuild.CeilingTokens-p.Rebuild.CachedTokens, s.CeilingTokens-s.CachedTokens
		if p.Rebuild.Efficiency > s.Efficiency-0.001 || rebuildMiss-spoolMiss < int64(p.Rebuild.Compactions-1)*1000 {
			t.Errorf("%s: the agent that rebuilds its prompt at every compaction scores %.4f (%d tokens missed), spool %.4f (%d missed): not visibly lower",
				name, p.Rebuild.Efficiency, rebuildMiss, s.Efficiency, spoolMiss)
		}
		if p.Naive.Efficiency > s.Efficiency-0.2 {
			t.Errorf("%s: the naive agent (%.3f) is not clearly worse than spool (%.3f)", name, p.Naive.Efficiency, s.Efficiency)
		}
		for reason := range s.CacheBreaks.Reasons {
			if !strings.HasPrefix(reason, "compaction") {
				t.Errorf("%s: a cache break not caused by a compaction: %q", name, reason)
			}
		}
	}
}

// TestCacheBenchPauses runs the pause scenarios: calls after a pause longer than the lifetime
// have no ceiling, and the cached share falls with them.
func TestCacheBenchPauses(t *testing.T) {
	t.Parallel()
	rep, err := RunCache(context.Background(), CacheConfig{Turns: 45, Providers: []string{"openai", "anthropic"}, Scenarios: []string{ScenarioPause5m, ScenarioPause1h}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []string{ScenarioPause5m, ScenarioPause1h} {
		for _, name := range []string{"openai", "anthropic"} {
			p := rep.Scenarios[sc][name]
			if p == nil || p.Naive != nil {
				t.Fatalf("%s %s: %+v", sc, name, p)
			}
			s := p.Spool
			t.Logf("%s %s: %+v", sc, name, s)
			// pause-5m: turns 19 and 39 follow a 6-minute pause, past OpenAI's 5 minutes but not
			// the 1-hour TTL Anthropic asks for; pause-1h: turn 39 follows 61 minutes.
			want := 0
			switch {
			case sc == ScenarioPause5m && name == "openai":
				want = 2
			case sc == ScenarioPause1h:
				want = 1
			}
			if s.AfterPause != want {
				t.Errorf("%s %s: %d calls after a long pause, want %d", sc, name, s.AfterPause, want)
			}
			if s.CachedTokens > s.CeilingTokens || s.Efficiency <= 0 {
				t.Errorf("%s %s: %d cached of a %d ceiling", sc, name, s.CachedTokens, s.CeilingTokens)
			}
		}
	}
}

// TestIdealCeiling checks the ceiling's rules on hand-made calls.
func TestIdealCeiling(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	big := strings.Repeat("x", 8_000) // 2,000 fake tokens
	tools := []provider.Tool{{Name: "read_file", Parameters: []byte(`{}`)}}
	msgs := []provider.Message{{Role: store.RoleUser, Content: big}, {Role: store.RoleAssistant, Content: big}, {Role: store.RoleUser, Content: big}}
	req := func(system string, n int) provider.Request {
		return provider.Request{Model: "m", System: system, Tools: tools, Messages: msgs[:n]}
	}
	// After a compaction: the first message kept, then a summary where the rest was.
	compacted := func(system string) provider.Request {
		r := req(system, 1)
		r.Messages = append(r.Messages[:1:1], provider.Message{Role: store.RoleAssistant, Content: "summary " + big})
		return r
	}
	call := func(r provider.Request, at time.Duration, compacted bool, head int) metered {
		return metered{req: r, sent: r, at: t0.Add(at), compacted: compacted, headKept: head}
	}
	rewritten := func(c metered, system string) metered {
		c.sent.System = system
		return c
	}
	for _, tc := range []struct {
		name       string
		prev, cur  metered
		lifetime   time.Duration
		min, max   int64
		wantZero   bool
		wantAtMost string
	}{
		{name: "grown history: the whole previous prompt", prev: call(req("sys", 2), 0, false, 0), cur: call(req("sys", 3), time.Minute, false, 0), min: 4000, max: 4100},
		{name: "after a pause past the lifetime", prev: call(req("sys", 2), 0, false, 0), cur: call(req("sys", 3), 6*time.Minute, false, 0), wantZero: true},
		{name: "compaction that kept the first message", prev: call(req("sys", 2), 0, false, 0), cur: call(compacted("sys"), time.Minute, true, 1), min: 2000, max: 2100},
		{name: "compaction that kept nothing in place, but the agent sent the first message again", prev: call(req("sys", 2), 0, false, 0), cur: call(compacted("sys"), time.Minute, true, 0), min: 2000, max: 2100},
		{name: "compaction that kept nothing in place and changed the first message", prev: call(req("sys", 2), 0, false, 0), cur: call(provider.Request{Model: "m", System: "sys", Tools: tools, Messages: []provider.Message{{Role: store.RoleUser, Content: "new " + big}}}, time.Minute, true, 0), wantZero: true},
		{name: "a system prompt changed for no input", prev: call(req("sys", 2), 0, false, 0), cur: call(req("xsys", 3), time.Minute, false, 0), min: 4000, max: 4100},
		{name: "a rewrite on the wire", prev: call(req("sys", 2), 0, false, 0), cur: rewritten(call(req("sys", 3), time.Minute, false, 0), "xsys"), min: 4000, max: 4100},
		{name: "a changed tool list", prev: call(req("sys", 2), 0, false, 0), cur: call(provider.Request{Model: "m", System: "sys", Messages: msgs}, time.Minute, false, 0), wantZero: true},
	} {
		got := idealCeiling("anthropic", []metered{tc.prev, tc.cur}, 1, cmpOr(tc.lifetime, 5*time.Minute))
		if tc.wantZero && got != 0 || !tc.wantZero && (got < tc.min || got > tc.max) {
			t.Errorf("%s: ceiling %d, want %v or [%d, %d]", tc.name, got, tc.wantZero, tc.min, tc.max)
		}
		if o := idealCeiling("openai", []metered{tc.prev, tc.cur}, 1, cmpOr(tc.lifetime, 5*time.Minute)); o > got || o%openAIBlockToken != 0 {
			t.Errorf("%s: openai ceiling %d: not whole blocks at most %d", tc.name, o, got)
		}
	}
}

func cmpOr(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

// The Responses API run: spool replays every answer's reasoning items byte for byte and stays at
// the ceiling of an ideal agent that does the same (the fake caches what it generated); the
// same session without reasoning replay sends less but reaches far less of that ceiling.
func TestCacheBenchResponsesReplay(t *testing.T) {
	t.Parallel()
	rep, err := RunCache(context.Background(), CacheConfig{Turns: 60, Providers: []string{"responses"}, Scenarios: []string{ScenarioSteady}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Scenarios[ScenarioSteady]["responses"]
	if p == nil || p.NoReplay == nil || p.Naive != nil {
		t.Fatalf("responses figures: %+v", p)
	}
	s, off := p.Spool, *p.NoReplay
	t.Logf("replay %+v\nno-replay %+v", s, off)
	if s.Efficiency < CacheTarget || s.CachedTokens > s.CeilingTokens {
		t.Errorf("with reasoning replay: efficiency %.4f (%d cached of a %d ceiling)", s.Efficiency, s.CachedTokens, s.CeilingTokens)
	}
	if off.Efficiency > s.Efficiency-0.2 || off.PromptTokens >= s.PromptTokens {
		t.Errorf("without replay: efficiency %.4f (spool %.4f), %d prompt tokens (spool %d): dropping the reasoning does not show",
			off.Efficiency, s.Efficiency, off.PromptTokens, s.PromptTokens)
	}
}

// An MCP server whose tool list changes every 50 turns: each change is one cache break at the
// tools layer whose stored record names the server, and the ceiling of that call is 0, so
// spool stays at the ceiling while the cached share pays for the changes.
func TestCacheBenchMCPToolChanges(t *testing.T) {
	t.Parallel()
	rep, err := RunCache(context.Background(), CacheConfig{Turns: 110, Providers: []string{"openai"}, Scenarios: []string{ScenarioMCPTools}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Scenarios[ScenarioMCPTools]["openai"].Spool
	t.Logf("%+v", s)
	if got := s.CacheBreaks.Reasons["tools at tools"]; got != 2 {
		t.Errorf("%d tools breaks in 110 turns, want 2 (turns 50 and 100): %v", got, s.CacheBreaks.Reasons)
	}
	named := 0
	for d, n := range s.CacheBreaks.Details {
		if strings.HasPrefix(d, "tools of MCP server docs changed (") {
			named += n
		}
	}
	if named != 2 {
		t.Errorf("break details %v do not name the MCP server twice", s.CacheBreaks.Details)
	}
	if s.Efficiency < CacheTarget || s.CachedTokens > s.CeilingTokens {
		t.Errorf("efficiency %.4f (%d cached of a %d ceiling)", s.Efficiency, s.CachedTokens, s.CeilingTokens)
	}
}

// The control: an agent that renders the time into its prompt every turn, run in spool's
// place, must come out as a missed target — the benchmark can report a bad result.
func TestCacheBenchControlFails(t *testing.T) {
	t.Parallel()
	rep, err := RunCache(context.Background(), CacheConfig{Turns: 30, Providers: []string{"openai"}, Scenarios: []string{ScenarioSteady}, Control: true, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Scenarios[ScenarioSteady]["openai"]
	if rep.TargetsMet || len(rep.TargetsMissed) != 1 || !strings.Contains(rep.TargetsMissed[0], "(control)") || !p.Control {
		t.Fatalf("control run: targets met %v, missed %q, efficiency %.4f", rep.TargetsMet, rep.TargetsMissed, p.Spool.Efficiency)
	}
	if p.Spool.Efficiency > 0.8 {
		t.Errorf("control efficiency %.4f: the rewrite did not break the cache", p.Spool.Efficiency)
	}
}

// The Responses run with compression.engine provider: every compaction is the provider's
// (the fake's /responses/compact), its window replayed on the summary row, and spool stays
// within the target of the ideal ceiling.
func TestCacheBenchProviderCompaction(t *testing.T) {
	t.Parallel()
	rep, err := RunCache(context.Background(), CacheConfig{Turns: 120, Providers: []string{StyleResponsesCompact}, Scenarios: []string{ScenarioSteady}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Scenarios[ScenarioSteady][StyleResponsesCompact]
	if p == nil || p.Spool.Compactions == 0 || p.Spool.ProviderCompactions != p.Spool.Compactions {
		t.Fatalf("figures %+v: want every compaction written by the provider", p)
	}
	if p.Spool.Efficiency < CacheTarget {
		t.Errorf("efficiency %.4f < %.2f: %+v", p.Spool.Efficiency, CacheTarget, p.Spool)
	}
}
