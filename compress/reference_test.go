package compress

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
	"pgregory.net/rapid"
)

// The fast paths of the ledger are checked against the plain algorithms they replaced: every
// error word searched for separately in a lowercased copy, and the ledger re-rendered after
// dropping each single entry.

func naiveErrorLines(text string, limit int) []string {
	b := []byte(text)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	lower := string(b)
	var out []string
	for pos := 0; pos < len(text) && len(out) < limit; {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		line := lower[pos:end]
		orig := text[pos:end]
		pos = end + 1
		if len(strings.TrimSpace(line)) < 8 {
			continue
		}
		for _, w := range errorWords {
			if strings.Contains(line, w) {
				out = append(out, clip(strings.TrimSpace(orig), maxEntryText))
				break
			}
		}
	}
	return out
}

func naiveRender(l *Ledger, sessionID string, askBudget int) string {
	for {
		s := naiveRenderOnce(l, sessionID, askBudget)
		if len(s) <= MaxLedgerChars || !naiveDropWeakest(l) {
			return s
		}
	}
}

func naiveRenderOnce(l *Ledger, sessionID string, askBudget int) string {
	var b strings.Builder
	b.WriteString(ledgerHeader(sessionID))
	left := askBudget
	for _, k := range entryOrder {
		first := true
		for i := range l.Entries {
			e := &l.Entries[i]
			if e.Kind != k {
				continue
			}
			if first {
				b.WriteString("\n" + entryHeadings[k] + "\n")
				first = false
			}
			switch k {
			case EntryWrote, EntryRead:
				fmt.Fprintf(&b, "- `%s` %s\n", e.Text, idTag(e.MsgID))
			case EntryCommand:
				fmt.Fprintf(&b, "- `%s` -> exit %s %s\n", e.Text, cmp.Or(e.Status, "?"), idTag(e.MsgID))
			case EntryDecision:
				fmt.Fprintf(&b, "- %q %s\n", e.Text, idTag(e.MsgID))
			case EntryAsk:
				if !e.Trimmed && len(e.Text) <= left {
					left -= len(e.Text)
					fmt.Fprintf(&b, "- %s %s\n", idTag(e.MsgID), strings.ReplaceAll(e.Text, "\n", "\n  "))
				} else {
					if !e.Trimmed {
						e.Text, e.Trimmed = clip(e.Text, askExcerpt), true
					}
					fmt.Fprintf(&b, "- %s (excerpt) %s\n", idTag(e.MsgID), e.Text)
				}
			default:
				fmt.Fprintf(&b, "- %s%s %s\n", e.Text, sourceMarks[e.relevance], idTag(e.MsgID))
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func naiveDropWeakest(l *Ledger) bool {
	for _, minKeep := range []int{5, 0} {
		for _, k := range trimOrder {
			idx, count := -1, 0
			for i, e := range l.Entries {
				if e.Kind != k {
					continue
				}
				count++
				if idx < 0 || e.relevance < l.Entries[idx].relevance ||
					(e.relevance == l.Entries[idx].relevance && e.MsgID < l.Entries[idx].MsgID) {
					idx = i
				}
			}
			if count > minKeep && idx >= 0 {
				l.Entries = slices.Delete(l.Entries, idx, idx+1)
				return true
			}
		}
	}
	return false
}

func TestErrorLinesMatchesNaive(t *testing.T) {
	t.Parallel()
	cases := []string{
		"",
		"all good\nnothing here at all",
		"ERROR: disk full\nok\nPanic: nope\npanic: boom now",
		"short err\n   Fatal   \nsegmentation FAULT (core dumped)\nCan't open file x\ncan't\n",
		"ünïcödé Ärger: ERROR happened\nİnvalid input here\ninvalid input here",
		"line one\r\nTraceback (most recent call last):\r\n  File x, line 3\r\n",
		"no such file or directory: foo\nDoes Not Exist: bar.go\nPermission denied (publickey)\nconnection refused by peer",
		"x\n\n\n        \nundefined: foo.Bar in pkg\nnot found in the index, failed",
		"terror is not an error? failure is a fail: yes\ncannot\ncannot  load",
	}
	for i, c := range cases {
		for _, limit := range []int{1, 2, 3, 10} {
			got, want := errorLines(c, limit), naiveErrorLines(c, limit)
			if !slices.Equal(got, want) {
				t.Errorf("case %d limit %d: got %q, want %q", i, limit, got, want)
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		pieces := append([]string{"\n", " ", "\r\n", "x", "Ärger", "ok then", "\xff", "E", "ERR", "Can", "'t "}, errorWords...)
		for _, w := range errorWords {
			pieces = append(pieces, strings.ToUpper(w), strings.ToUpper(w[:1])+w[1:], w[:len(w)-1])
		}
		var b strings.Builder
		for range rapid.IntRange(0, 60).Draw(t, "n") {
			b.WriteString(rapid.SampledFrom(pieces).Draw(t, "piece"))
		}
		text, limit := b.String(), rapid.IntRange(1, 4).Draw(t, "limit")
		if got, want := errorLines(text, limit), naiveErrorLines(text, limit); !slices.Equal(got, want) {
			t.Fatalf("%q: got %q, want %q", text, got, want)
		}
	})
}

func TestRenderMatchesNaive(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var l Ledger
		kinds := append(slices.Clone(entryOrder), EntryKind("unknown"))
		n := rapid.IntRange(0, 400).Draw(t, "entries")
		for i := range n {
			k := rapid.SampledFrom(kinds).Draw(t, "kind")
			text := fmt.Sprintf("%s-%d %s", k, i, strings.Repeat("y", rapid.IntRange(0, 300).Draw(t, "len")))
			if k == EntryAsk && rapid.Bool().Draw(t, "multiline") {
				text += "\nsecond line\n"
			}
			l.Entries = append(l.Entries, LedgerEntry{
				Kind: k, Text: text, Status: rapid.SampledFrom([]string{"", "0", "1"}).Draw(t, "status"),
				MsgID: int64(rapid.IntRange(1, 50).Draw(t, "id")), relevance: rapid.IntRange(1, 3).Draw(t, "rel"),
				Trimmed: k == EntryAsk && rapid.IntRange(0, 4).Draw(t, "trimmed") == 0,
			})
		}
		if rapid.Bool().Draw(t, "bound") {
			l.bound()
		}
		naive := Ledger{Entries: slices.Clone(l.Entries)}
		sid := rapid.SampledFrom([]string{"", "sess"}).Draw(t, "sid")
		budget := rapid.IntRange(0, 5000).Draw(t, "budget")
		got, want := l.render(sid, budget), naiveRender(&naive, sid, budget)
		if got != want {
			t.Fatalf("render differs (%d vs %d chars)\n--- got\n%s\n--- want\n%s", len(got), len(want), got, want)
		}
		if !slices.Equal(l.Entries, naive.Entries) {
			t.Fatalf("entries differ after render: %d vs %d", len(l.Entries), len(naive.Entries))
		}
	})
}

func naiveIdentifiers(text string) []string {
	var out []string
	start := -1
	interesting := false
	flush := func(end int) {
		if start >= 0 && interesting {
			if id := classifyIdentifier(strings.TrimRight(text[start:end], ".:!?")); id != "" && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		start, interesting = -1, false
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < 0x80 && strings.IndexByte(" \n\t\r\"'`()[]{}<>,;|*", c) >= 0 {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
		if c == '/' || c == '.' || c == '#' || c >= '0' && c <= '9' {
			interesting = true
		}
	}
	flush(len(text))
	return out
}

func naiveExitStatus(out string) (string, bool) {
	if len(out) > exitScanTail {
		out = out[len(out)-exitScanTail:]
	}
	for i := len(out) - 4; i >= 0; i-- {
		c := out[i] | 0x20
		if c != 'e' && c != 'r' {
			continue
		}
		kw := out[i:min(len(out), i+10)]
		if !strings.EqualFold(kw[:4], "exit") && !strings.EqualFold(kw, "returncode") {
			continue
		}
		if m := exitRe.FindStringSubmatch(out[i:min(len(out), i+48)]); m != nil {
			return m[1], true
		}
	}
	return "", false
}

func TestIdentifiersAndExitStatusMatchNaive(t *testing.T) {
	t.Parallel()
	pieces := []string{" ", "\n", "(", "`", "src/a.go", "./x", "/", "#12", "#", "deadbee1", "0123456789", "0123456789abcdef0123456789abcdef01234567",
		"1234567890123456789012345678901234567890", "1.2.3", "config.YAML", "https://e.x/p?q=1", "file.go:12:3", "!", "?", ":", ".", "Ä", "\xff",
		"exit", "EXIT", "Exit code: 3", "exited with status 2", "returncode=1", "RETURNCODE: 0", "exit_status=-1", "eXiT 7", "re", "word"}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		for range rapid.IntRange(0, 40).Draw(t, "n") {
			b.WriteString(rapid.SampledFrom(pieces).Draw(t, "piece"))
		}
		text := b.String()
		if got, want := identifiers(text), naiveIdentifiers(text); !slices.Equal(got, want) {
			t.Fatalf("identifiers(%q) = %q, want %q", text, got, want)
		}
		gs, gok := exitStatus(text)
		ws, wok := naiveExitStatus(text)
		if gs != ws || gok != wok {
			t.Fatalf("exitStatus(%q) = %q %v, want %q %v", text, gs, gok, ws, wok)
		}
	})
}

func naiveBound(l *Ledger) {
	byKind := map[EntryKind][]LedgerEntry{}
	for _, e := range l.Entries {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	out := l.Entries[:0:0]
	for _, k := range entryOrder {
		es := byKind[k]
		slices.SortStableFunc(es, func(a, b LedgerEntry) int {
			if c := cmp.Compare(b.relevance, a.relevance); c != 0 {
				return c
			}
			return cmp.Compare(b.MsgID, a.MsgID)
		})
		if len(es) > entryCaps[k] {
			es = es[:entryCaps[k]]
		}
		slices.SortStableFunc(es, func(a, b LedgerEntry) int {
			if k == EntryAsk {
				return cmp.Compare(b.MsgID, a.MsgID)
			}
			return cmp.Compare(a.MsgID, b.MsgID)
		})
		out = append(out, es...)
	}
	l.Entries = out
}

func TestBoundMatchesNaive(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var l Ledger
		kinds := append(slices.Clone(entryOrder), EntryKind("unknown"))
		for i := range rapid.IntRange(0, 300).Draw(t, "entries") {
			l.Entries = append(l.Entries, LedgerEntry{Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Text: fmt.Sprint(i),
				MsgID: int64(rapid.IntRange(1, 20).Draw(t, "id")), relevance: rapid.IntRange(1, 3).Draw(t, "rel")})
		}
		naive := Ledger{Entries: slices.Clone(l.Entries)}
		l.bound()
		naiveBound(&naive)
		if !slices.Equal(l.Entries, naive.Entries) {
			t.Fatalf("bound differs:\n%v\n%v", l.Entries, naive.Entries)
		}
	})
}

func TestRedactMatchesLowered(t *testing.T) {
	t.Parallel()
	pieces := []string{" ", "\n", "x", "=", ": ", "\"", "sk-", "SK-", "abcdefghijklmnopqrstuvwxyz0123", "ghp_", "xoxb-", "AKIA", "ABCDEFGHIJKLMNOP",
		"AIza", "Bearer ", "TOKEN", "token", "to\u212Aen", "api_key", "API-KEY", "secret", "Passw", "password", "access_key",
		"\u0130", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "—", "[REDACTED]"}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		for range rapid.IntRange(0, 30).Draw(t, "n") {
			b.WriteString(rapid.SampledFrom(pieces).Draw(t, "piece"))
		}
		text := b.String()
		if got, want := redact(text), redactLowered(text); got != want {
			t.Fatalf("redact(%q) = %q, want %q", text, got, want)
		}
	})
	// The Kelvin sign lowers to k: a case-insensitive rule still sees "token".
	if got := redact("to\u212Aen=abcdefgh"); !strings.Contains(got, "[REDACTED]") {
		t.Fatalf("Kelvin-sign token not redacted: %q", got)
	}
}

