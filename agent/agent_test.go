package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/wire"
)

func promptEnv() prompt.Env { return prompt.Env{Platform: "cli", Identity: "You are a test agent."} }

func TestToolLoop(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		input     string
		wantRoles []string
		wantTools []string // tool results, in order
		reply     string   // substring of the final answer
	}{
		{"plain answer", "hello there", []string{"user", "assistant"}, nil, "Answer "},
		{"one call", `CALL echo {"path":"a.go"}`, []string{"user", "assistant(1 calls)", "tool", "assistant"}, []string{"echo a.go"}, `echo returned "echo a.go"`},
		{"several calls in order", "CALL echo {\"path\":\"1\"}\nCALL read {\"path\":\"x\"}\nCALL echo {\"path\":\"3\"}",
			[]string{"user", "assistant(3 calls)", "tool", "tool", "tool", "assistant"},
			[]string{"echo 1", "contents of x:", "echo 3"}, `read returned "contents of x:"`},
		{"tool error is a result", `CALL fail {}`, []string{"user", "assistant(1 calls)", "tool", "assistant"}, []string{"Error: disk on fire"}, "fail returned"},
		{"say directive", `SAY fine`, []string{"user", "assistant"}, nil, "fine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st, _ := newStore(t)
			a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
			res, err := a.Run(context.Background(), "", c.input, agent.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Reply, c.reply) {
				t.Errorf("reply %q lacks %q", res.Reply, c.reply)
			}
			h := history(t, st, res.SessionID)
			if got := roles(h); !slices.Equal(got, c.wantRoles) {
				t.Fatalf("history roles %v, want %v", got, c.wantRoles)
			}
			var tools []string
			for i, m := range h {
				if m.Role == store.RoleTool {
					tools = append(tools, m.Content)
					// Each result answers the call at the same position of the calling message.
					call := h[1].ToolCalls[len(tools)-1]
					if m.ToolCallID != call.ID || m.ToolName != call.Function.Name {
						t.Errorf("result %d answers %s/%s, want %s/%s", i, m.ToolCallID, m.ToolName, call.ID, call.Function.Name)
					}
				}
			}
			if len(tools) != len(c.wantTools) {
				t.Fatalf("tool results %q, want %d", tools, len(c.wantTools))
			}
			for i := range tools {
				if !strings.HasPrefix(tools[i], c.wantTools[i]) {
					t.Errorf("tool result %d = %q, want prefix %q", i, tools[i], c.wantTools[i])
				}
			}
			recs, err := st.Requests(context.Background(), res.SessionID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != res.Calls || res.Calls != 1+min(1, len(c.wantTools)) {
				t.Errorf("%d requests recorded for %d calls", len(recs), res.Calls)
			}
			for _, r := range recs {
				if r.Usage.InputTokens == 0 || r.Usage.OutputTokens == 0 || r.Model != "fake-model" || r.Latency < time.Microsecond {
					t.Errorf("request record without usage: %+v", r)
				}
			}
			s, err := st.GetSession(context.Background(), res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if s.Usage.InputTokens != res.Usage.InputTokens || s.Usage.APICalls != int64(res.Calls) {
				t.Errorf("session usage %+v, turn usage %+v", s.Usage, res.Usage)
			}
			if s.SystemPromptHash == "" {
				t.Error("the system prompt was not persisted")
			}
		})
	}
}

func TestUserMessageSidecarIsPersisted(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
	res, err := a.Run(context.Background(), "", `CALL echo {"path":"p"}`, agent.RunOptions{Context: wire.TurnContext{Recall: "the user likes Go"}})
	if err != nil {
		t.Fatal(err)
	}
	u := history(t, st, res.SessionID)[0]
	if u.Content != `CALL echo {"path":"p"}` || !strings.Contains(u.APIContent, wire.MemoryOpen) || !strings.Contains(u.APIContent, "the user likes Go") {
		t.Fatalf("user row content %q api_content %q", u.Content, u.APIContent)
	}
}

