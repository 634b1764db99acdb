package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
)

func withDelegation(depth, parallel int) opt {
	return func(d *agent.Deps) { d.Config.Delegation = agent.Delegation{MaxDepth: depth, MaxParallel: parallel} }
}

// delegateCall is a CALL directive line for the delegate tool.
func delegateCall(goal, context string, tools ...string) string {
	args := map[string]any{"goal": goal}
	if context != "" {
		args["context"] = context
	}
	if tools != nil {
		args["tools"] = tools
	}
	b, _ := json.Marshal(args)
	return "CALL delegate " + string(b)
}

// delegateResults are the parent's delegate tool results, in the order they were stored.
func delegateResults(t *testing.T, st store.Backend, sid string) []agent.DelegateResult {
	t.Helper()
	var out []agent.DelegateResult
	for _, m := range history(t, st, sid) {
		if m.Role != store.RoleTool || m.ToolName != agent.DelegateTool {
			continue
		}
		var d agent.DelegateResult
		if err := json.Unmarshal([]byte(m.Content), &d); err != nil {
			t.Fatalf("delegate result is not JSON: %v\n%s", err, m.Content)
		}
		out = append(out, d)
	}
	return out
}

// guard bounds a test that would otherwise hang forever on a bug (a delegation run one after
// the other never passes its barrier); the verdict never depends on it otherwise.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func toolNames(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

