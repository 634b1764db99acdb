package store

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// DecodeToolCalls parses the JSON a backend stored for a message's tool calls (what
// json.Marshal of []ToolCall produces). It returns exactly what json.Unmarshal would, but reads
// the canonical shape without reflection and, for strings without escapes, without copying:
// loading a long transcript decodes thousands of these, and encoding/json was a sixth of the
// cost of a resume and a third of its allocations. Anything outside the canonical shape (other
// keys, other value types, whitespace variants are fine) goes to encoding/json.
func DecodeToolCalls(s string) ([]ToolCall, error) {
	if calls, ok := decodeCanonicalCalls(s); ok {
		return calls, nil
	}
	var calls []ToolCall
	if err := json.Unmarshal([]byte(s), &calls); err != nil {
		return nil, err
	}
	return calls, nil
}

// callScanner reads one JSON text from s; ok turns false at the first thing the fast path does
// not handle, and the caller then falls back to encoding/json.
type callScanner struct {
	s  string
	i  int
	ok bool
}

func decodeCanonicalCalls(s string) ([]ToolCall, bool) {
	p := callScanner{s: s, ok: true}
	if p.s == "" {
		return nil, false
	}
	if p.literal("null") {
		p.ws()
		return nil, p.i == len(p.s)
	}
	p.expect('[')
	// Pre-count the calls (each one opens exactly one top-level object) to allocate once; an
	// over-estimate from braces inside strings only wastes a little capacity.
	n := 0
	for j := p.i; j < len(s); j++ {
		if s[j] == '{' {
			n++
		}
	}
	calls := make([]ToolCall, 0, max(n/2, 1))
	if p.peek() == ']' {
		p.i++
	} else {
		for p.ok {
			calls = append(calls, p.call())
			if p.peek() == ',' {
				p.i++
				continue
			}
			p.expect(']')
			break
		}
	}
	p.ws()
	if !p.ok || p.i != len(p.s) {
		return nil, false
	}
	return calls, true
}

// call reads {"id":..,"type":..,"function":{"name":..,"arguments":..}} in any key order.
func (p *callScanner) call() ToolCall {
	var c ToolCall
	p.object(func(key string) {
		switch key {
		case "id":
			c.ID = p.str()
		case "type":
			c.Type = p.str()
		case "function":
			p.object(func(key string) {
				switch key {
				case "name":
					c.Function.Name = p.str()
				case "arguments":
					c.Function.Arguments = p.str()
				default:
					p.ok = false
				}
			})
		default:
			// encoding/json matches keys case-insensitively and skips unknown ones: leave
			// those rules to it.
			p.ok = false
		}
	})
	return c
}

// object reads an object whose values field consumes, one key at a time.
func (p *callScanner) object(field func(key string)) {
	p.expect('{')
	if p.peek() == '}' {
		p.i++
		return
	}
	for p.ok {
		key := p.str()
		p.expect(':')
		if !p.ok {
			return
		}
		field(key)
		if p.peek() == ',' {
			p.i++
			continue
		}
		p.expect('}')
		return
	}
}

// str reads a JSON string. Without escapes the result shares s's memory.
func (p *callScanner) str() string {
	if p.peek() != '"' {
		p.ok = false
		return ""
	}
	start := p.i
	p.i++
	escaped, ascii := false, true
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			raw := p.s[start+1 : p.i-1]
			if !ascii && !utf8.ValidString(raw) {
				p.ok = false // encoding/json replaces invalid bytes with U+FFFD
				return ""
			}
			if !escaped {
				return raw
			}
			return p.unquote(p.s[start:p.i])
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			p.ok = false
			return ""
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			p.i++
		}
	}
	p.ok = false
	return ""
}

// unquote decodes a string with escapes. strconv reads JSON's escapes as Go does, except \/
// (not a Go escape) and lone surrogates (which encoding/json maps differently); both are rare
// enough to leave to the fallback.
func (p *callScanner) unquote(quoted string) string {
	for j := 1; j < len(quoted)-1; j++ {
		if quoted[j] != '\\' {
			continue
		}
		j++
		switch quoted[j] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if j+4 >= len(quoted) {
				p.ok = false
				return ""
			}
			v, err := strconv.ParseUint(quoted[j+1:j+5], 16, 16)
			if err != nil || (v >= 0xD800 && v < 0xE000) {
				p.ok = false
				return ""
			}
			j += 4
		default:
			p.ok = false
			return ""
		}
	}
	u, err := strconv.Unquote(quoted)
	if err != nil {
		p.ok = false
		return ""
	}
	return u
}

func (p *callScanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (p *callScanner) peek() byte {
	p.ws()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *callScanner) expect(c byte) {
	if p.peek() != c {
		p.ok = false
		return
	}
	p.i++
}

func (p *callScanner) literal(word string) bool {
	p.ws()
	if len(p.s)-p.i >= len(word) && p.s[p.i:p.i+len(word)] == word {
		p.i += len(word)
		return true
	}
	return false
}
