package compress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spoolhq/spool/store"
)

// Prune thresholds.
const (
	pruneContentMin = 200 // tool results at least this long are deduplicated and stubbed
	pruneArgsMin    = 500 // tool-call arguments longer than this get their long strings cut
	pruneLeafKeep   = 200 // characters kept of each long string leaf
	truncatedMark   = "...[truncated]"
)

type pruneStats struct {
	Deduped, Stubbed, ArgsCut int
}

// pruneHistory rewrites ms in place (the caller owns the copy): identical tool outputs keep only
// their newest copy, old tool results outside the protected tail become one-line stubs, and huge
// tool-call arguments outside the tail lose the middle of their long strings. h holds the
// unpruned messages (same indices as ms): their decoded tool calls and exit statuses are shared
// with the rest of the compaction.
func pruneHistory(ms []store.Message, h *history, tok []int, budget, protectLastN int, sessionID string) pruneStats {
	var st pruneStats
	n := len(ms)
	acc, fit := 0, 0
	for i := n - 1; i >= 0; i-- {
		if acc+tok[i] > budget {
			break
		}
		acc += tok[i]
		fit++
	}
	protected := max(fit, min(protectLastN, n))
	boundary := n - protected

	seen := make(map[string]struct{})
	for i := n - 1; i >= 0; i-- {
		m := &ms[i]
		if m.Role != store.RoleTool || len(m.Content) < pruneContentMin {
			continue
		}
		if _, dup := seen[m.Content]; dup {
			m.Content, m.APIContent = DuplicateToolOutput, ""
			st.Deduped++
			continue
		}
		seen[m.Content] = struct{}{}
	}

	// Where each call is, by id (the last one wins); read from h, which still has the
	// arguments this loop cuts.
	type callPos struct{ msg, call int }
	calls := map[string]callPos{}
	for k := range max(boundary, 0) {
		for j, tc := range ms[k].ToolCalls {
			calls[tc.ID] = callPos{k, j}
		}
	}
	for i := 0; i < boundary; i++ {
		m := &ms[i]
		switch m.Role {
		case store.RoleTool:
			if len(m.Content) <= pruneContentMin || m.Content == DuplicateToolOutput || strings.HasPrefix(m.Content, "[") && strings.Contains(m.Content, "session_search(") {
				continue
			}
			// m.Content is still the original here: only duplicates were rewritten so far.
			var call store.ToolCall
			var args callArgs
			if p, ok := calls[m.ToolCallID]; ok {
				call, args = h.ms[p.msg].ToolCalls[p.call], h.scans[p.msg].callArgs(h.ms[p.msg])[p.call]
			}
			m.Content, m.APIContent = toolStub(*m, call, args, &h.scans[i], sessionID), ""
			st.Stubbed++
		case store.RoleAssistant:
			cut := false
			for j, tc := range m.ToolCalls {
				if len(tc.Function.Arguments) <= pruneArgsMin {
					continue
				}
				if short, ok := truncateJSONLeaves(tc.Function.Arguments, pruneLeafKeep); ok {
					if !cut {
						m.ToolCalls = append([]store.ToolCall(nil), m.ToolCalls...)
						cut = true
					}
					m.ToolCalls[j].Function.Arguments = short
					st.ArgsCut++
				}
			}
		}
	}
	return st
}

// toolStub is the informative one-line replacement of an old tool result.
// args are call's decoded arguments; sc is m's scan, where its exit status is looked up once.
func toolStub(m store.Message, call store.ToolCall, args callArgs, sc *msgScan, sessionID string) string {
	name := call.Function.Name
	if name == "" {
		name = m.ToolName
	}
	if name == "" {
		name = "tool"
	}
	lines := strings.Count(m.Content, "\n") + 1
	var b strings.Builder
	switch kind := classifyTool(name); {
	case args.Command != "" || kind == kindCommand:
		exit, ok := sc.exitStatus(m.Content)
		if !ok {
			exit = "?"
		}
		fmt.Fprintf(&b, "[%s] ran `%s` -> exit %s, %d lines output", name, clip(args.Command, 120), exit, lines)
	case kind == kindRead && len(args.Paths) > 0:
		fmt.Fprintf(&b, "[%s] read %s -> %d lines, %d chars", name, clip(strings.Join(args.Paths, ", "), 160), lines, len(m.Content))
	case kind == kindWrite && len(args.Paths) > 0:
		fmt.Fprintf(&b, "[%s] wrote %s -> %s", name, clip(strings.Join(args.Paths, ", "), 160), clip(firstLine(m.Content), 80))
	default:
		a := clip(call.Function.Arguments, 100)
		fmt.Fprintf(&b, "[%s] %s -> %d lines, %d chars output", name, a, lines, len(m.Content))
	}
	if m.ID > 0 && sessionID != "" {
		fmt.Fprintf(&b, " (full output: %s)", pointer(sessionID, m.ID))
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if l, _, ok := strings.Cut(s, "\n"); ok {
		return l
	}
	return s
}

// pointer is a session_search call that recovers the original of message id.
func pointer(sessionID string, id int64) string {
	return fmt.Sprintf("session_search(session_id=%q, around_message_id=%d)", sessionID, id)
}

// truncateJSONLeaves rewrites a JSON document keeping its key order, cutting every string leaf
// longer than keep runes to keep runes plus "...[truncated]". ok is false for invalid JSON,
// which the caller leaves unchanged so it never produces broken arguments.
func truncateJSONLeaves(raw string, keep int) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	changed := false
	writeString := func(s string) {
		if h := headRunes(s, keep); len(h) < len(s) {
			s = h + truncatedMark
			changed = true
		}
		enc.Encode(s)
		out.Truncate(out.Len() - 1) // Encode appends a newline
	}
	// stack of containers: true = object expecting a key next
	type frame struct {
		object, wantKey, first bool
	}
	var stack []frame
	sep := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		if !top.first && (!top.object || top.wantKey) {
			out.WriteByte(',')
		}
		top.first = false
	}
	after := func() {
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = !stack[len(stack)-1].wantKey
		}
	}
	for {
		t, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) && len(stack) == 0 {
				break
			}
			return "", false
		}
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				sep()
				out.WriteByte(byte(v))
				stack = append(stack, frame{object: v == '{', wantKey: v == '{', first: true})
				continue
			default:
				out.WriteByte(byte(v))
				stack = stack[:len(stack)-1]
				after()
				continue
			}
		case string:
			if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey {
				sep()
				enc.Encode(v)
				out.Truncate(out.Len() - 1)
				out.WriteByte(':')
				stack[len(stack)-1].wantKey = false
				continue
			}
			sep()
			writeString(v)
		case json.Number:
			sep()
			out.WriteString(v.String())
		case bool:
			sep()
			fmt.Fprint(&out, v)
		case nil:
			sep()
			out.WriteString("null")
		}
		after()
	}
	if !changed || !json.Valid(out.Bytes()) {
		return "", false
	}
	return out.String(), true
}
