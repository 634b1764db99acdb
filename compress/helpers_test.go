package compress

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/store"
)

// hist builds a history from a compact spec: "s" system, "u" user, "a" assistant text,
// "cN" assistant with N tool calls (c = c1), "t" the next unanswered tool result, "S" a
// summary carried as a user message. Ids start at 1.
func hist(spec string) []store.Message {
	var ms []store.Message
	var pending []string
	call := 0
	for _, tok := range strings.Fields(spec) {
		id := int64(len(ms) + 1)
		switch {
		case tok == "s":
			ms = append(ms, store.Message{Role: store.RoleSystem, Content: "system prompt"})
		case tok == "u":
			ms = append(ms, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("user ask %d", id)})
		case tok == "a":
			ms = append(ms, store.Message{Role: store.RoleAssistant, Content: fmt.Sprintf("assistant reply %d", id)})
		case tok == "S":
			ms = append(ms, store.Message{Role: store.RoleUser, Content: summaryContent("## Goal\nold goal"), Summary: true})
		case tok[0] == 'c':
			n := 1
			if len(tok) > 1 {
				fmt.Sscanf(tok[1:], "%d", &n)
			}
			m := store.Message{Role: store.RoleAssistant}
			for range n {
				call++
				cid := fmt.Sprintf("call_%d", call)
				pending = append(pending, cid)
				m.ToolCalls = append(m.ToolCalls, store.ToolCall{ID: cid, Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: fmt.Sprintf(`{"command":"step %d"}`, call)}})
			}
			ms = append(ms, m)
		case tok == "t":
			cid := pending[0]
			pending = pending[1:]
			ms = append(ms, store.Message{Role: store.RoleTool, ToolCallID: cid, ToolName: "terminal", Content: "exit code: 0\nok " + cid})
		default:
			panic("bad spec token " + tok)
		}
		ms[len(ms)-1].ID = id
		ms[len(ms)-1].SessionID = "sess"
		ms[len(ms)-1].Active = true
	}
	return ms
}

func roles(ms []store.Message) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case m.Summary:
			b.WriteString("S")
		case m.Role == store.RoleAssistant && len(m.ToolCalls) > 0:
			fmt.Fprintf(&b, "c%d", len(m.ToolCalls))
		default:
			b.WriteByte(m.Role[0])
		}
	}
	return b.String()
}

// recordingSummarizer answers with a fixed template and records every prompt.
type recordingSummarizer struct {
	mu      sync.Mutex
	prompts []string
	models  []string
	errs    []error // returned in order while non-empty
	reply   string
}

func (r *recordingSummarizer) Summarize(ctx context.Context, model, prompt string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prompts = append(r.prompts, prompt)
	r.models = append(r.models, model)
	if len(r.errs) > 0 {
		err := r.errs[0]
		r.errs = r.errs[1:]
		if err != nil {
			return "", err
		}
	}
	if r.reply != "" {
		return r.reply, nil
	}
	return "## Historical Task Snapshot\nNone.\n\n## Goal\nShip the feature.\n\n## Completed Actions\n1. RAN tests — ok [tool: terminal]", nil
}

func (r *recordingSummarizer) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.prompts) == 0 {
		return ""
	}
	return r.prompts[len(r.prompts)-1]
}

type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time          { return c.t }
func (c *fixedClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// session simulates a store: committing a plan gives its messages fresh ids, like
// ArchiveAndCompact does, and new turns are appended after them.
type session struct {
	id     string
	active []store.Message
	nextID int64
	all    map[int64]store.Message // every row ever written, archived ones included
}

func newSession(ms []store.Message) *session {
	s := &session{id: "sess", all: map[int64]store.Message{}}
	for _, m := range ms {
		s.nextID = max(s.nextID, m.ID)
	}
	s.active = ms
	return s
}

func (s *session) append(ms ...store.Message) {
	for _, m := range ms {
		s.nextID++
		m.ID, m.SessionID, m.Active = s.nextID, s.id, true
		s.active = append(s.active, m)
		s.all[m.ID] = m
	}
}

func (s *session) commit(p Plan) {
	s.active = nil
	s.append(p.Messages...)
}

// codingTurn appends one user ask followed by a terminal call, its result and a reply.
func codingTurn(s *session, i int, ask, command, output string) {
	cid := fmt.Sprintf("call_%d_%d", s.nextID, i)
	s.append(
		store.Message{Role: store.RoleUser, Content: ask},
		store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: cid, Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: fmt.Sprintf(`{"command":%q}`, command)}}}},
		store.Message{Role: store.RoleTool, ToolCallID: cid, ToolName: "terminal", Content: output},
		store.Message{Role: store.RoleAssistant, Content: fmt.Sprintf("Done with step %d. %s", i, strings.Repeat("Some explanation of the change. ", 20))},
	)
}

// extractLedger reads the working set out of messages, each scanned afresh.
func extractLedger(ms []store.Message) []LedgerEntry {
	return ledgerEntries(ms, scanMessages(ms))
}

// prune is pruneHistory over a fresh scan of the unpruned ms.
func prune(ms []store.Message, tok []int, budget, protectLastN int, sessionID string) pruneStats {
	return pruneHistory(ms, newHistory(slices.Clone(ms)), tok, budget, protectLastN, sessionID)
}

// pointedIDs counts the message ids text points at: "[m12]" on a line, or each id of a
// pointer line's list "[m12,40,513]". It reads the brackets by hand, independently of the
// ledger's own parser.
func pointedIDs(text string) map[int64]int {
	out := map[int64]int{}
	for rest := text; ; {
		i := strings.Index(rest, "[m")
		if i < 0 {
			return out
		}
		rest = rest[i+2:]
		j := strings.IndexByte(rest, ']')
		if j < 0 {
			return out
		}
		var ids []int64
		ok := true
		for _, d := range strings.Split(rest[:j], ",") {
			id, err := strconv.ParseInt(d, 10, 64)
			if err != nil || id <= 0 {
				ok = false
				break
			}
			ids = append(ids, id)
		}
		if ok {
			for _, id := range ids {
				out[id]++
			}
		}
	}
}

// pointsAt reports whether text holds a pointer to message id.
func pointsAt(text string, id int64) bool { return pointedIDs(text)[id] > 0 }
