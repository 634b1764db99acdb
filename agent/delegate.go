package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// DelegateTool is the name of the tool that hands a sub-task to a sub-agent.
const DelegateTool = "delegate"

// Delegation defaults.
const (
	DefaultDelegateParallel = 3
	// MaxDelegateAnswer bounds the sub-agent's answer in the parent's tool result, in bytes; the
	// whole answer stays in the child session.
	MaxDelegateAnswer = 16 << 10
	// SubagentSource is the source of delegated child sessions.
	SubagentSource = "subagent"
)

// End reasons of a delegated child session.
const (
	EndDelegateDone      = "delegate_done"
	EndDelegateCancelled = "delegate_cancelled"
	EndDelegateFailed    = "delegate_failed"
)

// Delegation configures the delegate tool. Its zero value turns the tool off.
type Delegation struct {
	// MaxDepth is how deep delegations nest: 1 lets the agent delegate while its sub-agents
	// cannot; 0 offers no delegate tool.
	MaxDepth int
	// MaxParallel bounds the delegations of one model response that run at once
	// (DefaultDelegateParallel when zero).
	MaxParallel int
}

var delegateDef = provider.Tool{
	Name: DelegateTool,
	Description: "Hand a bounded sub-task to a sub-agent that works in its own session, with its own context " +
		"window, and returns only its final answer. Use it for work that would flood your context (reading " +
		"many files, long searches) or for independent parts of a task: several delegate calls in one " +
		"response run in parallel. The sub-agent sees nothing of this conversation except goal and context. " +
		"Returns JSON: session_id (its session, readable with session_search), status and answer.",
	Parameters: json.RawMessage(`{"additionalProperties":false,"properties":{` +
		`"context":{"description":"What the sub-agent needs to know: paths, findings so far, constraints, the form of the answer wanted.","type":"string"},` +
		`"goal":{"description":"The task, stated so that someone who has not seen this conversation can do it.","type":"string"},` +
		`"session_id":{"description":"Continue an earlier delegation of yours (its session_id): that sub-agent gets goal as a follow-up and still has everything it did before.","type":"string"},` +
		`"tools":{"description":"Only these of your tools (default: all of them).","items":{"type":"string"},"type":"array"}` +
		`},"required":["goal"],"type":"object"}`),
}

// delegateArgs are the delegate tool's arguments.
type delegateArgs struct {
	Goal    string    `json:"goal"`
	Context string    `json:"context"`
	Tools   *[]string `json:"tools"`
	// SessionID continues an earlier delegation of the caller.
	SessionID string `json:"session_id"`
}