func TestStreamingDeltas(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
	var got strings.Builder
	res, err := a.Run(context.Background(), "", "SAY one two three four five", agent.RunOptions{OnDelta: func(d provider.Delta) { got.WriteString(d.Content) }})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != res.Reply || res.Reply != "one two three four five" {
		t.Fatalf("streamed %q, reply %q", got.String(), res.Reply)
	}
}

func TestToolPanicIsAResult(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	tt := stdTools()
	tt.fns["boom"] = func(context.Context, map[string]any) (string, error) { panic("nil map write") }
	a := newAgent(t, st, fake.New(fake.Config{}), tt)
	var notices []string
	res, err := a.Run(context.Background(), "", "CALL boom {}\nCALL echo {\"path\":\"after\"}", agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
	if err != nil {
		t.Fatal(err)
	}
	h := history(t, st, res.SessionID)
	if got := roles(h); !slices.Equal(got, []string{"user", "assistant(2 calls)", "tool", "tool", "assistant"}) {
		t.Fatalf("roles %v", got)
	}
	if !strings.Contains(h[2].Content, "panic: nil map write") || h[3].Content != "echo after" {
		t.Errorf("results %q, %q", h[2].Content, h[3].Content)
	}
	if len(notices) == 0 || !strings.Contains(notices[0], "panicked") {
		t.Errorf("no panic notice: %q", notices)
	}
	// The session goes on.
	run(t, a, res.SessionID, "still there?")
}

func TestHugeInputIsRefusedAndNothingIsLost(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
	first := run(t, a, "", "remember this")
	before := history(t, st, first.SessionID)
	huge := strings.Repeat("0123456789abcdef", 10<<20/16)
	_, err := a.Run(context.Background(), first.SessionID, huge, agent.RunOptions{})
	if !errors.Is(err, agent.ErrInputTooLarge) || !strings.Contains(err.Error(), "10.0 MB") {
		t.Fatalf("err = %v, want ErrInputTooLarge naming the size", err)
	}
	if after := history(t, st, first.SessionID); len(after) != len(before) {
		t.Fatalf("history changed: %d -> %d rows", len(before), len(after))
	}
	res := run(t, a, first.SessionID, "and now a normal message")
	if got := len(history(t, st, res.SessionID)); got != len(before)+2 {
		t.Errorf("after a normal turn: %d rows, want %d", got, len(before)+2)
	}
	if _, err := a.Run(context.Background(), first.SessionID, " \n\t", agent.RunOptions{}); !errors.Is(err, agent.ErrEmptyInput) {
		t.Errorf("blank input: %v", err)
	}
}

// blockingTools has a tool that signals when it starts and blocks until its context ends.
func blockingTools(started chan<- struct{}) *testTools {
	tt := stdTools()
	tt.fns["wait"] = func(ctx context.Context, _ map[string]any) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "partial output", nil
	}
	return tt
}

func TestInterruptDuringToolCalls(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	started := make(chan struct{}, 1)
	a := newAgent(t, st, fake.New(fake.Config{}), blockingTools(started))
	first := run(t, a, "", "hello")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, err := a.Run(ctx, first.SessionID, "CALL echo {\"path\":\"a\"}\nCALL wait {}\nCALL echo {\"path\":\"never\"}", agent.RunOptions{})
	if !errors.Is(err, context.Canceled) || !res.Interrupted {
		t.Fatalf("err = %v, interrupted = %v", err, res.Interrupted)
	}
	h := history(t, st, first.SessionID)
	want := []string{"user", "assistant", "user", "assistant(3 calls)", "tool", "tool", "tool"}
	if got := roles(h); !slices.Equal(got, want) {
		t.Fatalf("roles %v, want %v", got, want)
	}
	if h[4].Content != "echo a" || !strings.HasPrefix(h[5].Content, agent.CancelledResult) || h[6].Content != agent.CancelledResult {
		t.Errorf("results %q / %q / %q", h[4].Content, h[5].Content, h[6].Content)
	}
	// The session is whole: the next turn's request is accepted by the provider.
	run(t, a, first.SessionID, "what happened?")
}

