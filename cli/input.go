package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/store"
)

// lineSource is where the chat's messages and answers come from: the line editor on a
// terminal, a lineReader otherwise.
type lineSource interface {
	read(ctx context.Context) (string, error)
}

// lineReader reads the chat's input lines on a goroutine of its own, so that a reader can stop
// waiting when its context ends (Ctrl-C at an approval prompt answers at once) without losing the
// line the user types next: that line stays queued for the next read.
type lineReader struct {
	lines chan string
	once  sync.Once
	src   *bufio.Scanner
	err   error // set before lines is closed
}

func newLineReader(r io.Reader) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &lineReader{lines: make(chan string), src: sc}
}

// read returns the next line; io.EOF at the end of input, the context's error when it ends first.
// The goroutine that scans starts with the first read and ends at the end of input (the chat owns
// its input for the life of the process).
func (l *lineReader) read(ctx context.Context) (string, error) {
	l.once.Do(func() {
		go func() {
			defer close(l.lines)
			for l.src.Scan() {
				l.lines <- l.src.Text()
			}
			l.err = l.src.Err()
		}()
	})
	select {
	case line, ok := <-l.lines:
		if !ok {
			if l.err != nil {
				return "", l.err
			}
			return "", io.EOF
		}
		return line, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// visible makes untrusted text safe to print on a terminal: escape sequences and other control
// characters (but newlines and tabs) are shown as \x.. escapes instead of acting on the terminal.
func visible(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			if r < 0x100 {
				b.WriteString(`\x`)
				b.WriteByte("0123456789abcdef"[r>>4])
				b.WriteByte("0123456789abcdef"[r&15])
			} else {
				b.WriteString(`\u`)
				for shift := 12; shift >= 0; shift -= 4 {
					b.WriteByte("0123456789abcdef"[(r>>shift)&15])
				}
			}
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isControl is a C0 or C1 control character other than newline and tab, DEL, or a bidirectional
// override that could reorder what the terminal shows.
func isControl(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// colorDiff colours a unified diff's added and removed lines when colour is on.
func colorDiff(colour bool, diff string) string {
	diff = strings.TrimRight(diff, "\n")
	if !colour {
		return diff
	}
	lines := strings.Split(diff, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---"):
			lines[i] = ansiBold + l + ansiBoldOff
		case strings.HasPrefix(l, "+"):
			lines[i] = "\x1b[32m" + l + "\x1b[39m"
		case strings.HasPrefix(l, "-"):
			lines[i] = "\x1b[31m" + l + "\x1b[39m"
		case strings.HasPrefix(l, "@@"):
			lines[i] = ansiCode + l + ansiCodeOff
		}
	}
	return strings.Join(lines, "\n")
}

// waitLine says what a turn waits for: the holder of the conversation's turn (pid and host), since
// when it holds it (zero: not known), and how long this turn has waited.
func waitLine(holder string, waited time.Duration, since time.Time) string {
	who := "another turn"
	if h, err := store.ParseHolder(holder); err == nil {
		who = fmt.Sprintf("pid %d on host %s", h.PID, visible(h.Host))
	}
	at := ""
	if !since.IsZero() {
		at = " since " + since.Local().Format("15:04:05")
	}
	return fmt.Sprintf("waiting for the turn held by %s%s (%s so far)", who, at, waited.Round(time.Second))
}

// leaseSince is when holder took the turn lease it holds, or zero when that is not known.
func leaseSince(ctx context.Context, st interface {
	HeldLeases(context.Context) ([]store.HeldLease, error)
}, holder string) time.Time {
	ls, err := st.HeldLeases(ctx)
	if err != nil {
		return time.Time{}
	}
	for _, l := range ls {
		if l.Holder == holder {
			return l.AcquiredAt
		}
	}
	return time.Time{}
}
