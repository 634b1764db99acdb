package platform

import (
	"strings"
	"unicode/utf8"
)

// Split cuts text into chunks of at most max runes, preferring paragraph breaks, then line
// breaks, then spaces, and a hard cut only for a run without any. A cut inside a ``` code
// block closes the fence at the end of the chunk and reopens it (with its language) at the
// start of the next, so every chunk renders on its own. Whitespace at a cut is dropped;
// nothing else is. max below 16 is taken as 16.
func Split(text string, max int) []string {
	max = maxInt(max, 16)
	var out []string
	reopen := "" // the fence line to reopen the next chunk with
	for {
		if reopen != "" {
			text = reopen + "\n" + text
			reopen = ""
		}
		if utf8.RuneCountInString(text) <= max {
			if strings.TrimSpace(text) != "" {
				out = append(out, text)
			}
			return out
		}
		const closing = "\n```"
		window := byteOffset(text, max-len(closing))
		cut := pickCut(text[:window])
		chunk, rest := text[:cut], text[cut:]
		if fence, open := openFence(chunk); open {
			chunk = strings.TrimRight(chunk, "\n") + closing
			reopen = fence
		}
		chunk = strings.TrimRight(chunk, " \t\n")
		if strings.TrimSpace(chunk) != "" {
			out = append(out, chunk)
		}
		text = strings.TrimLeft(rest, " \t\n")
		if text == "" {
			return out
		}
	}
}

// pickCut is where to end a chunk within w (a byte offset into w, after the separator).
func pickCut(w string) int {
	half := len(w) / 2
	// Before a code fence that starts a line, or at a paragraph break.
	best := -1
	for i := len(w) - 1; i > half; i-- {
		if w[i] == '\n' && (strings.HasPrefix(w[i+1:], "```") || (i > 0 && w[i-1] == '\n')) {
			best = i + 1
			break
		}
	}
	if best < 0 {
		if i := strings.LastIndexByte(w, '\n'); i > half {
			best = i + 1
		} else if i := strings.LastIndexByte(w, ' '); i > half {
			best = i + 1
		}
	}
	if best < 0 || best > len(w) {
		best = len(w)
	}
	return best
}

// openFence reports whether chunk ends inside a ``` block and, if so, that block's fence line.
func openFence(chunk string) (string, bool) {
	fence, open := "", false
	for _, line := range strings.Split(chunk, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			if open {
				open = false
			} else {
				open, fence = true, t
			}
		}
	}
	return fence, open
}

// byteOffset is the byte offset of rune n of s (len(s) when s is shorter).
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
