package compress

import (
	"strings"

	"github.com/spoolhq/spool/store"
)

// alignForward skips tool results so a boundary never lands inside a tool group.
func alignForward(ms []store.Message, i int) int {
	for i < len(ms) && ms[i].Role == store.RoleTool {
		i++
	}
	return i
}

// alignBackward moves a cut that would separate tool results from their calling assistant
// message back onto that assistant message.
func alignBackward(ms []store.Message, idx int) int {
	if idx <= 0 || idx >= len(ms) {
		return idx
	}
	c := idx - 1
	for c >= 0 && ms[c].Role == store.RoleTool {
		c--
	}
	if c >= 0 && ms[c].Role == store.RoleAssistant && len(ms[c].ToolCalls) > 0 {
		return c
	}
	return idx
}

// tailParams are the inputs of the tail cut besides the messages.
type tailParams struct {
	Budget       int // raw tail budget in tokens
	Soft         int // soft ceiling (1.5× budget, capped in lean mode)
	ProtectLastN int
	MinTailUsers int
}

// findTailCut returns the index where the verbatim tail starts. Messages in
// [head, cut) are summarised. tok holds each message's token estimate.
func findTailCut(ms []store.Message, tok []int, head int, p tailParams) int {
	n := len(ms)
	available := max(0, n-head-1)
	floor := max(3, min(p.ProtectLastN, 8))
	capN := max(3, available-2)
	minTail := 0
	if available > 1 {
		minTail = min(floor, capN, available)
	}
	walk := func(limit int) (cut, acc int) {
		cut = n
		for i := n - 1; i >= head; i-- {
			if acc+tok[i] > limit && n-i >= minTail {
				break
			}
			acc += tok[i]
			cut = i
		}
		return cut, acc
	}
	cut, acc := walk(p.Soft)
	if cut <= head && acc > 0 && acc <= p.Soft {
		// Everything fitted under the soft ceiling: the raw budget leaves a middle worth summarising.
		cut, _ = walk(p.Budget)
	}
	cut = min(cut, n-minTail)
	if cut <= head {
		cut = max(n-minTail, head+1)
	}
	cut = alignBackward(ms, cut)

	// Last-user anchor: the newest real user asks stay verbatim.
	if u := nthLastRealUser(ms, head, max(p.MinTailUsers, 1)); u >= 0 && u < cut {
		cut = max(u, head+1)
		if u < cut {
			// The clamp would leave the ask behind without its reply: move the whole
			// user → assistant → tools exchange into the middle instead.
			j := u + 1
			if j < n && ms[j].Role == store.RoleAssistant {
				j++
			}
			for j < n && ms[j].Role == store.RoleTool {
				j++
			}
			cut = j
		}
	}

	// Last-assistant anchor: the newest assistant reply stays verbatim.
	if a := lastAssistant(ms, head); a >= 0 && a < cut {
		cut = max(alignBackward(ms, a), head+1)
	}
	return alignForward(ms, max(cut, head+1))
}

// nthLastRealUser finds the k-th newest real user message at or after head (the oldest found
// when fewer exist), or -1.
func nthLastRealUser(ms []store.Message, head, k int) int {
	found := -1
	for i := len(ms) - 1; i >= head && k > 0; i-- {
		if isRealUser(ms[i]) {
			found = i
			k--
		}
	}
	return found
}

// lastAssistant finds the newest assistant message with visible text, else the newest one.
func lastAssistant(ms []store.Message, head int) int {
	anyIdx := -1
	for i := len(ms) - 1; i >= head; i-- {
		if ms[i].Role != store.RoleAssistant || isSummary(ms[i]) {
			continue
		}
		if strings.TrimSpace(ms[i].Content) != "" {
			return i
		}
		if anyIdx < 0 {
			anyIdx = i
		}
	}
	return anyIdx
}
