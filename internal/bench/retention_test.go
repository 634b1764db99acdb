package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/store/storetest"
)

// TestRetentionScaledDown runs the retention benchmark end to end (spool's agent, real SQLite
// files, every engine) at one window on a shorter session that still compacts, and checks
// the report: every count adds up, every kind of planted fact is there, and the two control
// engines, which keep nothing of the middle, are reported losing facts. It checks the
// benchmark, not the compressor: the targets are the benchmark's verdict (verify_ok).
func TestRetentionScaledDown(t *testing.T) {
	t.Parallel()
	var out, log bytes.Buffer
	cfg := RetentionConfig{Turns: 90, Windows: []int{32_768}, OverheadRuns: -1, Dir: t.TempDir(), Log: &log}
	err := RunRetention(context.Background(), cfg, &out)
	t.Log(log.String())
	if err != nil && !errors.Is(err, ErrVerify) {
		t.Fatalf("RunRetention: %v", err)
	}
	var rep RetentionReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	if (err == nil) != rep.VerifyOK || (err == nil) != (len(rep.TargetsMissed) == 0) {
		t.Errorf("error %v but verify_ok %v, targets missed %v", err, rep.VerifyOK, rep.TargetsMissed)
	}
	if len(rep.Windows) != 1 || rep.Windows[0].ContextLength != 32_768 {
		t.Fatalf("windows %+v, want one of 32768 tokens", rep.Windows)
	}
	engines := rep.Windows[0].Engines
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range engines {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, slices.Sorted(slices.Values(RetentionEngines))) {
		t.Fatalf("engines %v, want %v", got, RetentionEngines)
	}
	for name, r := range engines {
		if r.Compactions == 0 {
			t.Errorf("%s: the session never compacted", name)
		}
		if r.FactsTotal != len(r.Facts) || r.FactsPresent+r.FactsRecoverable+len(r.FactsLost) != r.FactsTotal {
			t.Errorf("%s: fact counts do not add up: %d total, %d present, %d recoverable, %d lost",
				name, r.FactsTotal, r.FactsPresent, r.FactsRecoverable, len(r.FactsLost))
		}
		if r.UserAsksTotal != cfg.Turns || r.UserAsksPresent+r.UserAsksRecoverable+r.UserAsksLost != r.UserAsksTotal {
			t.Errorf("%s: ask counts do not add up: %+v", name, r)
		}
		if r.ConstraintsTotal < 10 || r.ConstraintsPresent+r.ConstraintsRecoverable+len(r.ConstraintsLost) != r.ConstraintsTotal {
			t.Errorf("%s: constraint counts do not add up: %d total, %d present, %d recoverable, %d lost",
				name, r.ConstraintsTotal, r.ConstraintsPresent, r.ConstraintsRecoverable, len(r.ConstraintsLost))
		}
		phases := map[string]int{}
		for _, f := range r.Facts {
			phases[f.Phase]++
			if !strings.Contains(f.Text, f.Key) {
				t.Errorf("%s: key %q is not part of fact %q", name, f.Key, f.Text)
			}
		}
		for _, p := range []string{PhaseStart, PhaseFirstExchange, PhaseSpread, PhasePreCompaction} {
			if phases[p] == 0 {
				t.Errorf("%s: no fact planted in phase %s (%v)", name, p, phases)
			}
		}
		if r.Requests <= r.Turns || r.ProbeRequestTokens == 0 || r.TargetTokens == 0 {
			t.Errorf("%s: %d requests for %d turns, probe %d tokens, target %d", name, r.Requests, r.Turns, r.ProbeRequestTokens, r.TargetTokens)
		}
	}
	// The controls keep nothing of the middle: the benchmark must see them lose facts (the old
	// scoring, which searched each fact's own sentence, reported 0 lost for a blanked summary).
	for _, c := range []string{ControlTailOnly, ControlBlankSummary} {
		r := engines[c]
		if len(r.FactsLost) == 0 {
			t.Errorf("%s: 0 facts lost in %d compactions: the benchmark cannot see a loss", c, r.Compactions)
		}
		// The control keeps no summary and no ledger: the user's corrections and constraints
		// must be reported lost, or the separate line could not show a bad result.
		if len(r.ConstraintsLost) == 0 || r.ConstraintsKeptPct >= engines[ModeFake].ConstraintsKeptPct {
			t.Errorf("%s: constraints kept %.1f%% (%d lost), the default compressor %.1f%%: the benchmark cannot see a loss",
				c, r.ConstraintsKeptPct, len(r.ConstraintsLost), engines[ModeFake].ConstraintsKeptPct)
		}
		if fk := engines[ModeFake]; fk.FactsPresent+fk.FactsRecoverable <= r.FactsPresent+r.FactsRecoverable {
			t.Errorf("%s kept %d facts, the default compressor only %d", c, r.FactsPresent+r.FactsRecoverable, fk.FactsPresent+fk.FactsRecoverable)
		}
		if !slices.ContainsFunc(rep.TargetsMissed, func(s string) bool { return strings.Contains(s, c) }) == (len(r.FactsLost) == 0) {
			t.Errorf("%s: the verdict %v does not match %d facts lost", c, rep.TargetsMissed, len(r.FactsLost))
		}
	}
	if fb := engines[ModeFallback]; fb.FallbackSummaries != fb.Compactions {
		t.Errorf("fallback engine: %d fallback summaries in %d compactions", fb.FallbackSummaries, fb.Compactions)
	}
	if fk := engines[ModeFake]; fk.FallbackSummaries != 0 {
		t.Errorf("fake engine used the fallback %d times", fk.FallbackSummaries)
	}
}