// Two delegations of one response run at once, each in its own child session; the parent gets
// each answer with its child's id, in call order.
func TestDelegateParallel(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	rec := newRecorder(t, fake.Config{})
	a := newAgent(t, st, openaiClient(t, rec.URL), stdTools(), withDelegation(1, 2))
	// Each child's model call waits at the barrier until both are in flight: run one after the
	// other, the first would wait forever.
	input := "Split the work.\n" +
		delegateCall("WAIT pair 2\nSAY first half done", "look at src/a") + "\n" +
		delegateCall("WAIT pair 2\nSAY second half done", "")
	res, err := a.Run(guard(t), "", input, agent.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent := res.SessionID
	if got := roles(history(t, st, parent)); !slices.Equal(got, []string{"user", "assistant(2 calls)", "tool", "tool", "assistant"}) {
		t.Fatalf("parent history = %v", got)
	}
	ds := delegateResults(t, st, parent)
	if len(ds) != 2 {
		t.Fatalf("%d delegate results", len(ds))
	}
	for i, want := range []string{"first half done", "second half done"} {
		d := ds[i]
		if d.Status != "completed" || d.Answer != want || d.SessionID == "" || d.ModelCalls != 1 {
			t.Fatalf("result %d = %+v, want answer %q", i, d, want)
		}
		child, err := st.GetSession(context.Background(), d.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if child.ParentID != parent || child.Relation != store.RelationDelegate || child.Source != agent.SubagentSource ||
			child.EndReason != agent.EndDelegateDone {
			t.Fatalf("child %d = parent %q relation %q source %q end %q", i, child.ParentID, child.Relation, child.Source, child.EndReason)
		}
		// The child's own accounting, prompt and transcript.
		if child.Title != "" {
			t.Fatalf("child %d took the title %q from the user's title space", i, child.Title)
		}
		if child.Usage.APICalls != 1 || child.Usage.InputTokens == 0 {
			t.Fatalf("child %d usage = %+v", i, child.Usage)
		}
		h := history(t, st, d.SessionID)
		if len(h) != 2 || h[1].Content != want || !strings.HasPrefix(h[0].Content, "WAIT pair 2") {
			t.Fatalf("child %d history = %v", i, roles(h))
		}
		sp, err := st.SystemPrompt(context.Background(), d.SessionID)
		if err != nil || !strings.Contains(sp, "You are a sub-agent") {
			t.Fatalf("child %d system prompt lacks the sub-agent hint (%v):\n%s", i, err, sp)
		}
		if strings.Contains(sp, "Use the delegate tool") {
			t.Fatalf("child %d at the depth limit is told to delegate", i)
		}
	}
	if ds[0].SessionID == ds[1].SessionID {
		t.Fatal("both delegations ran in one child")
	}
	if h := history(t, st, ds[0].SessionID); !strings.Contains(h[0].Content, "Context:\nlook at src/a") {
		t.Fatalf("the context did not reach the child:\n%s", h[0].Content)
	}
	if sp, _ := st.SystemPrompt(context.Background(), parent); !strings.Contains(sp, "Use the delegate tool") || strings.Contains(sp, "You are a sub-agent") {
		t.Fatalf("the caller's prompt lacks the delegate guidance or calls it a sub-agent:\n%s", sp)
	}
	p, _ := st.GetSession(context.Background(), parent)
	if p.Usage.APICalls != 2 {
		t.Fatalf("parent recorded %d model calls, want its own 2 (children record theirs)", p.Usage.APICalls)
	}
	kids, _ := st.Children(context.Background(), parent)
	if len(kids) != 2 {
		t.Fatalf("%d children", len(kids))
	}
	// Listing hides the children by default.
	ls, _ := st.ListSessions(context.Background(), store.ListOptions{})
	if len(ls) != 1 || ls[0].ID != parent {
		t.Fatalf("default listing shows %d sessions", len(ls))
	}
	all, _ := st.ListSessions(context.Background(), store.ListOptions{IncludeChildren: true})
	if len(all) != 3 {
		t.Fatalf("listing with children shows %d sessions", len(all))
	}
	// The parent is offered delegate, the children (at the depth limit) are not.
	for _, b := range rec.bodies() {
		names := toolNames(t, b)
		isChild := strings.Contains(string(b), "WAIT pair 2") && !strings.Contains(string(b), "CALL delegate")
		if slices.Contains(names, agent.DelegateTool) == isChild {
			t.Fatalf("tools offered %v (child request: %v)", names, isChild)
		}
	}
}

// A delegation honours the caller's cancellation: the child stops with a recorded reason and
// keeps its transcript, the parent stores a cancelled result naming the child, and the parent
// continues on the next turn.
func TestDelegateCancelled(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	model := fake.New(fake.Config{})
	a := newAgent(t, st, model, stdTools(), withDelegation(1, 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res agent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := a.Run(ctx, "", delegateCall("WAIT never 2\nSAY unreachable", ""), agent.RunOptions{})
		done <- outcome{res, err}
	}()
	// The child's model call is in flight (held at its barrier): interrupt now.
	if err := model.AwaitBarrier(guard(t), "never", 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	o := <-done
	if !errors.Is(o.err, context.Canceled) || !o.res.Interrupted {
		t.Fatalf("run ended with %v (interrupted %v), want the cancellation", o.err, o.res.Interrupted)
	}
	parent := o.res.SessionID
	ds := delegateResults(t, st, parent)
	if len(ds) != 1 || ds[0].Status != "cancelled" || ds[0].SessionID == "" {
		t.Fatalf("delegate results = %+v", ds)
	}
	child, _ := st.GetSession(context.Background(), ds[0].SessionID)
	if child.EndReason != agent.EndDelegateCancelled || child.ParentID != parent {
		t.Fatalf("child ended %q, parent %q", child.EndReason, child.ParentID)
	}
	if h := history(t, st, child.ID); len(h) == 0 || h[0].Role != store.RoleUser || !strings.Contains(h[0].Content, "WAIT never") {
		t.Fatalf("the child's transcript was lost: %v", roles(h))
	}
	if msg := compress.Validate(history(t, st, parent)); msg != "" {
		t.Fatalf("the parent's history is not acceptable to a provider: %s", msg)
	}
	if res := run(t, a, parent, "SAY still here"); res.Reply != "still here" {
		t.Fatalf("next turn = %q", res.Reply)
	}
}

// A child that fails: the parent gets an error result naming the child, and goes on; the child
// keeps its transcript and ends with the failure reason.
func TestDelegateChildFails(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withDelegation(1, 0))
	res := run(t, a, "", delegateCall("FAULT auth\nSAY never", ""))
	ds := delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || ds[0].Status != "failed" || !strings.Contains(strings.ToLower(ds[0].Error), "auth") || ds[0].SessionID == "" {
		t.Fatalf("delegate results = %+v", ds)
	}
	if !strings.HasPrefix(res.Reply, "Tool results: delegate returned") {
		t.Fatalf("the parent did not go on after the failure: %q", res.Reply)
	}
	child, _ := st.GetSession(context.Background(), ds[0].SessionID)
	if child.EndReason != agent.EndDelegateFailed {
		t.Fatalf("child ended %q", child.EndReason)
	}
	if h := history(t, st, child.ID); len(h) != 1 || !strings.Contains(h[0].Content, "FAULT auth") {
		t.Fatalf("child transcript = %v", roles(h))
	}
}

// Bad arguments are a failed result without a child.
func TestDelegateBadArguments(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withDelegation(1, 0))
	res := run(t, a, "", `CALL delegate {"goal":"  "}`+"\n"+delegateCall("SAY x", "", "echo", "nonexistent"))
	ds := delegateResults(t, st, res.SessionID)
	if len(ds) != 2 || ds[0].Status != "failed" || !strings.Contains(ds[0].Error, "goal is empty") ||
		ds[1].Status != "failed" || !strings.Contains(ds[1].Error, "nonexistent") || ds[0].SessionID != "" || ds[1].SessionID != "" {
		t.Fatalf("delegate results = %+v", ds)
	}
	if kids, _ := st.Children(context.Background(), res.SessionID); len(kids) != 0 {
		t.Fatalf("%d children for bad arguments", len(kids))
	}
}

// The depth limit: with max_depth 2 a child may delegate once more, the grandchild may not;
// a tool subset without delegate takes it away earlier.
func TestDelegateDepth(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	rec := newRecorder(t, fake.Config{})
	a := newAgent(t, st, openaiClient(t, rec.URL), stdTools(), withDelegation(2, 0))
	inner := delegateCall("SAY from the grandchild", "")
	res := run(t, a, "", delegateCall(inner+"\n"+delegateCall(delegateCall("SAY too deep", ""), ""), ""))
	ds := delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || ds[0].Status != "completed" {
		t.Fatalf("delegate results = %+v", ds)
	}
	child := ds[0].SessionID
	gs := delegateResults(t, st, child)
	if len(gs) != 2 || gs[0].Answer != "from the grandchild" {
		t.Fatalf("the child's delegations = %+v", gs)
	}
	grand, _ := st.GetSession(context.Background(), gs[0].SessionID)
	if grand.ParentID != child || grand.Relation != store.RelationDelegate {
		t.Fatalf("grandchild parent %q relation %q", grand.ParentID, grand.Relation)
	}
	// The grandchild's model was not offered delegate: its directive to delegate is refused in text.
	if !strings.Contains(gs[1].Answer, "cannot call delegate") {
		t.Fatalf("a grandchild at the depth limit delegated: %+v", gs[1])
	}
	for _, b := range rec.bodies() {
		if strings.Contains(string(b), `"content":"SAY from the grandchild"`) && slices.Contains(toolNames(t, b), agent.DelegateTool) {
			t.Fatalf("the grandchild was offered delegate: %v", toolNames(t, b))
		}
	}

	// A subset: only echo, so no delegate even below the limit.
	res = run(t, a, "", delegateCall(delegateCall("SAY x", "")+"\nCALL echo {\"path\":\"p\"}", "", "echo"))
	ds = delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || !strings.Contains(ds[0].Answer, "cannot call delegate") {
		t.Fatalf("a child restricted to echo delegated: %+v", ds)
	}
}

// A tool subset is enforced: the child is offered only those tools.
func TestDelegateToolSubset(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withDelegation(1, 0))
	res := run(t, a, "", delegateCall("CALL echo {\"path\":\"p\"}", "", "echo"))
	ds := delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || ds[0].Status != "completed" || !strings.Contains(ds[0].Answer, `echo returned "echo p"`) {
		t.Fatalf("delegate results = %+v", ds)
	}
	res = run(t, a, "", delegateCall("CALL read {\"path\":\"p\"}", "", "echo"))
	ds = delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || !strings.Contains(ds[0].Answer, "cannot call read") {
		t.Fatalf("a child used a tool outside its subset: %+v", ds)
	}
	// A turn restricted to some tools: its sub-agent gets no more than those.
	res, err := a.Run(context.Background(), "", delegateCall("CALL read {\"path\":\"p\"}", ""),
		agent.RunOptions{RestrictTools: true, AllowTools: []string{agent.DelegateTool, "echo"}})
	if err != nil {
		t.Fatal(err)
	}
	ds = delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || !strings.Contains(ds[0].Answer, "cannot call read") {
		t.Fatalf("a child of a restricted turn used a tool the turn did not have: %+v", ds)
	}
	// Without delegate among the allowed tools, the turn cannot delegate at all.
	res, err = a.Run(context.Background(), "", delegateCall("SAY x", ""), agent.RunOptions{RestrictTools: true, AllowTools: []string{"echo"}})
	if err != nil || !strings.Contains(res.Reply, "cannot call delegate") {
		t.Fatalf("a turn without delegate allowed delegated: %q, %v", res.Reply, err)
	}
}

// A child compacts in its own session when its work outgrows the window, within its first
// turn (many rounds of tool calls); its notice reaches the caller named by child; the parent's
// history is untouched by it.
func TestDelegateChildCompacts(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withDelegation(1, 0), withCompression(8_000, 2_000))
	var notices []string
	res, err := a.Run(context.Background(), "", delegateCall("REPEAT 30\nCALL read {\"path\":\"src/big.go\"}", ""),
		agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compactions != 0 {
		t.Fatalf("the parent compacted %d times", res.Compactions)
	}
	ds := delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || ds[0].Status != "completed" || ds[0].Compactions == 0 || ds[0].ModelCalls < 5 {
		t.Fatalf("delegate results = %+v", ds)
	}
	child := ds[0].SessionID
	if !slices.ContainsFunc(notices, func(s string) bool { return strings.HasPrefix(s, "sub-agent "+child+": Compacted") }) {
		t.Fatalf("the child's compaction notice did not reach the caller: %q", notices)
	}
	disp, err := st.Conversation(context.Background(), child, store.ViewDisplay)
	if err != nil {
		t.Fatal(err)
	}
	archived := 0
	for _, m := range disp {
		if !m.Active && m.Compacted {
			archived++
		}
	}
	if archived == 0 {
		t.Fatal("the child's compaction archived nothing")
	}
	if h := history(t, st, res.SessionID); len(h) != 4 {
		t.Fatalf("parent history = %v", roles(h))
	}
}

// A follow-up delegation (session_id) continues the same sub-agent session, reopened and ended
// again; only the caller's own delegations can be continued.
func TestDelegateFollowUp(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withDelegation(1, 0))
	res := run(t, a, "", delegateCall("SAY first part", ""))
	ds := delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || ds[0].Status != "completed" {
		t.Fatalf("delegate results = %+v", ds)
	}
	child := ds[0].SessionID
	follow, _ := json.Marshal(map[string]string{"goal": "SAY second part", "session_id": child})
	res = run(t, a, res.SessionID, "CALL delegate "+string(follow))
	ds = delegateResults(t, st, res.SessionID)
	if len(ds) != 2 || ds[1].Status != "completed" || ds[1].SessionID != child || ds[1].Answer != "second part" {
		t.Fatalf("follow-up result = %+v", ds[len(ds)-1])
	}
	if got := roles(history(t, st, child)); !slices.Equal(got, []string{"user", "assistant", "user", "assistant"}) {
		t.Fatalf("the child's history after the follow-up = %v", got)
	}
	if s, _ := st.GetSession(context.Background(), child); s.EndReason != agent.EndDelegateDone {
		t.Fatalf("the continued child ended %q", s.EndReason)
	}
	other := run(t, a, "", "SAY unrelated")
	bad, _ := json.Marshal(map[string]string{"goal": "SAY x", "session_id": other.SessionID})
	res = run(t, a, res.SessionID, "CALL delegate "+string(bad))
	ds = delegateResults(t, st, res.SessionID)
	if d := ds[len(ds)-1]; d.Status != "failed" || !strings.Contains(d.Error, "not a delegation of this session") {
		t.Fatalf("continuing a foreign session = %+v", d)
	}
}

