package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// Source is the source of sessions the gateway creates.
const Source = "api"

// plan is where a request's turn runs and what is stored before it.
type plan struct {
	principal    string
	sessionID    string
	branchedFrom string
	routeKey     string
	prelude      []store.Message // appended before the turn (a new session or branch's history)
	input        string
	results      []agent.ToolResult // the client's tool results, instead of input
	clientTools  []provider.Tool
	instructions string
	maxTokens    int
}

// routeKey is the store route of a principal's lane.
func routeKey(principal, kind, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "api:" + principal + ":" + kind + ":" + hex.EncodeToString(sum[:16])
}

// resolve picks the request's session: explicit id, client key, or derived; then matches the
// sent history against the stored one. The new input is the last user message, or the tool
// results that end the messages (answers to the client's tool calls).
func (g *Gateway) resolve(ctx context.Context, req Request) (plan, error) {
	var system []string
	var msgs []Message
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, m.Content)
		case "user", "assistant", "tool":
			msgs = append(msgs, m)
		default:
			return plan{}, badRequest("messages", "messages with role %q are not supported (user, assistant, tool, system, developer)", m.Role)
		}
	}
	p := plan{principal: req.Principal, clientTools: req.ClientTools, instructions: req.Instructions, maxTokens: req.MaxTokens}
	n := len(msgs)
	for n > 0 && msgs[n-1].Role == "tool" {
		n--
	}
	var prior []Message
	first := ""
	if n < len(msgs) {
		for _, m := range msgs[n:] {
			if m.ToolCallID == "" {
				return plan{}, badRequest("messages", "a tool message must name the tool_call_id it answers")
			}
			p.results = append(p.results, agent.ToolResult{CallID: m.ToolCallID, Content: m.Content})
		}
		prior = msgs[:n]
	} else {
		if n == 0 || msgs[n-1].Role != "user" {
			return plan{}, badRequest("messages", "the last message must be the user's (or tool results)")
		}
		last := msgs[n-1]
		if strings.TrimSpace(last.Content) == "" {
			return plan{}, badRequest("messages", "the last user message is empty")
		}
		p.input, first = last.Content, last.Content
		prior = msgs[:n-1]
	}
	for _, m := range prior {
		if m.Role == "user" {
			first = m.Content
			break
		}
	}

	var cur string // the session the lane continues, "" for none
	switch {
	case req.SessionID != "":
		id, err := g.owned(ctx, req.Principal, req.SessionID)
		if err != nil {
			return plan{}, err
		}
		cur = id
	case req.SessionKey != "":
		p.routeKey = routeKey(req.Principal, "key", req.SessionKey)
		id, err := g.routed(ctx, req.Principal, p.routeKey)
		if err != nil {
			return plan{}, err
		}
		cur = id
	case req.Append:
		// A new conversation (the Responses API without a previous response or conversation).
	default:
		p.routeKey = routeKey(req.Principal, "derived", strings.Join(system, "\n")+"\x00"+first)
		if len(prior) > 0 {
			id, err := g.routed(ctx, req.Principal, p.routeKey)
			if err != nil {
				return plan{}, err
			}
			cur = id
		}
	}

	if req.After > 0 && cur != "" {
		return g.continueAfter(ctx, req, p, cur, prior)
	}
	if req.Append && cur != "" {
		p.sessionID, p.prelude = cur, clientRows(prior)
		return p, nil
	}
	if cur == "" {
		if len(p.results) > 0 && !hasCalls(prior) {
			return plan{}, badRequest("messages", "tool results need the conversation that made the calls (send its history, a session id or a previous response)")
		}
		s, err := g.create(ctx, req.Principal, store.NewSession{})
		if err != nil {
			return plan{}, err
		}
		p.sessionID = s.ID
		p.prelude = clientRows(prior)
		return p, g.putRoute(ctx, p.routeKey, p.sessionID)
	}
	if len(prior) == 0 {
		p.sessionID = cur // a stateful client sends only what is new
		return p, nil
	}
	start := time.Now()
	hist, err := g.st.Conversation(ctx, cur, store.ViewActive)
	g.observe("conversation", start)
	if err != nil {
		return plan{}, fmt.Errorf("load session %s: %w", cur, err)
	}
	seen, at := visibleClient(prior)
	cut, ok := match(hist, seen)
	if ok {
		p.sessionID = cur
		return p, nil
	}
	// Divergence: a branch with the stored rows up to it and the client's messages after it.
	s, err := g.create(ctx, req.Principal, store.NewSession{ParentID: cur, Relation: store.RelationBranch})
	if err != nil {
		return plan{}, err
	}
	p.sessionID, p.branchedFrom = s.ID, cur
	for _, m := range hist[:cut.rows] {
		m.ID, m.SessionID = 0, ""
		p.prelude = append(p.prelude, m)
	}
	from := 0
	if cut.visible > 0 {
		from = at[cut.visible-1] + 1
	}
	p.prelude = append(p.prelude, clientRows(prior[from:])...)
	g.m.branches.Inc()
	return p, g.putRoute(ctx, p.routeKey, p.sessionID)
}