// TestRetentionScoring checks the three outcomes on a real store: a fact whose message was
// archived is lost unless the request holds its pointer or its key, and searching the fact's
// own sentence never counts.
func TestRetentionScoring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "score.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const sid = "score"
	t0 := time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)
	if _, err := db.CreateSession(ctx, store.NewSession{ID: sid, Source: "bench", StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	fact := Fact{Kind: FactValue, Text: "max_open_conns: 37", Key: "max_open_conns"}
	ask := UserAsk{Turn: 7, Sentence: "Task 1: tune the pool in internal/db/pool_1.go.", Key: "internal/db/pool_1.go"}
	ids, err := db.AppendBatch(ctx, sid, []store.Message{
		{Role: store.RoleUser, Content: ask.Sentence, Timestamp: t0},
		{Role: store.RoleAssistant, Content: "The config says max_open_conns: 37 for production.", Timestamp: t0.Add(time.Second)},
		{Role: store.RoleUser, Content: "Next.", Timestamp: t0.Add(2 * time.Second)},
		{Role: store.RoleAssistant, Content: "Fine.", Timestamp: t0.Add(3 * time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Compact(ctx, db, store.CompactRequest{SessionID: sid, Watermark: ids[3], Messages: []store.Message{
		{Role: store.RoleUser, Content: "[summary] nothing kept", Summary: true, Timestamp: t0.Add(4 * time.Second)},
		{Role: store.RoleAssistant, Content: "Fine.", Timestamp: t0.Add(5 * time.Second)},
	}}); err != nil {
		t.Fatal(err)
	}
	probe := func(text string) provider.Request {
		return provider.Request{System: "system", Messages: []provider.Message{{Role: store.RoleUser, Content: text}}}
	}
	for _, tc := range []struct {
		name, text, fact, ask string
	}{
		{"nothing", "[summary] nothing kept", StatusLost, StatusLost},
		{"the sentences themselves", "max_open_conns: 37 " + ask.Sentence, StatusPresent, StatusPresent},
		{"pointers", fmt.Sprintf("see [m%d] and [m%d]", ids[1], ids[0]), StatusRecoverable, StatusRecoverable},
		{"a pointer to another message", fmt.Sprintf("see [m%d]", ids[2]), StatusLost, StatusLost},
		{"a pointer list", fmt.Sprintf("- values: [m%d,%d]", ids[2], ids[1]), StatusRecoverable, StatusLost},
		{"a list of other messages", fmt.Sprintf("- values: [m%d,%d]", ids[2], ids[3]), StatusLost, StatusLost},
		{"a range is not a pointer", fmt.Sprintf("[m%d-m%d] and [m%d-%d]", ids[0], ids[3], ids[0], ids[3]), StatusLost, StatusLost},
		{"bare ids are not pointers", fmt.Sprintf("m%d m%d (m%d–m%d)", ids[1], ids[0], ids[0], ids[3]), StatusLost, StatusLost},
		{"keys", "max_open_conns and internal/db/pool_1.go came up", StatusRecoverable, StatusRecoverable},
		{"a key that finds nothing", "max_idle_conns", StatusLost, StatusLost},
	} {
		out := &RetentionRun{}
		if err := scoreRetention(ctx, db, sid, probe(tc.text), []Fact{fact}, []UserAsk{ask}, nil, out); err != nil {
			t.Fatal(err)
		}
		askStatus := StatusLost
		switch {
		case out.UserAsksPresent == 1:
			askStatus = StatusPresent
		case out.UserAsksRecoverable == 1:
			askStatus = StatusRecoverable
		}
		if out.Facts[0].Status != tc.fact || askStatus != tc.ask {
			t.Errorf("%s: fact %s, ask %s; want %s and %s", tc.name, out.Facts[0].Status, askStatus, tc.fact, tc.ask)
		}
		// The report names the turn of every lost ask.
		if lost := tc.ask == StatusLost; lost != (len(out.UserAsksLostTurns) == 1 && out.UserAsksLostTurns[0] == 7) || !lost && len(out.UserAsksLostTurns) > 0 {
			t.Errorf("%s: lost ask turns %v", tc.name, out.UserAsksLostTurns)
		}
	}
}

// TestPointerParserRefuses: the scorer reads a pointer as "[mN]" or a pointer line's list
// "[mA,B,C]", and nothing else: not a range, not a bare id, not a list with spaces or an empty
// element, not a bracket without the m.
func TestPointerParserRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want []int64
	}{
		{"[m12]", []int64{12}},
		{"- paths: [m90,407,1663] and [m12] [m90]", []int64{90, 407, 1663, 12}},
		{"[m12-m40]", nil},
		{"[m12-40]", nil},
		{"m12 m40", nil},
		{"(m12–m40)", nil},
		{"[12]", nil},
		{"[12,40]", nil},
		{"[m]", nil},
		{"[m12, 40]", nil},
		{"[m12,]", nil},
		{"[m,12]", nil},
		{"[m12,,40]", nil},
		{"[m12 40]", nil},
		{"[mx12]", nil},
		{"[M12]", nil},
		{"session_search(around_message_id=12)", nil},
	} {
		if got := pointerIDs(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%q: pointers %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestRetentionSessionPlantsEveryFact checks the generator: deterministic, every fact in a
// message of its planted turn, every ask in its user message, every call answered.
func TestRetentionSessionPlantsEveryFact(t *testing.T) {
	t.Parallel()
	for _, turns := range []int{12, 90, 500} {
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
		for _, f := range append(slices.Clone(a.facts), a.pre...) {
			if seen[f.Text] || seen[f.Key] && f.Key != f.Text {
				t.Errorf("fact %q or its key %q planted twice", f.Text, f.Key)
			}
			seen[f.Text], seen[f.Key] = true, true
			if !strings.Contains(f.Text, f.Key) {
				t.Errorf("key %q is not part of fact %q", f.Key, f.Text)
			}
		}
		for _, f := range a.facts {
			found := ""
			for _, m := range a.turns[f.Turn] {
				text := m.Content
				for _, tc := range m.ToolCalls {
					text += tc.Function.Arguments
				}
				if strings.Contains(text, f.Text) {
					found = m.Role
				}
			}
			if found == "" {
				t.Errorf("%d turns: fact %q not in turn %d", turns, f.Text, f.Turn)
			}
			if (f.Phase == PhaseStart || f.Phase == PhaseFirstExchange) != (f.Turn == 0) {
				t.Errorf("%d turns: %s fact %q planted in turn %d", turns, f.Phase, f.Text, f.Turn)
			}
		}
		for _, ask := range a.asks {
			if u := a.turns[ask.Turn][0]; u.Role != store.RoleUser || !strings.HasPrefix(u.Content, ask.Sentence) || !strings.Contains(ask.Sentence, ask.Key) {
				t.Errorf("ask of turn %d is not the start of its user message", ask.Turn)
			}
		}
		// The compressor's classifier must find every correction and constraint the generator
		// planted, and no task ask.
		for _, f := range a.constraints {
			if d := compress.ClassifyDirective(f.Text); !d.Binding() || !strings.Contains(f.Text, f.Key) {
				t.Errorf("constraint %q (key %q) is classified %s", f.Text, f.Key, d)
			}
		}
		if turns >= 90 && len(a.constraints) < 10 {
			t.Errorf("%d turns: only %d corrections and constraints", turns, len(a.constraints))
		}
		for _, ask := range a.asks {
			if d := compress.ClassifyDirective(ask.Sentence); d != compress.DirectiveNone {
				t.Errorf("ask %q is classified %s", ask.Sentence, d)
			}
		}
		for _, f := range a.pre {
			planted := plantPreCompaction(a.turns[1], f)
			if n := orphanToolPairs(planted); n != 0 || !strings.Contains(fmt.Sprint(planted), f.Text) || strings.Contains(fmt.Sprint(a.turns[1]), f.Text) {
				t.Errorf("planting %q before a compaction: %d orphans, or it changed the generated turn", f.Text, n)
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
	sess := generateRetentionSession(20260428, 500)
	for b.Loop() {
		if _, err := retentionOverhead(context.Background(), sess, 1000, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRetentionKeysFindTheirFacts checks the workload is fair: once the whole session is
// archived, one session_search for each fact's key alone finds a message holding the fact, so
// a compactor that keeps the key (or a pointer) can always make a fact recoverable. (Facts that
// are their own key, paths, SHAs and issue numbers, are present whenever the key is.)
func TestRetentionKeysFindTheirFacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keys.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const sid = "keys"
	t0 := time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)
	if _, err := db.CreateSession(ctx, store.NewSession{ID: sid, Source: "bench", StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	sess := generateRetentionSession(20260428, 90)
	facts := slices.Clone(sess.facts)
	var last int64
	for i, turn := range sess.turns {
		if k := i - 10; k >= 0 && k%5 == 0 && k/5 < len(sess.pre) {
			f := sess.pre[k/5]
			turn = plantPreCompaction(turn, f)
			facts = append(facts, f)
		}
		ids, err := db.AppendBatch(ctx, sid, turn)
		if err != nil {
			t.Fatal(err)
		}
		last = ids[len(ids)-1]
	}
	if _, err := storetest.Compact(ctx, db, store.CompactRequest{SessionID: sid, Watermark: last, Messages: []store.Message{
		{Role: store.RoleUser, Content: "[summary] nothing kept", Summary: true, Timestamp: t0},
	}}); err != nil {
		t.Fatal(err)
	}
	var keys strings.Builder
	for _, f := range facts {
		keys.WriteString(f.Key + "\n")
	}
	out := &RetentionRun{}
	if err := scoreRetention(ctx, db, sid, provider.Request{System: keys.String()}, facts, nil, nil, out); err != nil {
		t.Fatal(err)
	}
	for _, f := range out.Facts {
		if f.Text == f.Key { // an identifier fact: a request holding its key holds the fact
			continue
		}
		if f.Status != StatusRecoverable {
			t.Errorf("%s fact %q: searching its key %q alone: %s", f.Phase, f.Text, f.Key, f.Status)
		}
	}
}