func TestInterruptDuringStreamKeepsWhatWasSaid(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{ChunkDelay: 5 * time.Millisecond}), stdTools())
	ctx, cancel := context.WithCancel(context.Background())
	var seen strings.Builder
	var once sync.Once
	words := strings.Repeat("word ", 200)
	res, err := a.Run(ctx, "", "SAY "+words, agent.RunOptions{OnDelta: func(d provider.Delta) {
		seen.WriteString(d.Content)
		once.Do(cancel)
	}})
	if !errors.Is(err, context.Canceled) || !res.Interrupted {
		t.Fatalf("err = %v", err)
	}
	h := history(t, st, res.SessionID)
	if got := roles(h); !slices.Equal(got, []string{"user", "assistant"}) {
		t.Fatalf("roles %v", got)
	}
	if h[1].Content != seen.String() || h[1].FinishReason != "interrupted" || len(h[1].Content) >= len(words) {
		t.Errorf("kept %q (finish %q), streamed %q", h[1].Content, h[1].FinishReason, seen.String())
	}
	run(t, a, res.SessionID, "go on")
}

func TestProviderDown(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	rec := newRecorder(t, fake.Config{})
	a := newAgent(t, st, openaiClient(t, rec.URL), stdTools())
	first := run(t, a, "", "hello")
	rec.Close()
	_, err := a.Run(context.Background(), first.SessionID, "are you there?", agent.RunOptions{})
	if err == nil || provider.ClassOf(err) != provider.ClassNetwork || !strings.Contains(err.Error(), "message is saved") {
		t.Fatalf("err = %v (class %s), want a network error saying the message is saved", err, provider.ClassOf(err))
	}
	h := history(t, st, first.SessionID)
	if got := roles(h); !slices.Equal(got, []string{"user", "assistant", "user"}) || h[2].Content != "are you there?" {
		t.Fatalf("history after the failure: %v", roles(h))
	}
	// The provider comes back: the same session continues.
	rec2 := newRecorder(t, fake.Config{})
	b := newAgent(t, st, openaiClient(t, rec2.URL), stdTools())
	res := run(t, b, first.SessionID, "again")
	if res.Reply == "" {
		t.Fatal("no reply after the provider came back")
	}
}

func TestConcurrentRunsTakeTurns(t *testing.T) {
	t.Parallel()
	_, path := newStore(t)
	st0 := openStore(t, path)
	a0 := newAgent(t, st0, fake.New(fake.Config{}), stdTools())
	sid := run(t, a0, "", "start").SessionID
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := openStore(t, path) // one handle per "process"
			a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
			_, errs[i] = a.Run(context.Background(), sid, "CALL echo {\"path\":\"w"+string(rune('0'+i))+"\"}", agent.RunOptions{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	h := history(t, st0, sid)
	want := []string{"user", "assistant"}
	for range n {
		want = append(want, "user", "assistant(1 calls)", "tool", "assistant")
	}
	if got := roles(h); !slices.Equal(got, want) {
		t.Fatalf("interleaved turns: %v", got)
	}
	for i := 2; i < len(h); i += 4 {
		arg := strings.TrimPrefix(strings.TrimSuffix(h[i].Content, `"}`), `CALL echo {"path":"`)
		if h[i+2].Content != "echo "+arg {
			t.Errorf("turn at %d: asked %q, tool said %q", i, arg, h[i+2].Content)
		}
	}
}

// leaseStealingStore fails every renewal, as a store that cannot vouch for the lease would.
type leaseStealingStore struct {
	store.Backend
}

func (s leaseStealingStore) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	return store.Lease{}, store.ErrBusy
}

func TestLostLeaseNeverWrites(t *testing.T) {
	t.Parallel()
	db, _ := newStore(t)
	st := leaseStealingStore{db}
	tt := stdTools()
	thiefWrote := make(chan error, 1)
	tt.fns["slow"] = func(ctx context.Context, _ map[string]any) (string, error) {
		time.Sleep(400 * time.Millisecond) // past the TTL, ignoring the cancellation
		return "slow result", nil
	}
	a := newAgent(t, st, fake.New(fake.Config{}), tt, func(d *agent.Deps) {
		d.Config.Lease.TTL, d.Config.Lease.RenewEvery = 200*time.Millisecond, 50*time.Millisecond
	})
	// The session exists before the run: a first turn on this store could itself outlive the
	// 200 ms lease on a loaded machine (every renewal fails here) and fail this test for the
	// wrong reason.
	s, err := db.CreateSession(context.Background(), store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	sid := s.ID
	// Another holder takes the lease once ours expired, and writes with its own fence.
	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := db.AcquireLease(context.Background(), sid, "thief", time.Minute)
		if err == nil {
			_, err = db.Append(context.Background(), sid, store.Message{Role: store.RoleUser, Content: "thief was here"}, store.WithLease(l))
		}
		thiefWrote <- err
	}()
	_, err = a.Run(context.Background(), sid, "CALL slow {}", agent.RunOptions{})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("err = %v, want the lease loss", err)
	}
	if err := <-thiefWrote; err != nil {
		t.Fatal(err)
	}
	for _, m := range history(t, db, sid) {
		if m.Content == "slow result" || m.Content == agent.CancelledResult {
			t.Errorf("the stale turn wrote %q after losing its lease", m.Content)
		}
	}
}