// continueAfter continues a session from one of its messages: the session itself when nothing
// was said after it, else a branch holding the rows up to it.
func (g *Gateway) continueAfter(ctx context.Context, req Request, p plan, cur string, prior []Message) (plan, error) {
	if req.AfterResponse != "" {
		// The session's latest response continues it, even after a compaction gave its rows
		// new ids.
		if latest, err := g.st.LatestResponse(ctx, cur); err == nil && latest == req.AfterResponse {
			p.sessionID, p.prelude = cur, clientRows(prior)
			return p, nil
		}
	}
	start := time.Now()
	hist, err := g.st.Conversation(ctx, cur, store.ViewActive)
	g.observe("conversation", start)
	if err != nil {
		return plan{}, fmt.Errorf("load session %s: %w", cur, err)
	}
	at := -1
	for i, m := range hist {
		if m.ID == req.After {
			at = i
			break
		}
	}
	if at < 0 {
		return plan{}, badRequest("previous_response_id", "that response's message is no longer in the session's active history (compacted or undone); continue from the latest response")
	}
	later := false
	for _, m := range hist[at+1:] {
		if m.Role == store.RoleUser && !m.Summary {
			later = true
			break
		}
	}
	p.prelude = clientRows(prior)
	if !later {
		p.sessionID = cur
		return p, nil
	}
	s, err := g.create(ctx, req.Principal, store.NewSession{ParentID: cur, Relation: store.RelationBranch})
	if err != nil {
		return plan{}, err
	}
	p.sessionID, p.branchedFrom = s.ID, cur
	rows := make([]store.Message, 0, at+1+len(prior))
	for _, m := range hist[:at+1] {
		m.ID, m.SessionID = 0, ""
		rows = append(rows, m)
	}
	p.prelude = append(rows, p.prelude...)
	g.m.branches.Inc()
	return p, nil
}

// owned is the live tip of a session the principal owns.
func (g *Gateway) owned(ctx context.Context, principal, id string) (string, error) {
	start := time.Now()
	s, err := g.st.GetSession(ctx, id)
	g.observe("get_session", start)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("find session %s: %w", id, err)
	}
	if s.UserID != principal {
		return "", fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	tip, err := g.st.ResumeTarget(ctx, s.ID)
	if err != nil {
		return "", fmt.Errorf("find the tip of session %s: %w", id, err)
	}
	return tip, nil
}

// routed is the live tip a route names, "" when there is none (or it is not the principal's).
func (g *Gateway) routed(ctx context.Context, principal, key string) (string, error) {
	start := time.Now()
	r, err := g.st.GetRoute(ctx, key)
	g.observe("get_route", start)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the session of a key: %w", err)
	}
	id, err := g.owned(ctx, principal, r.SessionID)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return id, err
}

// Owned reports whether principal owns session id; it returns the live tip. Another
// principal's session is ErrNotFound.
func (g *Gateway) Owned(ctx context.Context, principal, id string) (string, error) {
	return g.owned(ctx, principal, id)
}

func (g *Gateway) create(ctx context.Context, principal string, ns store.NewSession) (store.Session, error) {
	ns.Source, ns.UserID, ns.Model = Source, principal, g.cfg.Model
	start := time.Now()
	s, err := g.st.CreateSession(ctx, ns)
	g.observe("create_session", start)
	if err != nil {
		return store.Session{}, fmt.Errorf("create session: %w", err)
	}
	return s, nil
}

