package bench

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

// W5SessionsPerWorker is how many sessions each W5 worker appends to.
const W5SessionsPerWorker = 5

// SessionSpec is one generated session: its id, source, model and message quota.
type SessionSpec struct {
	ID     string
	Source string
	Model  string
	Size   int
}

// Query is one W3 search query and the category it was drawn from.
type Query struct {
	Category string
	Text     string
}

// Generator produces the workload's deterministic data from a vocabulary.
type Generator struct{ v *Vocab }

// NewGenerator returns a generator over v.
func NewGenerator(v *Vocab) *Generator { return &Generator{v: v} }

// W1 returns the W1 sessions (sizes drawn first from Rng(seed)) and all W1 messages in append
// order, drawn from the same stream. Each message carries its SessionID.
func (g *Generator) W1(seed uint64, sessions, messages int) ([]SessionSpec, []store.Message, error) {
	if sessions < 1 {
		return nil, nil, fmt.Errorf("workload: sessions must be at least 1, got %d", sessions)
	}
	if messages < 10*sessions {
		return nil, nil, fmt.Errorf("workload: messages (%d) must be at least 10 per session (%d sessions)", messages, sessions)
	}
	r := NewRng(seed)
	sizes := sessionSizes(r, sessions, messages)
	specs := make([]SessionSpec, sessions)
	for i := range specs {
		specs[i] = g.session(fmt.Sprintf("bench-%04d", i), i, sizes[i])
	}
	return specs, g.conversations(r, specs), nil
}

// W5 returns worker k's sessions and its n messages in append order, drawn from Rng(seed+100+k).
func (g *Generator) W5(seed uint64, k, n int) ([]SessionSpec, []store.Message) {
	specs := make([]SessionSpec, W5SessionsPerWorker)
	for j := range specs {
		size := n / W5SessionsPerWorker
		if j < n%W5SessionsPerWorker {
			size++
		}
		specs[j] = g.session(fmt.Sprintf("contend-%d-%d", k, j), j, size)
	}
	return specs, g.conversations(NewRng(seed+100+uint64(k)), specs)
}

func (g *Generator) session(id string, i, size int) SessionSpec {
	return SessionSpec{ID: id, Source: g.v.Sources[i%len(g.v.Sources)], Model: g.v.Models[i%len(g.v.Models)], Size: size}
}

// sessionSizes implements section 2.3. a^5 < 10^15 and budget*w stay far inside 64 bits for any
// realistic M, so plain integer arithmetic matches Python's.
func sessionSizes(r *Rng, sessions, messages int) []int {
	w := make([]int64, sessions)
	var total int64
	for i := range w {
		a := int64(r.Intn(1000))
		w[i] = 1 + a*a*a*a*a/1_000_000_000_000
		total += w[i]
	}
	budget := int64(messages - 10*sessions)
	sizes := make([]int, sessions)
	sum := 0
	for i := range sizes {
		sizes[i] = 10 + int(budget*w[i]/total)
		sum += sizes[i]
	}
	for i := 0; i < messages-sum; i++ {
		sizes[i]++
	}
	return sizes
}

type phase int

const (
	phaseUser phase = iota
	phaseAssistant
	phaseTool
)

type convState struct {
	phase   phase
	pending []store.ToolCall
}

// conversations produces the messages round-robin over specs (section 2.4).
func (g *Generator) conversations(r *Rng, specs []SessionSpec) []store.Message {
	remaining := make([]int, len(specs))
	total := 0
	for i, s := range specs {
		remaining[i] = s.Size
		total += s.Size
	}
	states := make([]convState, len(specs))
	out := make([]store.Message, 0, total)
	for len(out) < total {
		for i := range specs {
			if remaining[i] == 0 {
				continue
			}
			m := g.next(r, &states[i])
			m.SessionID = specs[i].ID
			out = append(out, m)
			remaining[i]--
		}
	}
	return out
}

func (g *Generator) next(r *Rng, st *convState) store.Message {
	cjk := r.Intn(100) < 5
	switch st.phase {
	case phaseUser:
		st.phase = phaseAssistant
		return store.Message{Role: store.RoleUser, Content: g.text(r, cjk, 50, 600)}
	case phaseAssistant:
		if r.Intn(100) < 45 {
			k := 1 + r.Intn(3)
			calls := make([]store.ToolCall, k)
			for i := range calls {
				calls[i] = g.toolCall(r)
			}
			content := g.text(r, cjk, 50, 300)
			st.phase = phaseTool
			st.pending = append([]store.ToolCall(nil), calls...)
			return store.Message{Role: store.RoleAssistant, Content: content, ToolCalls: calls}
		}
		st.phase = phaseUser
		return store.Message{Role: store.RoleAssistant, Content: g.text(r, cjk, 100, 2000)}
	default:
		call := st.pending[0]
		st.pending = st.pending[1:]
		m := store.Message{Role: store.RoleTool, ToolCallID: call.ID, ToolName: call.Function.Name, Content: g.text(r, cjk, 50, 2000)}
		if len(st.pending) == 0 {
			st.phase = phaseAssistant
		}
		return m
	}
}

