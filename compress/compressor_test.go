package compress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// smallModel has a 64K window: trigger 54,400 tokens, lean tail 10,000.
var smallModel = Model{Name: "main-model", Provider: "fake", ContextLength: 64_000}

func newTestCompressor(s Summarizer, f func(*Config)) (*Compressor, *fixedClock) {
	cfg := DefaultConfig()
	if f != nil {
		f(&cfg)
	}
	clk := &fixedClock{t: t0}
	c := New(cfg, s)
	c.Now = clk.Now
	return c, clk
}

// plantedSession is a coding session whose early turns carry facts that must survive.
func plantedSession(turns int) *session {
	s := newSession(nil)
	s.append(store.Message{Role: store.RoleUser, Content: "Fix the failing migration in issue #4821. Let's use PostgreSQL instead of MySQL. Never push to main directly."})
	s.append(store.Message{Role: store.RoleAssistant, Content: "Looking at HEAD 3f9a2c1d4e5b6a7980a1b2c3d4e5f60718293a4b first; see https://github.com/acme/app/pull/77.",
		ToolCalls: []store.ToolCall{
			{ID: "r1", Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: `{"path":"docs/schema.md"}`}},
			{ID: "w1", Type: "function", Function: store.ToolFunction{Name: "write_file", Arguments: `{"path":"internal/db/migrate.go","content":"package db"}`}},
		}})
	s.append(store.Message{Role: store.RoleTool, ToolCallID: "r1", ToolName: "read_file", Content: strings.Repeat("schema line\n", 30)},
		store.Message{Role: store.RoleTool, ToolCallID: "w1", ToolName: "write_file", Content: "wrote 1 file"})
	s.append(store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "t1", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"go test ./internal/db/..."}`}}}},
		store.Message{Role: store.RoleTool, ToolCallID: "t1", ToolName: "terminal", Content: "--- FAIL: TestMigrate (0.01s)\n    migrate.go:42: pq: relation \"users\" does not exist\nFAIL\nexit status 1"},
		store.Message{Role: store.RoleAssistant, Content: "The migration fails because the users table is created later."})
	for i := range turns {
		codingTurn(s, i, fmt.Sprintf("Step %d: continue with the next file.", i), fmt.Sprintf("go build ./pkg%d/...", i),
			fmt.Sprintf("compiling pkg%d\n%s\nexit code: 0", i, strings.Repeat(fmt.Sprintf("pkg%d/file_%d.go ok\n", i, i), 80)))
	}
	return s
}

func TestCompressFirstCompaction(t *testing.T) {
	t.Parallel()
	sum := &recordingSummarizer{}
	c, _ := newTestCompressor(sum, nil)
	s := plantedSession(30)
	input := append([]store.Message(nil), s.active...)
	snapshot, _ := json.Marshal(input)
	st := &State{}
	plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: input, Model: smallModel, State: st})
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(input); string(after) != string(snapshot) {
		t.Fatal("Compress modified its input")
	}
	if why := Validate(plan.Messages); why != "" {
		t.Fatalf("invalid history: %s\n%s", why, roles(plan.Messages))
	}
	// The first exchange (protect_first_n = 3, aligned past its tool results) is kept.
	if plan.Messages[0].Content != input[0].Content || plan.Origins[0] != input[0].ID {
		t.Fatalf("head lost: %q", plan.Messages[0].Content)
	}
	summaries := 0
	var summary store.Message
	for _, m := range plan.Messages {
		if m.Summary {
			summaries++
			summary = m
		}
	}
	if summaries != 1 || !strings.HasPrefix(summary.Content, SummaryPrefix+"\n") || !strings.HasSuffix(summary.Content, SummaryEndMarker) {
		t.Fatalf("want one summary with prefix and marker, got %d", summaries)
	}
	// The first exchange stays verbatim in the head; the ledger covers what was compacted.
	for _, want := range []string{"Ship the feature.", LedgerHeading, "`go test ./internal/db/...` -> exit 1", `pq: relation "users" does not exist`, "go build ./pkg0/..."} {
		if !strings.Contains(summary.Content, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// The newest user ask is carried verbatim in the tail.
	last := input[len(input)-4]
	if got := plan.Messages[len(plan.Messages)-4]; got.Content != last.Content || got.Role != store.RoleUser {
		t.Fatalf("last ask not verbatim in the tail: %q", got.Content)
	}
	if plan.Watermark != s.nextID {
		t.Fatalf("watermark %d, want %d", plan.Watermark, s.nextID)
	}
	if plan.TailCount < 4 || plan.TailCount >= len(plan.Messages) {
		t.Fatalf("tail count %d of %d", plan.TailCount, len(plan.Messages))
	}
	for k := 1; k <= plan.TailCount; k++ {
		o, in := plan.Messages[len(plan.Messages)-k], input[len(input)-k]
		if o.Content != in.Content || plan.Origins[len(plan.Origins)-k] != in.ID || o.ID != 0 {
			t.Fatalf("tail message -%d not a verbatim copy", k)
		}
	}
	if !strings.Contains(sum.last(), "TURNS TO SUMMARIZE:") || strings.Contains(sum.last(), "PREVIOUS SUMMARY") {
		t.Fatal("first compaction prompt has the wrong shape")
	}
	if sum.models[0] != smallModel.Name {
		t.Fatalf("summary model %q, want the main model", sum.models[0])
	}
	if st.CompressionCount != 1 || !st.VerifyCompaction || !st.AwaitingRealUsage || plan.Fallback || plan.SummaryModel != smallModel.Name {
		t.Fatalf("state after compaction: %+v", st)
	}
	if plan.TokensAfter >= plan.TokensBefore || !plan.NeedsSystemNote {
		t.Fatalf("tokens %d -> %d, note %v", plan.TokensBefore, plan.TokensAfter, plan.NeedsSystemNote)
	}
	req := plan.CompactRequest("holder-1")
	if req.SessionID != s.id || req.Watermark != plan.Watermark || req.TailCount != plan.TailCount || len(req.Messages) != len(plan.Messages) || req.LockHolder != "holder-1" {
		t.Fatalf("compact request: %+v", req)
	}
	if back, err := StateFromModelConfig(mustJSON(t, req.ModelConfigPatch)); err != nil || back.CompressionCount != 1 {
		t.Fatalf("state not carried in the patch: %+v %v", back, err)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestRecompactionUpdatesPreviousSummary(t *testing.T) {
	t.Parallel()
	sum := &recordingSummarizer{}
	c, _ := newTestCompressor(sum, nil)
	s := plantedSession(30)
	st := &State{}
	plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
	if err != nil {
		t.Fatal(err)
	}
	s.commit(plan)
	for i := range 30 {
		codingTurn(s, 100+i, fmt.Sprintf("Round two step %d.", i), "make lint", strings.Repeat("lint ok\n", 200)+"exit code: 0")
	}
	sum.reply = "## Goal\nShip the feature, round two.\n\n## Completed Actions\n1. RAN lint — ok [tool: terminal]"
	plan2, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
	if err != nil {
		t.Fatal(err)
	}
	p := sum.last()
	prevIdx, newIdx := strings.Index(p, "PREVIOUS SUMMARY:\n"), strings.Index(p, "NEW TURNS TO INCORPORATE:\n")
	if prevIdx < 0 || newIdx < prevIdx || strings.Contains(p, "TURNS TO SUMMARIZE:") {
		t.Fatal("re-compaction prompt does not update the previous summary")
	}
	previous := p[prevIdx:newIdx]
	if !strings.Contains(previous, "Ship the feature.") {
		t.Fatalf("previous summary body missing from the prompt:\n%s", previous)
	}
	if strings.Contains(previous, LedgerHeading) || strings.Contains(previous, SummaryPrefix) {
		t.Fatal("the ledger or prefix was sent to the summariser; it is re-rendered mechanically")
	}
	if strings.Contains(p[newIdx:], "Step 0: continue") {
		t.Fatal("turns already in the previous summary were summarised again")
	}
	// The first exchange was kept verbatim by the first compaction, not summarised; its
	// protection decays now, so it must reach the summariser before it leaves the context.
	for _, fact := range []string{"Fix the failing migration", "Looking at HEAD 3f9a2c1d4e5b"} {
		if !strings.Contains(p[newIdx:], fact) {
			t.Errorf("the first exchange left the active context without being summarised: %q is not in the new turns", fact)
		}
	}
	if why := Validate(plan2.Messages); why != "" {
		t.Fatal(why)
	}
	// protect_first_n decays: the first exchange is not kept a second time.
	if plan2.Messages[0].Content == s.active[0].Content && !plan2.Messages[0].Summary {
		t.Fatal("head not decayed after the first compaction")
	}
	if !plan2.Messages[0].Summary || plan2.Messages[0].Role != store.RoleUser {
		t.Fatalf("summary should lead as a user turn, got %s", roles(plan2.Messages))
	}
	if st.CompressionCount != 2 {
		t.Fatalf("count %d", st.CompressionCount)
	}
	if !strings.Contains(plan2.Summary, "#4821") || !strings.Contains(plan2.Summary, "Ship the feature, round two.") {
		t.Fatal("second summary lost the ledger or the new model text")
	}
}

func TestFailurePolicy(t *testing.T) {
	t.Parallel()
	pe := func(c provider.Class, status int) error {
		return &provider.Error{Class: c, Provider: "fake", StatusCode: status, Message: "x"}
	}
	synErr := json.Unmarshal([]byte("{bad"), new(map[string]any))
	tests := []struct {
		name     string
		err      error // nil with noSummarizer: no provider at all
		noSum    bool
		cfg      func(*Config)
		class    FailureClass
		abort    bool
		cooldown time.Duration
	}{
		{name: "auth aborts", err: pe(provider.ClassAuth, 401), class: FailAuth, abort: true, cooldown: 60 * time.Second},
		{name: "quota aborts", err: pe(provider.ClassQuota, 0), class: FailQuota, abort: true, cooldown: 60 * time.Second},
		{name: "quota by message aborts", err: errors.New("insufficient_quota: you are out of credits"), class: FailQuota, abort: true, cooldown: 60 * time.Second},
		{name: "network aborts", err: pe(provider.ClassNetwork, 0), class: FailNetwork, abort: true, cooldown: 60 * time.Second},
		{name: "overload (529) aborts", err: pe(provider.ClassServer, 529), class: FailOverloaded, abort: true, cooldown: 60 * time.Second},
		{name: "overloaded class aborts", err: pe(provider.ClassOverloaded, 503), class: FailOverloaded, abort: true, cooldown: 60 * time.Second},
		{name: "timeout falls back", err: pe(provider.ClassTimeout, 0), class: FailTimeout, cooldown: 60 * time.Second},
		{name: "rate limit counts as timeout, never aborts", err: pe(provider.ClassRateLimit, 429), class: FailTimeout, cooldown: 60 * time.Second},
		{name: "deadline exceeded is a timeout", err: fmt.Errorf("call: %w", context.DeadlineExceeded), class: FailTimeout, cooldown: 60 * time.Second},
		{name: "bad JSON falls back for 30 s", err: synErr, class: FailDecode, cooldown: 30 * time.Second},
		{name: "stream closed early falls back for 30 s", err: io.ErrUnexpectedEOF, class: FailDecode, cooldown: 30 * time.Second},
		{name: "other errors fall back for 60 s", err: errors.New("boom"), class: FailOther, cooldown: 60 * time.Second},
		{name: "bad request falls back", err: pe(provider.ClassBadRequest, 400), class: FailOther, cooldown: 60 * time.Second},
		{name: "no provider falls back for 600 s", noSum: true, class: FailNoProvider, cooldown: 600 * time.Second},
		{name: "abort_on_summary_failure aborts a timeout", err: pe(provider.ClassTimeout, 0), cfg: func(c *Config) { c.AbortOnSummaryFailure = true },
			class: FailTimeout, abort: true, cooldown: 60 * time.Second},
		{name: "cooldown never shorter than the host timeout", err: io.ErrUnexpectedEOF, cfg: func(c *Config) { c.ContextTimeout = 2 * time.Minute },
			class: FailDecode, cooldown: 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var sum Summarizer
			if !tt.noSum {
				sum = &recordingSummarizer{errs: []error{tt.err}}
			}
			c, _ := newTestCompressor(sum, tt.cfg)
			s := plantedSession(20)
			st := &State{CompressionCount: 0}
			plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
			if got := st.CooldownUntil.Sub(t0); got != tt.cooldown || st.CooldownClass != tt.class {
				t.Fatalf("cooldown %s class %s, want %s %s", got, st.CooldownClass, tt.cooldown, tt.class)
			}
			if tt.abort {
				var ae *AbortError
				if !errors.As(err, &ae) || ae.Class != tt.class || len(plan.Messages) != 0 {
					t.Fatalf("want *AbortError(%s) and no plan, got %v", tt.class, err)
				}
				if st.CompressionCount != 0 || st.FallbackStreak != 0 {
					t.Fatalf("aborted compaction changed counters: %+v", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !plan.Fallback || plan.FailureClass != tt.class || st.FallbackStreak != 1 || len(plan.Notices) == 0 {
				t.Fatalf("fallback not recorded: %+v", plan)
			}
			body, _, _ := cutSection(plan.Summary, LedgerHeading)
			if !strings.Contains(body, "## Last Dropped Turns") || len(body) > FallbackSummaryCap {
				t.Fatalf("fallback body (%d chars) malformed", len(body))
			}
			for _, h := range templateHeadings {
				if !strings.Contains(body, h+"\n") {
					t.Errorf("fallback lacks %s", h)
				}
			}
			if why := Validate(plan.Messages); why != "" {
				t.Fatal(why)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]FailureClass{
		&provider.Error{Class: provider.ClassServer, StatusCode: 502}:  FailTimeout,
		&provider.Error{Class: provider.ClassServer, StatusCode: 500}:  FailOther,
		&provider.Error{Class: provider.ClassUnknown, StatusCode: 403}: FailAuth,
		fmt.Errorf("wrapped: %w", ErrNoSummarizer):                     FailNoProvider,
		errors.New("dial tcp: connection refused"):                     FailNetwork,
		errors.New("request timed out"):                                FailTimeout,
		errors.New("model is overloaded"):                              FailOverloaded,
		errors.New("stream closed before completion"):                  FailDecode,
		// Plain connection failures are network failures: abort, history untouched.
		errors.New("peer closed connection without sending complete message body"): FailNetwork,
		errors.New("read tcp 127.0.0.1:5000: connection reset by peer"):            FailNetwork,
		fmt.Errorf(`Post "http://127.0.0.1:8080/v1/chat/completions": %w`, io.EOF): FailNetwork,
		errors.New(`Post "http://127.0.0.1:8080/v1/chat/completions": EOF`):        FailNetwork,
		fmt.Errorf("dial: %w", syscall.ECONNREFUSED):                               FailNetwork,
		fmt.Errorf("body: %w", io.ErrUnexpectedEOF):                                FailDecode,
	} {
		if got := Classify(err); got != want {
			t.Errorf("Classify(%v) = %s, want %s", err, got, want)
		}
	}
}

func TestSummaryModelFallsBackToMainOnce(t *testing.T) {
	t.Parallel()
	sum := &recordingSummarizer{errs: []error{&provider.Error{Class: provider.ClassBadRequest, StatusCode: 404, Message: "model not found"}}}
	c, _ := newTestCompressor(sum, func(c *Config) { c.SummaryModel = "aux-model" })
	s := plantedSession(20)
	st := &State{}
	plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sum.models, []string{"aux-model", "main-model"}) {
		t.Fatalf("calls %v", sum.models)
	}
	if plan.Fallback || plan.SummaryModel != "main-model" || len(plan.Notices) != 1 || !strings.Contains(plan.Notices[0], "aux-model") {
		t.Fatalf("plan %+v", plan.Notices)
	}
	if !st.CooldownUntil.IsZero() {
		t.Fatal("cooldown left after the main model succeeded")
	}

	// Both failing: exactly two calls, then the fallback summary.
	sum2 := &recordingSummarizer{errs: []error{errors.New("a"), errors.New("b")}}
	c2, _ := newTestCompressor(sum2, func(c *Config) { c.SummaryModel = "aux-model" })
	plan2, err := c2.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: &State{}})
	if err != nil || !plan2.Fallback || len(sum2.models) != 2 {
		t.Fatalf("err %v fallback %v calls %v", err, plan2.Fallback, sum2.models)
	}
}

// After the summary model failed and the main model wrote the summary, the next compactions
// go straight to the main model for SummaryModelPause, without the notice again; then the
// summary model is tried once more.
func TestSummaryModelPausesAfterAFallback(t *testing.T) {
	t.Parallel()
	notFound := &provider.Error{Class: provider.ClassBadRequest, StatusCode: 404, Message: "model not found"}
	sum := &recordingSummarizer{errs: []error{notFound}}
	c, clk := newTestCompressor(sum, func(c *Config) { c.SummaryModel = "aux-model" })
	st := &State{}
	var notices []string
	for round := range 3 {
		s := plantedSession(20)
		plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if plan.SummaryModel != "main-model" {
			t.Fatalf("round %d: summary by %q", round, plan.SummaryModel)
		}
		notices = append(notices, plan.Notices...)
		clk.Advance(time.Minute)
	}
	if want := []string{"aux-model", "main-model", "main-model", "main-model"}; !reflect.DeepEqual(sum.models, want) {
		t.Fatalf("models asked %v, want %v", sum.models, want)
	}
	if len(notices) != 1 {
		t.Fatalf("notices %q: want the fallback told once", notices)
	}
	clk.Advance(SummaryModelPause)
	s := plantedSession(20)
	plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
	if err != nil || plan.SummaryModel != "aux-model" || !st.SummaryModelPausedUntil.IsZero() {
		t.Fatalf("after the pause: err %v, summary by %q, paused until %v", err, plan.SummaryModel, st.SummaryModelPausedUntil)
	}
}

// A summary model that fails for good (its key refused, a model its endpoint does not serve) is
// asked once: later compactions, past any pause, go straight to the main model with no second
// notice, until the summary model's configuration changes. A transient failure still gets the
// summary model asked again after SummaryModelPause. The state goes through JSON between
// compactions, as the agent stores it with the session.
func TestSummaryModelBrokenSticksUntilConfigChanges(t *testing.T) {
	t.Parallel()
	cfg := func(baseURL string) Config {
		var c config.Config
		c.Provider = config.Provider{Name: "openai", Model: "main-model"}
		c.Auxiliary.Compression = config.AuxModel{Model: "aux-model", BaseURL: baseURL}
		return FromConfig(c)
	}
	for _, c := range []struct {
		name   string
		err    error
		sticks bool
	}{
		{"model not found", &provider.Error{Provider: "openai", Class: provider.ClassModelNotFound, StatusCode: 404, Message: "The model `aux-model` does not exist"}, true},
		{"bad key", &provider.Error{Provider: "openai", Class: provider.ClassAuth, StatusCode: 401, Message: "Incorrect API key provided"}, true},
		{"overloaded", &provider.Error{Provider: "openai", Class: provider.ClassOverloaded, StatusCode: 503, Message: "overloaded"}, false},
		{"timeout", &provider.Error{Provider: "openai", Class: provider.ClassTimeout, StatusCode: 504, Message: "gateway timeout"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var asked []string
			sum := SummarizerFunc(func(ctx context.Context, model, prompt string) (string, error) {
				asked = append(asked, model)
				if model == "aux-model" {
					return "", c.err
				}
				return "## Goal\nShip the feature.", nil
			})
			compact := func(comp *Compressor, st *State) *State {
				t.Helper()
				s := plantedSession(20)
				plan, err := comp.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
				if err != nil || plan.SummaryModel != "main-model" {
					t.Fatalf("compaction: err %v, summary by %q", err, plan.SummaryModel)
				}
				for _, n := range plan.Notices {
					if strings.Contains(n, "Summary model aux-model failed") {
						asked = append(asked, "notice")
					}
				}
				raw, err := json.Marshal(st)
				if err != nil {
					t.Fatal(err)
				}
				var next State
				if err := json.Unmarshal(raw, &next); err != nil {
					t.Fatal(err)
				}
				return &next
			}
			comp, clk := newTestCompressor(sum, func(c *Config) { *c = cfg("") })
			st := &State{}
			for range 3 {
				st = compact(comp, st)
				clk.Advance(SummaryModelPause + time.Minute)
			}
			want := []string{"aux-model", "main-model", "notice", "aux-model", "main-model", "notice", "aux-model", "main-model", "notice"}
			if c.sticks {
				want = []string{"aux-model", "main-model", "notice", "main-model", "main-model"}
			}
			if !reflect.DeepEqual(asked, want) {
				t.Fatalf("calls and notices %v, want %v", asked, want)
			}
			if !c.sticks {
				return
			}
			// Another endpoint for the summary model is another configuration: it is tried again.
			asked = nil
			moved, clk2 := newTestCompressor(sum, func(c *Config) { *c = cfg("https://llm.internal/v1") })
			clk2.t = clk.t
			compact(moved, st)
			if want := []string{"aux-model", "main-model", "notice"}; !reflect.DeepEqual(asked, want) {
				t.Fatalf("after the configuration changed: %v, want %v", asked, want)
			}
		})
	}
}

// A summarizer whose connection drops aborts the compaction with the history untouched, as
// every network failure does, instead of falling back to a mechanical summary.
func TestSummarizerConnectionDropAborts(t *testing.T) {
	t.Parallel()
	sum := &recordingSummarizer{errs: []error{errors.New("peer closed connection without sending complete message body")}}
	c, _ := newTestCompressor(sum, nil)
	s := plantedSession(20)
	st := &State{}
	_, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
	var ae *AbortError
	if !errors.As(err, &ae) || ae.Class != FailNetwork {
		t.Fatalf("err %v: want an abort of class network", err)
	}
	if st.FallbackStreak != 0 || st.CompressionCount != 0 {
		t.Fatalf("state %+v: an abort is not a compaction", st)
	}
}

func TestTimeoutLadderAndForce(t *testing.T) {
	t.Parallel()
	timeout := &provider.Error{Class: provider.ClassTimeout}
	sum := &recordingSummarizer{errs: []error{timeout, timeout, timeout, timeout}}
	c, clk := newTestCompressor(sum, nil)
	st := &State{}
	for i, want := range []time.Duration{60 * time.Second, 300 * time.Second, 900 * time.Second, 900 * time.Second} {
		s := plantedSession(20)
		if _, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st}); err != nil {
			t.Fatal(err)
		}
		if got := st.CooldownUntil.Sub(clk.Now()); got != want {
			t.Fatalf("timeout %d: cooldown %s, want %s", i+1, got, want)
		}
		clk.Advance(time.Hour)
	}
	if blocked, why := c.Gate().Blocked(st); !blocked || !strings.Contains(why, "fallback") {
		t.Fatalf("4 fallbacks should trip anti-thrash: %v %q", blocked, why)
	}
	// Manual compaction with a focus topic clears the cooldown and, on success, resets the ladder.
	st.CooldownUntil = clk.Now().Add(time.Hour)
	s := plantedSession(20)
	plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st, Force: true, Focus: "the database migration"})
	if err != nil || plan.Fallback {
		t.Fatalf("forced compaction: %v fallback=%v", err, plan.Fallback)
	}
	if !strings.Contains(sum.last(), "FOCUS TOPIC: the database migration") {
		t.Fatal("focus topic not in the prompt")
	}
	if !st.CooldownUntil.IsZero() || st.TimeoutStrikes != 0 || st.FallbackStreak != 0 {
		t.Fatalf("success did not reset: %+v", st)
	}
	if blocked, _ := c.Gate().Blocked(st); blocked {
		t.Fatal("still blocked after a healthy compaction")
	}
}

func TestCanceledContextLeavesStateAlone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	sum := SummarizerFunc(func(ctx context.Context, model, prompt string) (string, error) {
		cancel()
		return "", ctx.Err()
	})
	c, _ := newTestCompressor(sum, nil)
	s := plantedSession(20)
	st := &State{}
	_, err := c.Compress(ctx, Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
	if !errors.Is(err, context.Canceled) || !reflect.DeepEqual(*st, State{}) {
		t.Fatalf("err %v state %+v", err, st)
	}
}

func TestNothingToCompress(t *testing.T) {
	t.Parallel()
	c, _ := newTestCompressor(&recordingSummarizer{}, nil)
	st := &State{}
	_, err := c.Compress(context.Background(), Request{SessionID: "s", Messages: hist("u a u a u a"), Model: smallModel, State: st})
	if !errors.Is(err, ErrNothingToCompress) || st.IneffectiveCount != 1 {
		t.Fatalf("err %v, ineffective %d", err, st.IneffectiveCount)
	}
}

func TestSystemMessageGetsNoteOnce(t *testing.T) {
	t.Parallel()
	c, _ := newTestCompressor(&recordingSummarizer{}, nil)
	s := plantedSession(25)
	ms := append([]store.Message{{ID: 0, Role: store.RoleSystem, Content: "You are a coding agent."}}, s.active...)
	st := &State{}
	plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: ms, Model: smallModel, State: st})
	if err != nil {
		t.Fatal(err)
	}
	if plan.NeedsSystemNote || !strings.HasSuffix(plan.Messages[0].Content, SystemNote) {
		t.Fatalf("system note not appended: %q", plan.Messages[0].Content)
	}
	s2 := newSession(nil)
	s2.commit(plan)
	for i := range 30 {
		codingTurn(s2, i, "more", "make", strings.Repeat("x", 3000))
	}
	plan2, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s2.active, Model: smallModel, State: st})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(plan2.Messages[0].Content, SystemNote) != 1 {
		t.Fatal("system note appended twice")
	}
	if plan2.Messages[1].Role != store.RoleUser || !plan2.Messages[1].Summary {
		t.Fatalf("after a system head the summary is a user turn: %s", roles(plan2.Messages))
	}
}

// A summary model with a small window gets a prompt that fits it: the history is
// cut to its head and tail, where the unclamped prompt would overflow it.
func TestSummaryInputFitsTheSummaryModel(t *testing.T) {
	t.Parallel()
	s := plantedSession(120)
	for _, c := range []struct {
		name   string
		window int
		fits   bool
	}{
		{"unknown window: the fixed cap", 0, false},
		{"an 8K summarizer", 8_000, true},
		{"a 16K summarizer", 16_000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sum := &recordingSummarizer{}
			cmp, _ := newTestCompressor(sum, func(cfg *Config) {
				cfg.SummaryModel, cfg.SummaryContextLength = "local-small", c.window
			})
			if _, err := cmp.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: &State{}}); err != nil {
				t.Fatal(err)
			}
			if len(sum.prompts) != 1 || sum.models[0] != "local-small" {
				t.Fatalf("calls %v", sum.models)
			}
			p := sum.prompts[0]
			cut := strings.Contains(p, "omitted to fit the summariser's input")
			if c.window == 0 {
				if cut || len(p)/4 < 16_000 {
					t.Errorf("prompt of %d characters (cut: %v): the history was cut without a window to fit", len(p), cut)
				}
				return
			}
			if est := len(p) / 4; !cut || est > c.window*4/5 || est < c.window/4 {
				t.Errorf("prompt of about %d tokens (cut: %v) for a %d-token window", est, cut, c.window)
			}
		})
	}
}

// midTurn appends the current ask with its wire text (a recall block) and a tool round too big
// for the tail budget, so the tail starts at the ask and the summary merges into it.
func midTurn(s *session, ask, recall string) {
	s.append(store.Message{Role: store.RoleUser, Content: ask, APIContent: ask + "\n\n" + recall})
	s.append(store.Message{Role: store.RoleAssistant, Content: "Running the build.", ToolCalls: []store.ToolCall{{ID: "big_" + ask, Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"make all"}`}}}})
	s.append(store.Message{Role: store.RoleTool, ToolCallID: "big_" + ask, ToolName: "terminal", Content: strings.Repeat("build output line\n", 3000) + "exit code: 0"})
}