func (g *Gateway) putRoute(ctx context.Context, key, sessionID string) error {
	if key == "" {
		return nil
	}
	start := time.Now()
	err := g.st.PutRoute(ctx, store.Route{Key: key, SessionID: sessionID})
	g.observe("put_route", start)
	if err != nil {
		return fmt.Errorf("route %s: %w", sessionID, err)
	}
	return nil
}

// clientRows are a client's messages as stored rows.
func clientRows(ms []Message) []store.Message {
	out := make([]store.Message, 0, len(ms))
	for _, m := range ms {
		out = append(out, store.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID})
	}
	return out
}

// hasCalls reports whether a client's history holds a tool call.
func hasCalls(ms []Message) bool {
	for _, m := range ms {
		if len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// visibleClient are the client's messages that match stored visible ones (user messages and
// final assistant replies; tool calls and results are compared by the store's own rows), and
// their indexes in ms.
func visibleClient(ms []Message) ([]Message, []int) {
	var out []Message
	var at []int
	for i, m := range ms {
		if m.Role == "user" || (m.Role == "assistant" && len(m.ToolCalls) == 0 && m.Content != "") {
			out = append(out, m)
			at = append(at, i)
		}
	}
	return out, at
}

// cutPoint is where a branch cuts the stored history: the first rows rows are kept, and they
// hold the first visible messages the client sent.
type cutPoint struct{ rows, visible int }

// visible is one stored message a client sees: a user message or a final assistant reply.
type visible struct {
	role, text string
	row        int // index in the history
}

// visibleOf lists what a client sees of a stored active history, and where the compaction
// summary sits (-1: none): the client's history has everything, the store only a head and a
// tail around the summary.
func visibleOf(hist []store.Message) ([]visible, int) {
	var vs []visible
	summary := -1
	for i, m := range hist {
		switch {
		case m.Summary:
			if summary < 0 {
				summary = len(vs)
			}
		case m.Role == store.RoleUser:
			vs = append(vs, visible{m.Role, m.Content, i})
		case m.Role == store.RoleAssistant && len(m.ToolCalls) == 0 && m.Content != "":
			vs = append(vs, visible{m.Role, m.Content, i})
		}
	}
	return vs, summary
}

func same(v visible, m Message) bool {
	return v.role == m.Role && strings.TrimSpace(v.text) == strings.TrimSpace(m.Content)
}

// match compares the client's earlier messages with the stored history. ok: the client's
// history is the stored one (only the new message is new). Otherwise cut says where to branch.
func match(hist []store.Message, prior []Message) (cutPoint, bool) {
	vs, summary := visibleOf(hist)
	if summary < 0 {
		n := 0
		for n < len(vs) && n < len(prior) && same(vs[n], prior[n]) {
			n++
		}
		if n == len(vs) && n == len(prior) {
			return cutPoint{}, true
		}
		return cutAt(hist, vs, n), false
	}
	// Compacted: the head must be the client's prefix and the tail its suffix.
	head, tail := vs[:summary], vs[summary:]
	n := 0
	for n < len(head) && n < len(prior) && same(head[n], prior[n]) {
		n++
	}
	if n < len(head) {
		return cutAt(hist, vs, n), false
	}
	if len(prior) >= len(head)+len(tail) {
		off := len(prior) - len(tail)
		ok := true
		for i := range tail {
			if !same(tail[i], prior[off+i]) {
				ok = false
				break
			}
		}
		if ok {
			return cutPoint{}, true
		}
	}
	// A divergence inside what was compacted: the branch starts from the client's own copy.
	return cutPoint{}, false
}

// cutAt keeps the stored rows of the first n visible messages; a user message without its
// reply is cut with everything after it, so the branch never starts inside a turn.
func cutAt(hist []store.Message, vs []visible, n int) cutPoint {
	for n > 0 && vs[n-1].role != store.RoleAssistant {
		n--
	}
	if n == 0 {
		return cutPoint{}
	}
	return cutPoint{rows: vs[n-1].row + 1, visible: n}
}