func (g *Generator) toolCall(r *Rng) store.ToolCall {
	t := pick(r, g.v.Tools)
	id := "call_" + r.hex(24)
	val := pick(r, g.v.pools[t.Pool])
	return store.ToolCall{
		ID:       id,
		Type:     "function",
		Function: store.ToolFunction{Name: t.Name, Arguments: `{"` + t.Arg + `": "` + val + `"}`},
	}
}

// text implements section 2.5; lengths count code points, not bytes.
func (g *Generator) text(r *Rng, cjk bool, lo, hi int) string {
	span := hi - lo
	a := r.Intn(span + 1)
	b := r.Intn(span + 1)
	limit := lo + a*b/span
	var sb strings.Builder
	n, segs := 0, 0
	for n < limit {
		seg := g.enSegment
		if cjk {
			seg = g.cjkSegment
		}
		s := seg(r)
		if segs > 0 {
			sb.WriteByte(' ')
			n++
		}
		sb.WriteString(s)
		n += utf8.RuneCountInString(s)
		segs++
	}
	return firstRunes(sb.String(), limit)
}

func firstRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

func (g *Generator) enSegment(r *Rng) string {
	v := g.v
	switch x := r.Intn(100); {
	case x < 50:
		n := 4 + r.Intn(12)
		words := make([]string, n)
		for i := range words {
			words[i] = pick(r, v.Words)
		}
		return strings.Join(words, " ") + "."
	case x < 60:
		p := pick(r, v.Paths)
		if r.Intn(2) == 0 {
			p += ":" + strconv.Itoa(1+r.Intn(999))
		}
		return p
	case x < 66:
		return r.hex(40)
	case x < 74:
		return pick(r, v.Errors)
	case x < 86:
		parts := strings.Split(pick(r, v.Code), "{}")
		var sb strings.Builder
		for i, p := range parts {
			if i > 0 {
				sb.WriteString(pick(r, v.Idents))
			}
			sb.WriteString(p)
		}
		return sb.String()
	case x < 94:
		return pick(r, v.Terms)
	default:
		return "`" + pick(r, v.Idents) + "`"
	}
}

func (g *Generator) cjkSegment(r *Rng) string {
	switch x := r.Intn(100); {
	case x < 80:
		return pick(r, g.v.CJK)
	case x < 90:
		return pick(r, g.v.Terms)
	default:
		return pick(r, g.v.Paths)
	}
}

// Queries returns the W3 queries drawn from Rng(seed+1) (section 2.6).
func (g *Generator) Queries(seed uint64, q int) []Query {
	r := NewRng(seed + 1)
	v := g.v
	word := func() string { return pick(r, v.Words) }
	out := make([]Query, q)
	for i := range out {
		var c, t string
		switch x := r.Intn(100); {
		case x < 25:
			c, t = "word", word()
		case x < 37:
			w1 := word()
			w2 := word()
			c, t = "quoted_bigram", `"`+w1+" "+w2+`"`
		case x < 45:
			c, t = "quoted_phrase", `"`+pick(r, v.Phrases)+`"`
		case x < 57:
			w := []rune(word())
			k := 3 + r.Intn(3)
			if k > len(w) {
				k = len(w)
			}
			c, t = "prefix", string(w[:k])+"*"
		case x < 69:
			c, t = "term", pick(r, v.Terms)
		case x < 77:
			c = "unbalanced"
			switch r.Intn(3) {
			case 0:
				t = `"` + word()
			case 1:
				w1 := word()
				w2 := word()
				t = w1 + ` "` + w2
			default:
				w1 := word()
				w2 := word()
				w3 := word()
				t = `"` + w1 + " " + w2 + ` "` + w3 + `"`
			}
		case x < 83:
			b := r.Intn(4)
			w1 := word()
			w2 := word()
			c, t = "boolean", [4]string{w1 + " OR " + w2, w1 + " NOT " + w2, w1 + " AND", "OR " + w1}[b]
		case x < 88:
			w1 := word()
			w2 := word()
			c, t = "two_words", w1+" "+w2
		case x < 92:
			c, t = "special", pick(r, v.Special)
		case x < 95:
			c, t = "path", pick(r, v.Paths)
		case x < 98:
			c, t = "cjk3", pick(r, v.CJKQueries3)
		default:
			c, t = "cjk2", pick(r, v.CJKQueries2)
		}
		out[i] = Query{Category: c, Text: t}
	}
	return out
}