// DelegateResult is the parent's tool result of one delegation, as JSON.
type DelegateResult struct {
	SessionID string `json:"session_id,omitempty"`
	// Status is "completed", "failed" or "cancelled".
	Status string `json:"status"`
	Answer string `json:"answer,omitempty"`
	// Truncated says the answer was cut to MaxDelegateAnswer; the child session has it whole.
	Truncated    bool   `json:"truncated,omitempty"`
	Error        string `json:"error,omitempty"`
	ModelCalls   int    `json:"model_calls"`
	ToolCalls    int    `json:"tool_calls"`
	Compactions  int    `json:"compactions,omitempty"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
}

// canDelegate reports whether this agent offers the delegate tool.
func (a *Agent) canDelegate() bool {
	return a.allowDelegate && a.depth < a.cfg.Delegation.MaxDepth
}

// withDelegate inserts the delegate definition into defs (sorted by name) when the agent offers
// it; a registry tool of the same name is replaced.
func (a *Agent) withDelegate(defs []provider.Tool) []provider.Tool {
	if !a.canDelegate() {
		return defs
	}
	defs = slices.DeleteFunc(defs, func(t provider.Tool) bool { return t.Name == DelegateTool })
	i, _ := slices.BinarySearchFunc(defs, DelegateTool, func(t provider.Tool, name string) int { return strings.Compare(t.Name, name) })
	return slices.Insert(defs, i, delegateDef)
}

// isDelegate reports whether c is a delegation this run serves: the tool was offered this turn.
func (r *run) isDelegate(c store.ToolCall) bool {
	if c.Function.Name != DelegateTool || !r.a.canDelegate() || r.client[DelegateTool] {
		return false
	}
	return slices.ContainsFunc(r.tools, func(t provider.Tool) bool { return t.Name == DelegateTool })
}

// delegateAll runs the delegations of one response at once, at most MaxParallel together, and
// returns their results in call order. It returns when every child has finished.
func (r *run) delegateAll(ctx context.Context, calls []store.ToolCall) []toolOutcome {
	out := make([]toolOutcome, len(calls))
	limit := r.a.cfg.Delegation.MaxParallel
	if limit <= 0 {
		limit = DefaultDelegateParallel
	}
	sem := make(chan struct{}, limit)
	// The sub-agents' notices (a compaction, a paused compactor) reach the caller's OnNotice one
	// at a time, named by child; the turn's goroutine waits meanwhile.
	var mu sync.Mutex
	notify := func(string) {}
	if r.opts.OnNotice != nil {
		notify = func(s string) {
			mu.Lock()
			defer mu.Unlock()
			r.opts.OnNotice(s)
		}
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				out[i] = delegateOutcome(DelegateResult{Status: "cancelled", Error: "the turn was interrupted before the delegation started"})
				return
			}
			defer func() {
				if p := recover(); p != nil {
					out[i] = delegateOutcome(DelegateResult{Status: "failed", Error: fmt.Sprintf("the delegation failed unexpectedly (panic: %v)", p)})
				}
			}()
			out[i] = delegateOutcome(r.delegate(ctx, c, notify))
		}()
	}
	wg.Wait()
	return out
}

func delegateOutcome(d DelegateResult) toolOutcome {
	b, err := json.Marshal(d)
	if err != nil { // cannot happen: plain strings and numbers
		return toolOutcome{text: "Error: " + err.Error(), isErr: true}
	}
	return toolOutcome{text: string(b), isErr: d.Status != "completed", final: true}
}

// delegate runs one delegation: a child session (relation delegate, source subagent) whose
// sub-agent works on the goal with the allowed tools, under its own lease, prompt and
// compaction, and ends with a recorded reason whatever happened.
func (r *run) delegate(ctx context.Context, c store.ToolCall, notify func(string)) DelegateResult {
	var args delegateArgs
	if err := json.Unmarshal([]byte(cmpOr(c.Function.Arguments, "{}")), &args); err != nil {
		return DelegateResult{Status: "failed", Error: "invalid arguments for delegate: " + err.Error()}
	}
	goal := strings.TrimSpace(args.Goal)
	if goal == "" {
		return DelegateResult{Status: "failed", Error: "invalid arguments for delegate: goal is empty"}
	}
	own := slices.DeleteFunc(slices.Clone(r.tools), func(t provider.Tool) bool { return r.client[t.Name] })
	child, err := r.a.child(own, args.Tools)
	if err != nil {
		return DelegateResult{Status: "failed", Error: "invalid arguments for delegate: " + err.Error()}
	}
	input := goal
	if s := strings.TrimSpace(args.Context); s != "" {
		input += "\n\nContext:\n" + s
	}
	sid, err := r.childSession(ctx, child, strings.TrimSpace(args.SessionID))
	if err != nil {
		if ctx.Err() != nil {
			return DelegateResult{Status: "cancelled", Error: "the turn was interrupted before the sub-agent started"}
		}
		return DelegateResult{Status: "failed", Error: err.Error()}
	}
	res, err := child.Run(ctx, sid, input, RunOptions{OnNotice: func(s string) { notify("sub-agent " + sid + ": " + s) }})
	d := DelegateResult{SessionID: cmpOr(res.SessionID, sid), ModelCalls: res.Calls, ToolCalls: res.ToolCalls, Compactions: res.Compactions,
		InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens}
	reason := EndDelegateDone
	switch {
	case ctx.Err() != nil:
		d.Status, reason = "cancelled", EndDelegateCancelled
		d.Error = "the turn was interrupted; the sub-agent stopped and its session keeps what it did so far"
	case err != nil:
		d.Status, reason = "failed", EndDelegateFailed
		d.Error = oneLineErr(err)
	default:
		d.Status = "completed"
	}
	if res.Reply != "" {
		d.Answer = capText(res.Reply, MaxDelegateAnswer)
		d.Truncated = len(d.Answer) != len(res.Reply)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeBudget)
	defer cancel()
	if err := r.a.st.EndSession(wctx, d.SessionID, reason); err != nil && d.Error == "" {
		// The answer is good; only the child's end stamp is missing.
		d.Error = "the sub-agent's session could not be marked ended: " + oneLineErr(err)
	}
	return d
}

// childSession creates the child session of a new delegation, or reopens the caller's earlier
// delegation ref (an id or unique prefix) to continue it.
func (r *run) childSession(ctx context.Context, child *Agent, ref string) (string, error) {
	if ref == "" {
		mc, _ := json.Marshal(map[string]any{"_delegate_from": r.sess.ID, "delegate_depth": child.depth})
		s, err := child.CreateSession(ctx, store.NewSession{
			Source: SubagentSource, ParentID: r.sess.ID, Relation: store.RelationDelegate,
			ModelConfig: mc, Cwd: r.sess.Cwd, GitBranch: r.sess.GitBranch,
		})
		if err != nil {
			return "", err
		}
		return s.ID, nil
	}
	s, err := r.a.st.ResolveSession(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("invalid arguments for delegate: session_id %q: %w", ref, err)
	}
	root, err := r.a.st.Root(ctx, s.ID)
	if err != nil {
		return "", fmt.Errorf("find the delegation of %s: %w", s.ID, err)
	}
	if root != s.ID {
		if s, err = r.a.st.GetSession(ctx, root); err != nil {
			return "", fmt.Errorf("find the delegation of %s: %w", root, err)
		}
	}
	if s.ParentID != r.sess.ID || s.Relation != store.RelationDelegate {
		return "", fmt.Errorf("invalid arguments for delegate: session_id %s is not a delegation of this session", s.ID)
	}
	tip, err := r.a.st.ResumeTarget(ctx, s.ID)
	if err != nil {
		return "", fmt.Errorf("find the delegation of %s: %w", s.ID, err)
	}
	if err := r.a.st.ReopenSession(ctx, tip); err != nil {
		return "", fmt.Errorf("reopen the delegation %s: %w", tip, err)
	}
	return tip, nil
}

// child is the sub-agent of a delegation: this agent's model, store, compaction and tools (the
// same approver and secrets), one level deeper. It is offered at most what the caller was
// offered this turn (offered; never a caller-run client tool), or the named subset of it;
// unknown names are an error. It gets delegate itself only when that is among them and it is
// below the depth limit.
func (a *Agent) child(offered []provider.Tool, names *[]string) (*Agent, error) {
	c := &Agent{st: a.st, models: a.models, cool: a.cool, tools: a.tools, cfg: a.cfg, now: a.now,
		memos: map[string]*memo{}, depth: a.depth + 1}
	c.cfg.Source = SubagentSource
	c.cfg.Prompt.Platform = SubagentSource
	c.cfg.Prompt.PlatformHint, c.cfg.Prompt.ReplacePlatformHint = "", false
	have := map[string]bool{}
	var avail []string
	for _, t := range offered {
		have[t.Name] = true
		avail = append(avail, t.Name)
	}
	want := avail
	if names != nil {
		want = *names
	}
	allow := map[string]bool{}
	var unknown []string
	for _, n := range want {
		if !have[n] {
			unknown = append(unknown, n)
		}
		allow[n] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown tools %s (available: %s)", strings.Join(unknown, ", "), strings.Join(avail, ", "))
	}
	c.allowDelegate = allow[DelegateTool]
	if a.tools != nil {
		c.tools = subsetTools{inner: a.tools, allow: allow}
	}
	return c, nil
}

// subsetTools offers only the allowed tools of inner, and refuses calls of the others.
type subsetTools struct {
	inner Tools
	allow map[string]bool
}

func (s subsetTools) Definitions() []provider.Tool {
	return slices.DeleteFunc(s.inner.Definitions(), func(t provider.Tool) bool { return !s.allow[t.Name] })
}

func (s subsetTools) Call(ctx context.Context, sessionID string, c store.ToolCall) (string, bool) {
	if !s.allow[c.Function.Name] {
		return fmt.Sprintf("Error: tool %q is not available to this sub-agent.", c.Function.Name), true
	}
	return s.inner.Call(ctx, sessionID, c)
}

func cmpOr(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// oneLineErr is err's text on one line, bounded.
func oneLineErr(err error) string {
	var pe *provider.Error
	s := err.Error()
	if errors.As(err, &pe) && pe.Message != "" && !strings.Contains(s, pe.Message) {
		s += ": " + pe.Message
	}
	s = strings.Join(strings.Fields(s), " ")
	return capText(s, 2000)
}