// A compaction that merges the summary into the current user message keeps that message's
// wire text (its recall) behind the summary, and a later compaction that finds the carrier in
// its tail takes it apart and merges again without losing it or stacking summaries.
func TestMergedSummaryKeepsTheWireText(t *testing.T) {
	t.Parallel()
	c, _ := newTestCompressor(&recordingSummarizer{}, func(c *Config) { c.ProtectLastN = 3 })
	s := plantedSession(10)
	st := &State{CompressionCount: 1} // the head has decayed: the summary leads, as a user message
	const recall = "<memory-context>\nrecalled: the staging database listens on port 5433\n</memory-context>"
	for round, ask := range []string{"Now run the whole build.", "And once more, please."} {
		if round == 1 {
			// The same turn goes on: another big tool round after the carrier.
			s.append(store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "again", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"make again"}`}}}})
			s.append(store.Message{Role: store.RoleTool, ToolCallID: "again", ToolName: "terminal", Content: strings.Repeat("more output\n", 4000) + "exit code: 0"})
			ask = "Now run the whole build."
		} else {
			midTurn(s, ask, recall)
		}
		plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: smallModel, State: st})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if why := Validate(plan.Messages); why != "" {
			t.Fatal(why)
		}
		summaries := 0
		for _, m := range plan.Messages {
			summaries += strings.Count(m.Content, SummaryPrefix)
		}
		if summaries != 1 {
			t.Fatalf("round %d: %d summaries:\n%s", round, summaries, roles(plan.Messages))
		}
		var carrier *store.Message
		for i := range plan.Messages {
			if m := &plan.Messages[i]; m.Role == store.RoleUser && strings.HasSuffix(m.Content, ask) {
				carrier = m
			}
		}
		if round == 1 {
			// The ask is all that is left of its turn before the new summary: it stays as it
			// was written and sent.
			if carrier == nil || carrier.Content != ask || carrier.APIContent != ask+"\n\n"+recall {
				t.Fatalf("round %d: the current ask lost its text or wire text:\n%s\n%+v", round, roles(plan.Messages), carrier)
			}
			break
		}
		if carrier == nil || !carrier.Summary {
			t.Fatalf("round %d: the summary was not merged into the current ask:\n%s", round, roles(plan.Messages))
		}
		if !strings.Contains(carrier.APIContent, recall) || !strings.HasPrefix(carrier.APIContent, SummaryPrefix) || !strings.Contains(carrier.APIContent, ask) {
			t.Fatalf("round %d: the merged ask lost its wire text:\n%q", round, carrier.APIContent)
		}
		if n := strings.Count(carrier.Content, SummaryPrefix); n != 1 {
			t.Fatalf("round %d: %d summaries in the carrier", round, n)
		}
		if why := Validate(plan.Messages); why != "" {
			t.Fatal(why)
		}
		s.commit(plan)
	}
}

// What the user said first (goal, constraints) is quoted verbatim in every summary once it
// leaves the context, at any window, whatever the summary model keeps of it.
func TestOriginalRequestOutlivesCompactions(t *testing.T) {
	t.Parallel()
	const first = "Fix the failing migration in issue #4821. Let's use PostgreSQL instead of MySQL. Never push to main directly."
	for _, window := range []int{8_000, 64_000, 1_000_000} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			t.Parallel()
			// The summariser forgets everything.
			c, _ := newTestCompressor(&recordingSummarizer{reply: "## Goal\nKeep going."}, nil)
			model := Model{Name: "main-model", ContextLength: window}
			s := plantedSession(30)
			st := &State{}
			for round := 1; round <= 4; round++ {
				plan, err := c.Compress(context.Background(), Request{SessionID: s.id, Messages: s.active, Model: model, State: st})
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				inContext := false
				for _, m := range plan.Messages {
					inContext = inContext || strings.Contains(m.Content, first)
				}
				if !inContext {
					t.Fatalf("round %d (rung %s): the first request is neither kept nor quoted", round, plan.Rung)
				}
				s.commit(plan)
				noiseTurns(s, round, 25)
			}
		})
	}
}