func TestRecordsCacheBreaksWithReasons(t *testing.T) {
	t.Parallel()
	st, path := newStore(t)
	model := fake.New(fake.Config{})
	a := newAgent(t, st, model, stdTools())
	sid := ""
	for i := range 8 {
		res := run(t, a, sid, "CALL read {\"path\":\"f"+string(rune('a'+i))+"\"}")
		sid = res.SessionID
		if len(res.Breaks) != 0 {
			t.Fatalf("turn %d: unexpected cache break %+v", i, res.Breaks)
		}
	}
	recs, _ := st.Requests(context.Background(), sid, 1)
	if recs[0].Usage.CacheReadTokens == 0 {
		t.Fatal("the fake cached nothing; the session is too small for this test")
	}
	// A new process (agent and store handle) with a cold provider cache: the break is explained
	// as a resume, at no particular layer.
	st2 := openStore(t, path)
	b := newAgent(t, st2, fake.New(fake.Config{}), stdTools())
	res := run(t, b, sid, "after the restart")
	if len(res.Breaks) != 1 || res.Breaks[0].Reason != string(wire.ReasonResume) || res.Breaks[0].Layer != "none" || res.Breaks[0].LostTokens <= 0 {
		t.Fatalf("breaks after a restart %+v", res.Breaks)
	}
	// The same warm cache in a new agent: the derived fingerprint agrees, nothing breaks.
	c := newAgent(t, openStore(t, path), model, stdTools())
	if r := run(t, c, sid, "CALL echo {\"path\":\"z\"}"); len(r.Breaks) != 0 {
		t.Fatalf("breaks %+v", r.Breaks)
	}
	all, _ := st.Requests(context.Background(), sid, 0)
	n := 0
	for _, r := range all {
		if r.Break != nil {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d breaks recorded, want 1", n)
	}

}

func TestIterationLimit(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), func(d *agent.Deps) { d.Config.MaxIterations = 1 })
	res, err := a.Run(context.Background(), "", `CALL echo {"path":"a"}`, agent.RunOptions{})
	if !errors.Is(err, agent.ErrIterationLimit) {
		t.Fatalf("err = %v", err)
	}
	h := history(t, st, res.SessionID)
	if got := roles(h); !slices.Equal(got, []string{"user", "assistant(1 calls)", "tool"}) {
		t.Fatalf("roles %v", got)
	}
	// The next message continues from the stored tool result.
	run(t, a, res.SessionID, "go on")
}

func TestProviderOverflowCompactsAndRetries(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	// The provider's window (8,000 tokens) is smaller than the agent believes (trigger 17,000):
	// only the provider's refusal can start the compaction.
	model := fake.New(fake.Config{ContextWindow: 8_000})
	a := newAgent(t, st, model, stdTools(), withCompression(20_000, 0))
	sid, compacted := "", 0
	for i := range 60 {
		res, err := a.Run(context.Background(), sid, fmt.Sprintf("CALL read {\"path\":\"f%d\"}", i), agent.RunOptions{})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		sid, compacted = res.SessionID, compacted+res.Compactions
	}
	if compacted == 0 {
		recs, _ := st.Requests(context.Background(), sid, 1)
		t.Fatalf("the provider's overflow never led to a compaction (last prompt %d tokens)", recs[0].Usage.InputTokens)
	}
	if f := model.Stats().Failed; f != int64(compacted) {
		t.Errorf("%d refused requests for %d compactions: each refusal should compact once", f, compacted)
	}
}

