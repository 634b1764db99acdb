package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
)

// transcriptPage is how many rows one page of a transcript shows.
const transcriptPage = 200

// item is one entry of a rendered transcript: a message, or a span of archived messages.
type item struct {
	Msg      *msgView
	Archived []msgView // a run of rows archived by compaction, shown on demand
	Count    int       // rows in Archived, tool results shown inside their calls included
}

type msgView struct {
	store.Message
	Calls  []callView
	Nested bool // a tool result shown inside its call
	Ledger string
	Body   string // a summary's text without its ledger
	CSRF   string // for the branch-here form
}

type callView struct {
	store.ToolCall
	Result *msgView
}

// Delegated is the child session a delegate call's result names ("" for other calls): the
// sub-agent's session, linked from the call.
func (c callView) Delegated() string {
	if c.Function.Name != "delegate" || c.Result == nil {
		return ""
	}
	var r struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(c.Result.Content), &r) != nil || !sessionIDLike(r.SessionID) {
		return ""
	}
	return r.SessionID
}

// sessionIDLike accepts the characters of a session id, nothing that needs escaping in a path.
func sessionIDLike(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

type node struct {
	Session  store.Session
	Current  bool
	Children []*node
}

type sessionData struct {
	baseData
	Session     store.Session
	Items       []item
	Live        *store.HeldLease
	Tree        *node
	Chain       []store.Session
	Requests    []store.RequestRecord
	Breaks      int
	Ledger      string
	FirstID     int64 // the first and last rows on the page
	LastID      int64
	Older       string
	Newer       string
	First, Last string
	At          int64
	Compactions int
}

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	sess, err := s.visible(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	after, err := parseID(q.Get("after"))
	if err != nil {
		return err
	}
	before, err := parseID(q.Get("before"))
	if err != nil {
		return err
	}
	at, err := parseID(q.Get("at"))
	if err != nil {
		return err
	}
	d := sessionData{baseData: s.base(r, v, titleOf(sess)), Session: sess, At: at}
	var ms []store.Message
	switch {
	case at > 0:
		// A window around one message: a few rows before it, the rest after.
		head, err := s.st.ConversationPage(ctx, sess.ID, store.PageQuery{View: store.ViewDisplay, BeforeID: at, Limit: 20})
		if err != nil {
			return err
		}
		tail, err := s.st.ConversationPage(ctx, sess.ID, store.PageQuery{View: store.ViewDisplay, AfterID: at - 1, Limit: transcriptPage - len(head)})
		if err != nil {
			return err
		}
		ms = append(head, tail...)
	case q.Get("last") != "":
		ms, err = s.st.ConversationPage(ctx, sess.ID, store.PageQuery{View: store.ViewDisplay, BeforeID: 1 << 62, Limit: transcriptPage})
	default:
		// ?before=N alone is the page ending just before message N ("older").
		ms, err = s.st.ConversationPage(ctx, sess.ID, store.PageQuery{View: store.ViewDisplay, AfterID: after, BeforeID: before, Limit: transcriptPage})
	}
	if err != nil {
		return fmt.Errorf("load messages of %s: %w", sess.ID, err)
	}
	d.Items, d.Compactions = buildItems(ms, v.csrf)
	base := s.opts.Prefix + "/sessions/" + sess.ID
	if len(ms) > 0 {
		d.FirstID, d.LastID = ms[0].ID, ms[len(ms)-1].ID
		if older, err := s.st.ConversationPage(ctx, sess.ID, store.PageQuery{View: store.ViewDisplay, BeforeID: ms[0].ID, Limit: 1}); err == nil && len(older) > 0 {
			d.Older = base + "?before=" + strconv.FormatInt(ms[0].ID, 10)
			d.First = base
		}
		if newer, err := s.st.ConversationPage(ctx, sess.ID, store.PageQuery{View: store.ViewDisplay, AfterID: d.LastID, Limit: 1}); err == nil && len(newer) > 0 {
			d.Newer = base + "?after=" + strconv.FormatInt(d.LastID, 10)
			d.Last = base + "?last=1"
		}
	}
	if d.Ledger, err = s.latestLedger(ctx, sess.ID); err != nil {
		return err
	}
	if d.Live, err = s.leaseOf(ctx, sess.ID); err != nil {
		return err
	}
	if d.Tree, err = s.lineage(ctx, v, sess); err != nil {
		return err
	}
	if d.Chain, err = s.st.Chain(ctx, sess.ID); err != nil {
		return fmt.Errorf("chain of %s: %w", sess.ID, err)
	}
	if len(d.Chain) < 2 {
		d.Chain = nil
	}
	if d.Requests, err = s.st.Requests(ctx, sess.ID, 200); err != nil {
		return fmt.Errorf("requests of %s: %w", sess.ID, err)
	}
	for _, rq := range d.Requests {
		if rq.Break != nil {
			d.Breaks++
		}
	}
	return s.render(w, func(m *markup.Writer) { s.sessionHTML(m, d) })
}

func titleOf(s store.Session) string {
	if s.Title != "" {
		return s.Title
	}
	return s.ID
}

// buildItems groups a page of rows: runs of archived rows become one span, tool results go
// inside the call that asked for them when both are on the page. It returns the items and how
// many compaction summaries the page shows.
func buildItems(ms []store.Message, csrf string) ([]item, int) {
	views := make([]msgView, len(ms))
	for i, m := range ms {
		views[i] = msgView{Message: m, CSRF: csrf}
		if m.Summary {
			views[i].Body, views[i].Ledger = splitLedger(m.Content)
		}
	}
	// Pair results with calls of the same visibility (an archived call with its archived result).
	calls := map[string]*callView{}
	for i := range views {
		m := &views[i]
		for _, tc := range m.ToolCalls {
			m.Calls = append(m.Calls, callView{ToolCall: tc})
		}
	}
	for i := range views {
		m := &views[i]
		for j := range m.Calls {
			if id := m.Calls[j].ID; id != "" {
				calls[key(m.Active, id)] = &m.Calls[j]
			}
		}
		if m.Role == store.RoleTool && m.ToolCallID != "" {
			if c, ok := calls[key(m.Active, m.ToolCallID)]; ok && c.Result == nil {
				m.Nested = true
				c.Result = m
			}
		}
	}
	var out []item
	compactions := 0
	for i := range views {
		m := &views[i]
		if m.Summary && m.Active {
			compactions++
		}
		archived := !m.Active && m.Compacted
		if archived {
			if n := len(out); n > 0 && out[n-1].Msg == nil {
				out[n-1].Count++
			} else {
				out = append(out, item{Count: 1})
			}
		}
		if m.Nested {
			continue
		}
		if archived {
			out[len(out)-1].Archived = append(out[len(out)-1].Archived, *m)
			continue
		}
		out = append(out, item{Msg: m})
	}
	return out, compactions
}

func key(active bool, id string) string {
	if active {
		return "a" + id
	}
	return "x" + id
}

// ledgerHeading opens the working-set ledger inside a compaction summary (compress.LedgerHeading).
const ledgerHeading = "## Working Set"

// splitLedger cuts a summary body into the summary proper and its working-set ledger section.
func splitLedger(body string) (summary, ledger string) {
	i := strings.Index(body, ledgerHeading)
	if i < 0 || (i > 0 && body[i-1] != '\n') {
		return body, ""
	}
	rest := body[i:]
	end := len(rest)
	if j := strings.Index(rest[len(ledgerHeading):], "\n## "); j >= 0 {
		end = len(ledgerHeading) + j + 1
	}
	return strings.TrimSpace(body[:i] + rest[end:]), strings.TrimSpace(rest[:end])
}

// latestLedger finds the working-set ledger of the active summary: it sits after the head of
// the active history, so the first rows suffice.
func (s *Server) latestLedger(ctx context.Context, id string) (string, error) {
	ms, err := s.st.ConversationPage(ctx, id, store.PageQuery{View: store.ViewActive, Limit: 50})
	if err != nil {
		return "", fmt.Errorf("active head of %s: %w", id, err)
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Summary {
			_, l := splitLedger(ms[i].Content)
			return l, nil
		}
	}
	return "", nil
}

// leaseOf is the turn lease held on id's conversation right now, if any.
func (s *Server) leaseOf(ctx context.Context, id string) (*store.HeldLease, error) {
	root, err := s.st.Root(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("root of %s: %w", id, err)
	}
	live, err := s.liveByConversation(ctx)
	if err != nil {
		return nil, err
	}
	if h, ok := live[root]; ok {
		return &h, nil
	}
	return nil, nil
}

// Bounds of the lineage tree a page draws.
const (
	maxTreeDepth = 50
	maxTreeNodes = 300
)

// lineage builds the tree sess belongs to: up through its parents to the top, then down through
// every child, keeping only sessions the viewer may see.
func (s *Server) lineage(ctx context.Context, v viewer, sess store.Session) (*node, error) {
	top := sess
	for i := 0; i < maxTreeDepth && top.ParentID != ""; i++ {
		p, err := s.st.GetSession(ctx, top.ParentID)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parent of %s: %w", top.ID, err)
		}
		if !v.sees(p) {
			break
		}
		top = p
	}
	count := 0
	var walk func(store.Session, int) (*node, error)
	walk = func(x store.Session, depth int) (*node, error) {
		count++
		n := &node{Session: x, Current: x.ID == sess.ID}
		if depth >= maxTreeDepth {
			return n, nil
		}
		kids, err := s.st.Children(ctx, x.ID)
		if err != nil {
			return nil, fmt.Errorf("children of %s: %w", x.ID, err)
		}
		for _, k := range kids {
			if count >= maxTreeNodes {
				break
			}
			if !v.sees(k) {
				continue
			}
			c, err := walk(k, depth+1)
			if err != nil {
				return nil, err
			}
			n.Children = append(n.Children, c)
		}
		return n, nil
	}
	return walk(top, 0)
}

// prettyJSON indents a tool call's arguments when they are JSON, else returns them as sent.
func prettyJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}

// messagesHTML renders rows as transcript items (for live updates).
func (s *Server) messagesHTML(ms []store.Message, csrf string) markup.HTML {
	items, _ := buildItems(ms, csrf)
	var m markup.Writer
	s.itemsHTML(&m, items)
	return m.Markup()
}
