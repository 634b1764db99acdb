package tools

import (
	"fmt"
	"strings"
)

// Diff limits: the table of the longest-common-subsequence search is bounded, and so is the
// text a person is shown before approving a write.
const (
	maxDiffCells = 4 << 20
	maxDiffLines = 400
	diffContext  = 3
)

// unifiedDiff shows the change from old to new as a unified diff with three lines of context.
func unifiedDiff(name, old, new string) string { return contextDiff(name, old, new, diffContext) }

// contextDiff is a unified diff with context lines around each change. Common leading and
// trailing lines are set aside first, so a small edit of a large file is cheap; a change too
// large to align is summarised instead.
func contextDiff(name, old, new string, context int) string {
	a, b := splitLines(old), splitLines(new)
	if old == new {
		return fmt.Sprintf("(%s is unchanged)", name)
	}
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) > maxDiffCells {
		return fmt.Sprintf("--- %s\n+++ %s\n(%d lines replaced by %d lines; too large to show line by line)\n",
			name, name, len(ma), len(mb))
	}
	ops := align(ma, mb)
	// Whole script with the common parts around the middle, as (kind, line) pairs.
	type line struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int // 1-based line numbers in a and b where this line sits
		bi   int
	}
	var all []line
	for i := 0; i < pre; i++ {
		all = append(all, line{' ', a[i], i + 1, i + 1})
	}
	ai, bi := pre, pre
	for _, op := range ops {
		switch op {
		case ' ':
			all = append(all, line{' ', a[ai], ai + 1, bi + 1})
			ai, bi = ai+1, bi+1
		case '-':
			all = append(all, line{'-', a[ai], ai + 1, bi + 1})
			ai++
		case '+':
			all = append(all, line{'+', b[bi], ai + 1, bi + 1})
			bi++
		}
	}
	for i := 0; i < suf; i++ {
		all = append(all, line{' ', a[ai+i], ai + i + 1, bi + i + 1})
	}

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", name, name)
	shown := 0
	for i := 0; i < len(all); {
		if all[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before this change to context lines after the last change
		// that is no more than 2*context unchanged lines from the previous one.
		start := max(0, i-context)
		end := i
		for j := i; j < len(all); j++ {
			if all[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		end = min(len(all), end+context+1)
		na, nb := 0, 0
		for _, l := range all[start:end] {
			if l.kind != '+' {
				na++
			}
			if l.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", all[start].ai, na, all[start].bi, nb)
		for _, l := range all[start:end] {
			if shown == maxDiffLines {
				fmt.Fprintf(&out, "(diff cut after %d lines)\n", maxDiffLines)
				return out.String()
			}
			out.WriteByte(l.kind)
			out.WriteString(l.text)
			out.WriteByte('\n')
			shown++
		}
		i = end
	}
	return out.String()
}

// splitLines cuts s into lines without their newlines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// align returns an edit script (' ' keep, '-' delete from a, '+' insert from b) of minimal
// length, by the longest common subsequence.
func align(a, b []string) []byte {
	n, m := len(a), len(b)
	// lcs[i][j] is the LCS length of a[i:] and b[j:], flattened.
	lcs := make([]int32, (n+1)*(m+1))
	at := func(i, j int) int32 { return lcs[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*(m+1)+j] = at(i+1, j+1) + 1
			} else {
				lcs[i*(m+1)+j] = max(at(i+1, j), at(i, j+1))
			}
		}
	}
	ops := make([]byte, 0, n+m)
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, ' ')
			i, j = i+1, j+1
		case at(i+1, j) >= at(i, j+1):
			ops = append(ops, '-')
			i++
		default:
			ops = append(ops, '+')
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, '-')
	}
	for ; j < m; j++ {
		ops = append(ops, '+')
	}
	return ops
}