// A long tool result is scanned in two parts; the result is that of scanning them joined by a
// newline, as before.
func TestToolScanMatchesJoinedWindow(t *testing.T) {
	t.Parallel()
	pieces := []string{"ok ", "\n", "src/a.go ", "internal/x/y_", "1.go", " error: boom", "#12 ", "deadbee1", "FATAL", " ", "Ä", "panic: x\n"}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		n := rapid.IntRange(scanToolPrefix-200, scanToolPrefix+scanToolSuffix+3000).Draw(t, "size")
		for b.Len() < n {
			b.WriteString(rapid.SampledFrom(pieces).Draw(t, "piece"))
		}
		content := b.String()
		joined := content
		if len(content) > scanToolPrefix+scanToolSuffix {
			joined = content[:scanToolPrefix] + "\n" + content[len(content)-scanToolSuffix:]
		}
		sc := scanMessage(store.Message{Role: store.RoleTool, ToolCallID: "c", Content: content})
		if want := identifiers(joined); !slices.Equal(sc.ids, want) {
			t.Fatalf("ids %q, want %q", sc.ids, want)
		}
		if want := errorLines(joined, scanErrLines); !slices.Equal(sc.errs, want) {
			t.Fatalf("errors %q, want %q", sc.errs, want)
		}
	})
}
