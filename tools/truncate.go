package tools

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// Truncate keeps s whole when it fits in limit bytes; otherwise it keeps a head (40%) and a tail
// (60%, where errors and results usually are) around a marker that says how much was cut. The
// result is at most limit bytes and never splits a UTF-8 character.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	// The marker's count is at most len(s), so this bounds its length.
	budget := limit - len(omitted(len(s)))
	if budget <= 0 {
		return cutBack(s[:max(limit, 0)])
	}
	head := budget * 2 / 5
	tail := budget - head
	h := cutBack(s[:head])
	t := cutFront(s[len(s)-tail:])
	return h + omitted(len(s)-len(h)-len(t)) + t
}

func omitted(n int) string { return fmt.Sprintf("\n\n[... %d bytes omitted ...]\n\n", n) }

// cutBack drops a partial UTF-8 character at the end of s.
func cutBack(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size > 1 {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

// cutFront drops UTF-8 continuation bytes at the start of s.
func cutFront(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0 && !utf8.RuneStart(s[0]); i++ {
		s = s[1:]
	}
	return s
}

// headTail is an io.Writer that keeps the first and last bytes written to it and counts the rest,
// so a command's output costs bounded memory however much it prints.
type headTail struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  []byte // ring buffer once full
	pos   int    // next write position in tail once it is full
	total int
}

func newHeadTail(limit int) *headTail { return &headTail{limit: limit} }

func (w *headTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total += len(p)
	headCap := w.limit * 2 / 5
	tailCap := w.limit - headCap
	q := p
	if n := min(headCap-len(w.head), len(q)); n > 0 {
		w.head = append(w.head, q[:n]...)
		q = q[n:]
	}
	for len(q) > 0 {
		if len(w.tail) < tailCap {
			n := min(tailCap-len(w.tail), len(q))
			w.tail = append(w.tail, q[:n]...)
			q = q[n:]
			continue
		}
		if len(q) >= tailCap {
			copy(w.tail, q[len(q)-tailCap:])
			w.pos = 0
			break
		}
		n := copy(w.tail[w.pos:], q)
		w.pos = (w.pos + n) % tailCap
		q = q[n:]
	}
	return len(p), nil
}

// String returns what was kept, with a marker where bytes were dropped.
func (w *headTail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	tail := append(append([]byte(nil), w.tail[w.pos:]...), w.tail[:w.pos]...)
	kept := len(w.head) + len(tail)
	if kept == w.total {
		return string(w.head) + string(tail)
	}
	h := cutBack(string(w.head))
	t := cutFront(string(tail))
	return h + omitted(w.total-len(h)-len(t)) + t
}
