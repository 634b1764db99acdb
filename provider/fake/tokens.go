package fake

import (
	"hash/fnv"
	"strings"

	"github.com/spoolhq/spool/provider"
)

// BytesPerToken is the fake tokenizer: every started run of 4 bytes of the canonical
// serialization is one token. It is crude on purpose: consistent, prefix-monotonic (a prefix
// never has more tokens than the whole) and free of any vocabulary.
const BytesPerToken = 4

// CountTokens is the fake tokenizer applied to s.
func CountTokens(s string) int { return (len(s) + BytesPerToken - 1) / BytesPerToken }

// prefixTokens is the number of whole tokens in the first n bytes; a cached prefix never counts
// a partial token.
func prefixTokens(n int) int { return n / BytesPerToken }

// segment is one block of the canonical prompt: a tool definition, a system block, a message's
// text, a tool call or a tool result. Prompt caching works on segment boundaries (Anthropic) or
// on fixed token blocks across segments (OpenAI).
type segment struct {
	text       string
	breakpoint bool // Anthropic cache_control on this block
	ttl1h      bool // cache_control ttl "1h"
}

// The canonical serialization, in request order: tools, system, messages. Both wire formats and
// the in-process client map onto these writers, so one prompt has one token count wherever it
// comes from (up to how each wire splits the system prompt into blocks).
func toolSegment(t provider.Tool) segment {
	return segment{text: "<tool " + t.Name + ">" + t.Description + "\n" + string(t.Parameters) + "</tool>\n"}
}

func systemSegment(text string) segment { return segment{text: "<system>" + text + "</system>\n"} }

func textSegment(role, text string) segment {
	return segment{text: "<" + role + ">" + text + "</" + role + ">\n"}
}

func callSegment(id, name, args string) segment {
	return segment{text: "<call " + id + " " + name + ">" + args + "</call>\n"}
}

func resultSegment(id, text string) segment {
	return segment{text: "<result " + id + ">" + text + "</result>\n"}
}

// neutralSegments serializes a provider-neutral conversation (OpenAI wire and in-process).
func neutralSegments(system string, msgs []provider.Message, tools []provider.Tool) []segment {
	segs := make([]segment, 0, len(tools)+len(msgs)+1)
	for _, t := range tools {
		segs = append(segs, toolSegment(t))
	}
	if system != "" {
		segs = append(segs, systemSegment(system))
	}
	for _, m := range msgs {
		segs = append(segs, messageSegments(m)...)
	}
	return segs
}

func messageSegments(m provider.Message) []segment {
	switch {
	case m.Role == "tool":
		return []segment{resultSegment(m.ToolCallID, m.Content)}
	case len(m.ToolCalls) > 0:
		var segs []segment
		if m.Content != "" {
			segs = append(segs, textSegment(m.Role, m.Content))
		}
		for _, c := range m.ToolCalls {
			segs = append(segs, callSegment(c.ID, c.Function.Name, c.Function.Arguments))
		}
		return segs
	}
	return []segment{textSegment(m.Role, m.Content)}
}

// PromptTokens is the prompt size the fake reports for req made through the in-process client.
// Over HTTP the count differs only in how each wire splits blocks.
func PromptTokens(req provider.Request) int {
	return countSegments(neutralSegments(req.System, req.Messages, req.Tools))
}

func countSegments(segs []segment) int {
	n := 0
	for _, s := range segs {
		n += len(s.text)
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

// prefixHasher hashes the growing prefix of a prompt under a cache key, so that an entry stands
// for the exact bytes before a position and for nothing else.
type prefixHasher struct {
	h   hashWriter
	pos int
}

type hashWriter interface {
	Write([]byte) (int, error)
	Sum([]byte) []byte
}

type prefixKey [16]byte

func newPrefixHasher(cacheKey string) *prefixHasher {
	h := fnv.New128a()
	h.Write([]byte(cacheKey))
	h.Write([]byte{0})
	return &prefixHasher{h: h}
}

func (p *prefixHasher) write(s string) {
	p.h.Write([]byte(s))
	p.pos += len(s)
}

func (p *prefixHasher) key() prefixKey {
	var k prefixKey
	copy(k[:], p.h.Sum(nil))
	return k
}

// joinSegments is the whole canonical prompt.
func joinSegments(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.text)
	}
	return b.String()
}

// SharedPrefixTokens is the number of whole tokens at the start of a's canonical serialization
// that b's repeats byte for byte: the most a prefix cache could serve b from a. Benchmarks use
// it to bound what an ideal client could have had cached.
func SharedPrefixTokens(a, b provider.Request) int {
	x := joinSegments(neutralSegments(a.System, a.Messages, a.Tools))
	y := joinSegments(neutralSegments(b.System, b.Messages, b.Tools))
	n := 0
	for n < len(x) && n < len(y) && x[n] == y[n] {
		n++
	}
	return prefixTokens(n)
}