// BenchmarkDelegate is one turn whose response makes n delegations (each a child session: create,
// lease, prompt build, one model call, end) against the same turn making n plain tool calls, on
// the in-process fake and SQLite. The difference is what a delegation costs spool itself.
func BenchmarkDelegate(b *testing.B) {
	for _, n := range []int{1, 3} {
		for _, kind := range []string{"tools", "delegations"} {
			b.Run(fmt.Sprintf("%s=%d", kind, n), func(b *testing.B) {
				st := openStoreB(b)
				a, err := agent.New(agent.Deps{Store: st, Client: fake.New(fake.Config{}), Tools: stdTools(), Config: agent.Config{
					Model: "fake-model", Prompt: promptEnv(), Delegation: agent.Delegation{MaxDepth: 1, MaxParallel: 3}}})
				if err != nil {
					b.Fatal(err)
				}
				var lines []string
				for i := range n {
					if kind == "tools" {
						lines = append(lines, fmt.Sprintf(`CALL echo {"path":"p%d"}`, i))
					} else {
						lines = append(lines, delegateCall(fmt.Sprintf("SAY part %d done", i), ""))
					}
				}
				input := strings.Join(lines, "\n")
				b.ResetTimer()
				for range b.N {
					if _, err := a.Run(context.Background(), "", input, agent.RunOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The caller's result is bounded: a long answer is cut (head and tail kept, marked truncated)
// while the child keeps it whole.
func TestDelegateAnswerBounded(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withDelegation(1, 0))
	long := strings.Repeat("abcdefgh ", 4000) // 36,000 bytes
	res := run(t, a, "", delegateCall("SAY "+long, ""))
	ds := delegateResults(t, st, res.SessionID)
	if len(ds) != 1 || !ds[0].Truncated || len(ds[0].Answer) > agent.MaxDelegateAnswer+100 || !strings.Contains(ds[0].Answer, "bytes omitted") {
		t.Fatalf("result: truncated %v, %d bytes", ds[0].Truncated, len(ds[0].Answer))
	}
	h := history(t, st, ds[0].SessionID)
	if got := h[len(h)-1].Content; got != strings.TrimSpace(long) {
		t.Fatalf("the child's answer is %d bytes, want the whole %d", len(got), len(strings.TrimSpace(long)))
	}
}
