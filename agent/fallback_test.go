package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/anthropic"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
)

// quickRetry retries like the real client wrapper but without real pauses worth the name; the
// verdicts below count requests, never time.
var quickRetry = provider.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}

func withFallback(f agent.Fallback, clock func() time.Time, cooldown time.Duration) opt {
	return func(d *agent.Deps) {
		d.Fallbacks = append(d.Fallbacks, f)
		d.Now = clock
		d.Config.FallbackCooldown = cooldown
	}
}

// The main model (window 200,000) is overloaded through all its retries: the turn moves to the
// fallback, whose window (12,000) is smaller than the history, so the history is compacted
// before the fallback is asked — the fallback never sees a prompt it would refuse. The switch
// is recorded (request record, result, cache break naming both models); the next turn within
// the cooldown starts on the fallback; after the cooldown the main model answers again.
func TestFallbackCompactsForSmallerWindowAndCoolsDown(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	clock := fake.NewManualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	main := newRecorder(t, fake.Config{Now: clock.Now})
	small := newRecorder(t, fake.Config{Now: clock.Now, ContextWindow: 12_000})
	a := newAgent(t, st, provider.WithRetry(openaiClient(t, main.URL), quickRetry), stdTools(),
		withCompression(200_000, 0),
		withFallback(agent.Fallback{Name: "small", Client: openaiClient(t, small.URL), Model: "small-model", ContextLength: 12_000}, clock.Now, 5*time.Minute))

	// About 16,000 tokens of history on the main model: more than the fallback's window.
	sid := ""
	filler := strings.Repeat("the quick brown fox jumps over the lazy dog ", 70) // ~3,000 bytes
	for i := range 20 {
		res := run(t, a, sid, fmt.Sprintf("SAY noted %d\nnote %d: %s", i, i, filler))
		sid = res.SessionID
		if res.Fallback != "" || res.Compactions != 0 {
			t.Fatalf("turn %d: fallback %q, %d compactions on the main model", i, res.Fallback, res.Compactions)
		}
		clock.Advance(10 * time.Second)
	}
	if got := len(small.bodies()); got != 0 {
		t.Fatalf("the fallback was asked %d times while the main model worked", got)
	}

	mainBefore := len(main.bodies())
	main.Model.FailNext(3, fake.Fault{Kind: fake.FaultOverloaded}) // every retry
	var notices []string
	res, err := a.Run(context.Background(), sid, "SAY answered by whoever is up", agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
	if err != nil {
		t.Fatalf("turn with the main model down: %v", err)
	}
	if got := len(main.bodies()) - mainBefore; got != 3 {
		t.Errorf("the main model was asked %d times, want 3 (the retries, then the fallback)", got)
	}
	if res.Reply != "answered by whoever is up" || res.Fallback != "small" || res.Model != "small-model" {
		t.Fatalf("reply %q from %q (fallback %q)", res.Reply, res.Model, res.Fallback)
	}
	if res.Compactions != 1 {
		t.Fatalf("%d compactions before the fallback's request, want 1 (its window is smaller than the history)", res.Compactions)
	}
	if s := small.Model.Stats(); s.Failed != 0 || s.Requests == 0 {
		t.Errorf("fallback stats %+v: it must never be sent a prompt over its window", s)
	}
	if !hasNotice(notices, "overloaded", "fallback small (small-model)") {
		t.Errorf("notices %q do not say the main model failed and the fallback answers", notices)
	}
	recs, err := st.Requests(context.Background(), sid, 1)
	if err != nil || len(recs) != 1 {
		t.Fatal(recs, err)
	}
	if recs[0].Fallback != "small" || recs[0].Model != "small-model" {
		t.Errorf("request record: model %q fallback %q", recs[0].Model, recs[0].Fallback)
	}
	if b := findBreak(res.Breaks, "fallback"); b == nil || !strings.Contains(b.Detail, "fake-model -> small-model") || !strings.Contains(b.Detail, "overloaded") {
		t.Errorf("cache breaks %+v do not name the switch to the fallback", res.Breaks)
	}

	// Within the cooldown the next turn starts on the fallback: the main model is not asked.
	clock.Advance(time.Minute)
	mainBefore = len(main.bodies())
	res = run(t, a, sid, "SAY still on the fallback")
	if res.Fallback != "small" || len(main.bodies()) != mainBefore {
		t.Errorf("within the cooldown: fallback %q, main asked %d times", res.Fallback, len(main.bodies())-mainBefore)
	}

	// After the cooldown the main model is tried, answers, and the break says so.
	clock.Advance(5 * time.Minute)
	res = run(t, a, sid, "SAY the main model is back")
	if res.Fallback != "" || res.Model != "fake-model" || res.Reply != "the main model is back" {
		t.Fatalf("after the cooldown: reply %q from %q (fallback %q)", res.Reply, res.Model, res.Fallback)
	}
	if b := findBreak(res.Breaks, "fallback"); b == nil || !strings.Contains(b.Detail, "back to the main model from fallback small") {
		t.Errorf("cache breaks %+v do not name the return to the main model", res.Breaks)
	}
	// The stored break names the switch too (what /usage and sessions show read).
	recs, _ = st.Requests(context.Background(), sid, 1)
	if recs[0].Fallback != "" || recs[0].Break == nil || recs[0].Break.Reason != "fallback" {
		t.Errorf("last request record %+v (break %+v)", recs[0], recs[0].Break)
	}
}

// Per class: what falls back and what does not. A bad key (401) does not: it is the user's to
// fix, and the fallback is never asked. The main model on the Anthropic wire is overloaded with
// its real 529.
func TestFallbackPerClass(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		wire      string
		fault     fake.FaultKind
		fallsBack bool
		class     provider.Class
	}{
		{"openai 503 overloaded", "openai", fake.FaultOverloaded, true, ""},
		{"anthropic 529 overloaded", "anthropic", fake.FaultOverloaded, true, ""},
		{"500 server", "openai", fake.FaultServer, true, ""},
		{"quota", "openai", fake.FaultQuota, true, ""},
		{"model not found", "openai", fake.FaultModelNotFound, true, ""},
		{"anthropic model not found", "anthropic", fake.FaultModelNotFound, true, ""},
		{"401 auth", "openai", fake.FaultAuth, false, provider.ClassAuth},
		{"400 bad request", "openai", fake.FaultBadRequest, false, provider.ClassBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, _ := newStore(t)
			clock := fake.NewManualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
			main := newRecorder(t, fake.Config{Now: clock.Now})
			fb := newRecorder(t, fake.Config{Now: clock.Now})
			var mc provider.Client = openaiClient(t, main.URL)
			if tc.wire == "anthropic" {
				c, err := anthropic.New(anthropic.Config{BaseURL: main.URL, APIKey: "sk-ant-test"})
				if err != nil {
					t.Fatal(err)
				}
				mc = c
			}
			a := newAgent(t, st, provider.WithRetry(mc, quickRetry), nil,
				withFallback(agent.Fallback{Name: "backup", Client: openaiClient(t, fb.URL), Model: "backup-model"}, clock.Now, time.Minute))
			main.Model.FailNext(3, fake.Fault{Kind: tc.fault})
			res, err := a.Run(context.Background(), "", "SAY hello", agent.RunOptions{})
			if !tc.fallsBack {
				if err == nil || provider.ClassOf(err) != tc.class {
					t.Fatalf("err = %v, want class %s", err, tc.class)
				}
				if n := len(fb.bodies()); n != 0 {
					t.Errorf("the fallback was asked %d times after a %s failure", n, tc.class)
				}
				// The user's message is stored; the session works once the key is fixed.
				if h := history(t, st, res.SessionID); len(h) != 1 || h[0].Role != store.RoleUser {
					t.Errorf("history after the failure: %v", roles(h))
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if res.Fallback != "backup" || res.Reply != "hello" || len(fb.bodies()) != 1 {
				t.Errorf("fallback %q reply %q, fallback asked %d times", res.Fallback, res.Reply, len(fb.bodies()))
			}
		})
	}
}

// Every model down: the turn fails with the last model's error after trying each once, and
// says which ones it tried.
func TestFallbackAllDown(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	clock := fake.NewManualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	main := newRecorder(t, fake.Config{Now: clock.Now})
	fb := newRecorder(t, fake.Config{Now: clock.Now})
	a := newAgent(t, st, openaiClient(t, main.URL), nil,
		withFallback(agent.Fallback{Name: "backup", Client: openaiClient(t, fb.URL), Model: "backup-model"}, clock.Now, time.Minute))
	main.Model.FailNext(1, fake.Fault{Kind: fake.FaultServer})
	fb.Model.FailNext(1, fake.Fault{Kind: fake.FaultQuota})
	var notices []string
	_, err := a.Run(context.Background(), "", "SAY hello", agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
	if provider.ClassOf(err) != provider.ClassQuota {
		t.Fatalf("err = %v, want the fallback's quota error", err)
	}
	if len(main.bodies()) != 1 || len(fb.bodies()) != 1 {
		t.Errorf("main asked %d times, fallback %d: want once each", len(main.bodies()), len(fb.bodies()))
	}
	if !hasNotice(notices, "server", "fallback backup") {
		t.Errorf("notices %q", notices)
	}
}

func hasNotice(notices []string, subs ...string) bool {
	for _, n := range notices {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(n, s)
		}
		if all {
			return true
		}
	}
	return false
}

func findBreak(bs []store.CacheBreak, reason string) *store.CacheBreak {
	for i := range bs {
		if bs[i].Reason == reason {
			return &bs[i]
		}
	}
	return nil
}

// Two agents over the same models sharing their cooldowns (spool serve's runner and queue): a
// failure one of them saw makes the other start on the fallback too.
func TestFallbackSharedCooldowns(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	clock := fake.NewManualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	main := newRecorder(t, fake.Config{Now: clock.Now})
	fb := newRecorder(t, fake.Config{Now: clock.Now})
	shared := agent.NewCooldowns()
	mk := func() *agent.Agent {
		return newAgent(t, st, openaiClient(t, main.URL), nil,
			withFallback(agent.Fallback{Name: "backup", Client: openaiClient(t, fb.URL), Model: "backup-model"}, clock.Now, time.Minute),
			func(d *agent.Deps) { d.Cooldowns = shared })
	}
	a, b := mk(), mk()
	main.Model.FailNext(1, fake.Fault{Kind: fake.FaultServer})
	if res := run(t, a, "", "SAY one"); res.Fallback != "backup" {
		t.Fatalf("first agent: fallback %q", res.Fallback)
	}
	before := len(main.bodies())
	if res := run(t, b, "", "SAY two"); res.Fallback != "backup" || len(main.bodies()) != before {
		t.Errorf("second agent: fallback %q, main asked %d times: the cooldown was not shared", res.Fallback, len(main.bodies())-before)
	}
	// A shared one sized for other models is refused.
	_, err := agent.New(agent.Deps{Store: st, Client: openaiClient(t, main.URL), Cooldowns: shared, Config: agent.Config{Model: "m"}})
	if err == nil {
		t.Error("cooldowns for two models accepted by an agent with one")
	}
}