// The recall block of the current user message (its api_content sidecar) is part of what the
// model must see: when a compaction merges the summary into that message, and again when a
// later compaction takes that carrier apart, the retried request after the provider's overflow
// still carries it.
func TestRecallSurvivesCompactionMidTurn(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	// The provider's window is smaller than the agent believes: only its refusal, in the middle
	// of a turn's tool calls, starts a compaction, and the tail then starts at the current ask.
	rec := newRecorder(t, fake.Config{ContextWindow: 8_000})
	a := newAgent(t, st, openaiClient(t, rec.URL), stdTools(), withCompression(10_000, 0))
	sid, compactions, merged := "", 0, 0
	for i := range 40 {
		recall := fmt.Sprintf("recalled fact %d: the staging database is db-%d.internal", i, i)
		input := fmt.Sprintf("Turn %d.", i)
		for _, f := range "abcdefghijklmnop" {
			input += fmt.Sprintf("\nCALL read {\"path\":\"%c%d\"}", f, i)
		}
		before := len(rec.bodies())
		res, err := a.Run(context.Background(), sid, input, agent.RunOptions{Context: wire.TurnContext{Recall: recall}})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		sid = res.SessionID
		if res.Compactions == 0 {
			continue
		}
		compactions += res.Compactions
		bodies := rec.bodies()[before:]
		last := lastUserContent(t, bodies[len(bodies)-1])
		if !strings.Contains(last, recall) || !strings.Contains(last, input) {
			t.Fatalf("turn %d: the request retried after the compaction lost the recall of the current message:\n%s", i, last)
		}
		if strings.Contains(last, compress.SummaryEndMarker) {
			merged++
		}
		// What is stored replays the same bytes next time.
		h := history(t, st, sid)
		for _, m := range h {
			if strings.Contains(m.Content, input) && !strings.Contains(m.APIContent, recall) {
				t.Fatalf("turn %d: the stored current message lost its wire text", i)
			}
		}
	}
	if compactions < 2 || merged == 0 {
		t.Fatalf("%d compactions, %d merged into the current message: the test does not reach its case", compactions, merged)
	}
}

// lastUserContent is the text of the last user message of an OpenAI request body.
func lastUserContent(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			var s string
			if json.Unmarshal(req.Messages[i].Content, &s) == nil {
				return s
			}
			return string(req.Messages[i].Content)
		}
	}
	return ""
}

// The last turn's call is found behind auxiliary calls recorded after it (a title, a recall
// summary): a restart with a cold provider cache is still explained as a resume.
func TestCacheBreakBehindAuxiliaryCalls(t *testing.T) {
	t.Parallel()
	for _, aux := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("%d auxiliary", aux), func(t *testing.T) {
			t.Parallel()
			st, path := newStore(t)
			a := newAgent(t, st, fake.New(fake.Config{}), stdTools())
			sid := ""
			for i := range 6 {
				sid = run(t, a, sid, "CALL read {\"path\":\"f"+string(rune('a'+i))+"\"}").SessionID
			}
			for i := range aux {
				if err := st.RecordRequest(context.Background(), sid, store.RequestRecord{Model: "fake", Task: "title", Usage: store.Usage{InputTokens: int64(10 + i)}}); err != nil {
					t.Fatal(err)
				}
			}
			b := newAgent(t, openStore(t, path), fake.New(fake.Config{}), stdTools())
			res := run(t, b, sid, "after the restart")
			if len(res.Breaks) != 1 || res.Breaks[0].Reason != string(wire.ReasonResume) || res.Breaks[0].LostTokens <= 0 {
				t.Fatalf("breaks after a restart behind %d auxiliary calls: %+v", aux, res.Breaks)
			}
		})
	}
}
