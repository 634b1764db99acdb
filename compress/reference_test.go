package compress

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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

func naiveRender(l *Ledger, sessionID string, askBudget, maxChars int) string {
	if maxChars < len(ledgerHeaderWithin(sessionID, maxChars))+len(PointerHeading)+32 {
		l.Entries = nil
		return ""
	}
	// Asks over the budget become pointers, newest first; unknown kinds are not written.
	left := askBudget
	var kept []LedgerEntry
	for _, e := range l.Entries {
		if pointerLabels[e.Kind] == "" {
			continue
		}
		kept = append(kept, e)
	}
	l.Entries = kept
	for i := range l.Entries {
		e := &l.Entries[i]
		if e.Kind == EntryAsk && !e.Pointer {
			if !e.Trimmed && len(e.Text) <= left {
				left -= len(e.Text)
			} else {
				e.toPointer()
			}
		}
	}
	// A covered pointer is not written (its message has another pointer).
	kept = nil
	for _, e := range l.Entries {
		if !(e.Pointer && e.covered) {
			kept = append(kept, e)
		}
	}
	l.Entries = kept
	// Over the bound, the binding lines beyond their share, oldest first, become pointers.
	if s := naiveRenderOnce(l, make([]bool, len(l.Entries)), sessionID, maxChars); len(s) > maxChars {
		type bl struct{ i, size int }
		var bls []bl
		for i, e := range l.Entries {
			if e.binding && !e.Pointer {
				bls = append(bls, bl{i, len("- " + strconv.Quote(e.Text) + " " + idTag(e.MsgID) + "\n")})
			}
		}
		slices.SortStableFunc(bls, func(a, b bl) int { return cmp.Compare(l.Entries[b.i].MsgID, l.Entries[a.i].MsgID) })
		room := int(float64(maxChars) * bindingShare)
		for _, b := range bls {
			if room -= b.size; room < 0 {
				l.Entries[b.i].toPointer()
			}
		}
	}
	// The steps, by brute force: every (entry, action) with its key, sorted.
	type step struct {
		e      LedgerEntry
		demote bool
		key    int
	}
	var steps []step
	for i, e := range l.Entries {
		// Rank: how many entries of the same pointer label are newer (earlier in the slice
		// on equal ids).
		rank := 0
		for j, x := range l.Entries {
			if x.pointerLabel() == e.pointerLabel() && (x.MsgID > e.MsgID || x.MsgID == e.MsgID && j < i) {
				rank++
			}
		}
		p := e
		p.Pointer = true
		drop := 2*p.weight() + dropLag + newestBonus(rank)
		if e.binding {
			drop = bindingDropKey
		} else if e.Kind == EntryAsk {
			drop++
		}
		if !e.Pointer {
			steps = append(steps, step{e, true, 2 * e.weight()})
			drop = max(drop, 2*e.weight()+1)
		}
		steps = append(steps, step{e, false, drop})
	}
	order := make([]int, len(steps))
	for i := range order {
		order[i] = i
	}
	// Entries are identified by their index at the start.
	ids := make([]int, len(steps))
	{
		j := 0
		for i, e := range l.Entries {
			if !e.Pointer {
				ids[j] = i
				j++
			}
			ids[j] = i
			j++
		}
	}
	slices.SortStableFunc(order, func(x, y int) int {
		sx, sy := steps[x], steps[y]
		if c := cmp.Compare(sx.key, sy.key); c != 0 {
			return c
		}
		if c := cmp.Compare(sx.e.relevance, sy.e.relevance); c != 0 {
			return c
		}
		if c := cmp.Compare(sx.e.MsgID, sy.e.MsgID); c != 0 {
			return c
		}
		return cmp.Compare(ids[x], ids[y])
	})
	gone := make([]bool, len(l.Entries))
	s := naiveRenderOnce(l, gone, sessionID, maxChars)
	for _, o := range order {
		if len(s) <= maxChars {
			break
		}
		i := ids[o]
		if gone[i] {
			continue
		}
		if steps[o].demote {
			if l.Entries[i].covered {
				gone[i] = true
			} else {
				l.Entries[i].toPointer()
			}
		} else {
			gone[i] = true
		}
		s = naiveRenderOnce(l, gone, sessionID, maxChars)
	}
	var out []LedgerEntry
	for i, e := range l.Entries {
		if !gone[i] {
			out = append(out, e)
		}
	}
	l.Entries = out
	return s
}

func naiveRenderOnce(l *Ledger, gone []bool, sessionID string, maxChars int) string {
	var b strings.Builder
	header := ledgerHeader(sessionID)
	if maxChars < 2000 {
		header = LedgerHeading + "\nOpen any [mN] ([mA,B] is mA and mB) with session_search(around_message_id=N).\n"
		if sessionID != "" {
			header = LedgerHeading + "\nOpen any [mN] ([mA,B] is mA and mB) with session_search(session_id=\"" + sessionID + "\", around_message_id=N).\n"
		}
	}
	b.WriteString(header)
	for _, k := range entryOrder {
		first := true
		for i := range l.Entries {
			e := &l.Entries[i]
			if e.Kind != k || e.Pointer || gone[i] {
				continue
			}
			if first {
				b.WriteString("\n" + entryHeadings[k] + "\n")
				first = false
			}
			switch k {
			case EntryWrote, EntryRead:
				side := ""
				if e.side {
					side = " (side)"
				}
				fmt.Fprintf(&b, "- `%s`%s %s\n", e.Text, side, idTag(e.MsgID))
			case EntryCommand:
				fmt.Fprintf(&b, "- `%s` -> exit %s %s\n", e.Text, cmp.Or(e.Status, "?"), idTag(e.MsgID))
			case EntryDecision, EntryAgent:
				fmt.Fprintf(&b, "- %q %s\n", e.Text, idTag(e.MsgID))
			case EntryAsk:
				fmt.Fprintf(&b, "- %s %s\n", idTag(e.MsgID), strings.ReplaceAll(e.Text, "\n", "\n  "))
			default:
				side := ""
				if e.side && e.Kind == EntryIdentifier {
					side = " (side)"
				}
				fmt.Fprintf(&b, "- %s%s%s %s\n", e.Text, sourceMarks[e.relevance], side, idTag(e.MsgID))
			}
		}
	}
	byLabel := map[string][]int64{}
	for i, e := range l.Entries {
		if e.Pointer && !gone[i] {
			lab := pointerLabels[e.Kind]
			if e.Kind == EntryIdentifier && e.pathID {
				lab = "task paths"
			}
			if e.side && (e.Kind == EntryIdentifier || e.Kind == EntryRead || e.Kind == EntryWrote) {
				lab = "paths"
			}
			if e.Kind == EntryError && e.routine {
				lab = routineLabel
			}
			if e.binding {
				lab = "constraints"
			}
			if !slices.Contains(byLabel[lab], e.MsgID) {
				byLabel[lab] = append(byLabel[lab], e.MsgID)
			}
		}
	}
	if len(byLabel) > 0 {
		b.WriteString("\n" + PointerHeading + "\n")
		for _, lab := range []string{"files written", "files read", "commands", "identifiers", "paths", "task paths", "errors", "repeated errors", "values", "assistant decisions", "user decisions", "constraints", "user messages"} {
			if ids := byLabel[lab]; len(ids) > 0 {
				slices.Sort(ids)
				var list []string
				for _, id := range ids {
					list = append(list, strconv.FormatInt(id, 10))
				}
				b.WriteString("- " + lab + ": [m" + strings.Join(list, ",") + "]\n")
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
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
			if rapid.IntRange(0, 3).Draw(t, "shared") == 0 {
				text = fmt.Sprintf("src/p%d.go", rapid.IntRange(0, 9).Draw(t, "path")) // a path several entries name
			}
			if k == EntryAsk && rapid.Bool().Draw(t, "multiline") {
				text += "\nsecond line\n"
			}
			l.Entries = append(l.Entries, LedgerEntry{
				Kind: k, Text: text, Status: rapid.SampledFrom([]string{"", "0", "1"}).Draw(t, "status"),
				MsgID: int64(rapid.IntRange(1, 50).Draw(t, "id")), relevance: rapid.IntRange(1, 3).Draw(t, "rel"),
				Trimmed: k == EntryAsk && rapid.IntRange(0, 4).Draw(t, "trimmed") == 0,
				pathID:  k == EntryIdentifier && rapid.Bool().Draw(t, "path"),
				routine: k == EntryError && rapid.Bool().Draw(t, "routine"),
				side:    (k == EntryIdentifier || k == EntryRead || k == EntryWrote) && rapid.Bool().Draw(t, "side"),
				binding: k == EntryDecision && rapid.Bool().Draw(t, "binding"),
			})
			if e := &l.Entries[len(l.Entries)-1]; rapid.IntRange(0, 5).Draw(t, "pointer") == 0 && e.Kind != "unknown" {
				e.toPointer()
			}
		}
		if rapid.Bool().Draw(t, "bound") {
			l.bound(rapid.IntRange(1, 3).Draw(t, "scale"))
		}
		naive := Ledger{Entries: slices.Clone(l.Entries)}
		sid := rapid.SampledFrom([]string{"", "sess"}).Draw(t, "sid")
		budget := rapid.IntRange(0, 5000).Draw(t, "budget")
		maxChars := rapid.SampledFrom([]int{100, 400, 2000, 8000, MaxLedgerChars}).Draw(t, "max")
		got, want := l.renderWithin(sid, budget, maxChars), naiveRender(&naive, sid, budget, maxChars)
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

func naiveBound(l *Ledger, scale int) {
	l.markRoutine()
	naiveMarkCovered(l)
	byKind := map[EntryKind][]LedgerEntry{}
	for _, e := range l.Entries {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	out := l.Entries[:0:0]
	for _, k := range entryOrder {
		var lines, ptrs []LedgerEntry
		for _, e := range byKind[k] {
			if e.Pointer {
				ptrs = append(ptrs, e)
			} else {
				lines = append(lines, e)
			}
		}
		slices.SortStableFunc(lines, func(a, b LedgerEntry) int {
			if c := cmp.Compare(b.weight(), a.weight()); c != 0 {
				return c
			}
			if c := cmp.Compare(b.relevance, a.relevance); c != 0 {
				return c
			}
			return cmp.Compare(b.MsgID, a.MsgID)
		})
		if len(lines) > entryCaps[k]*scale {
			for _, e := range lines[entryCaps[k]*scale:] {
				if !e.covered {
					e.toPointer()
					ptrs = append(ptrs, e)
				}
			}
			lines = lines[:entryCaps[k]*scale]
		}
		slices.SortStableFunc(lines, func(a, b LedgerEntry) int {
			if k == EntryAsk {
				return cmp.Compare(b.MsgID, a.MsgID)
			}
			return cmp.Compare(a.MsgID, b.MsgID)
		})
		// One pointer per message: the first seen, with the best relevance and pathID only
		// when every merged one was a path.
		var merged []LedgerEntry
		for _, p := range ptrs {
			found := false
			for j := range merged {
				if merged[j].MsgID == p.MsgID {
					merged[j].relevance = max(merged[j].relevance, p.relevance)
					merged[j].pathID = merged[j].pathID && p.pathID
					merged[j].routine = merged[j].routine && p.routine
					merged[j].side = merged[j].side || p.side
					merged[j].binding = merged[j].binding || p.binding
					found = true
				}
			}
			if !found {
				merged = append(merged, p)
			}
		}
		merged = slices.DeleteFunc(merged, func(e LedgerEntry) bool { return e.covered })
		slices.SortStableFunc(merged, func(a, b LedgerEntry) int {
			if c := cmp.Compare(b.weight(), a.weight()); c != 0 {
				return c
			}
			return cmp.Compare(b.MsgID, a.MsgID)
		})
		if len(merged) > maxPointers*scale {
			merged = merged[:maxPointers*scale]
		}
		slices.SortStableFunc(merged, func(a, b LedgerEntry) int { return cmp.Compare(a.MsgID, b.MsgID) })
		out = append(out, lines...)
		out = append(out, merged...)
	}
	l.Entries = out
}

func TestBoundMatchesNaive(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var l Ledger
		kinds := append(slices.Clone(entryOrder), EntryKind("unknown"))
		for i := range rapid.IntRange(0, 300).Draw(t, "entries") {
			k := rapid.SampledFrom(kinds).Draw(t, "kind")
			text := fmt.Sprint(i)
			if rapid.Bool().Draw(t, "shared") {
				text = fmt.Sprintf("p%d.go", rapid.IntRange(0, 15).Draw(t, "path")) // a path several entries name
			}
			l.Entries = append(l.Entries, LedgerEntry{Kind: k, Text: text,
				MsgID: int64(rapid.IntRange(1, 20).Draw(t, "id")), relevance: rapid.IntRange(1, 3).Draw(t, "rel"),
				pathID:  k == EntryIdentifier && rapid.Bool().Draw(t, "pathID"),
				side:    (k == EntryIdentifier || k == EntryRead || k == EntryWrote) && rapid.IntRange(0, 3).Draw(t, "side") == 0,
				binding: k == EntryDecision && rapid.Bool().Draw(t, "binding")})
		}
		for i := range l.Entries {
			if rapid.IntRange(0, 3).Draw(t, "pointer") == 0 {
				l.Entries[i].toPointer()
			}
		}
		naive := Ledger{Entries: slices.Clone(l.Entries)}
		scale := rapid.IntRange(1, 2).Draw(t, "scale")
		l.bound(scale)
		naiveBound(&naive, scale)
		if !slices.Equal(l.Entries, naive.Entries) {
			t.Fatalf("bound differs:\n%v\n%v", l.Entries, naive.Entries)
		}
	})
}

func TestRedactMatchesLowered(t *testing.T) {
	t.Parallel()
	pieces := []string{" ", "\n", "x", "=", ": ", "\"", "sk-", "SK-", "abcdefghijklmnopqrstuvwxyz0123", "ghp_", "xoxb-", "AKIA", "ABCDEFGHIJKLMNOP",
		"AIza", "Bearer ", "TOKEN", "token", "to\u212Aen", "api_key", "API-KEY", "secret", "Passw", "password", "access_key",
		"\u0130", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "—", "[REDACTED]",
		// A word character before a hint (no boundary), and values longer than the window the
		// anchored expressions read first.
		"my", "_", "9", strings.Repeat("v", secretWindow-3), strings.Repeat("w", secretWindow+10)}
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

// naiveCued is cued written plainly: every occurrence of every cue in the lowered sentence.
func naiveCued(text string, cues []string, limit int) []string {
	var out []string
	for _, s := range sentences(text) {
		ls := strings.ToLower(s)
		hit := false
		for _, cue := range cues {
			for i := 0; i+len(cue) <= len(ls) && !hit; i++ {
				hit = strings.HasPrefix(ls[i:], cue) && (i == 0 || !isWordByte(ls[i-1]))
			}
		}
		if hit {
			out = append(out, s)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

func TestCuedMatchesNaive(t *testing.T) {
	t.Parallel()
	pieces := []string{" ", ". ", "\n", "x", "_", "9", "mustard", "MUST", "Let's", "lets", "we'll", "keep", "Keep ", "decided", "I chose",
		"instead of", "never", "Always", "goal", "From now on", "going with", "; ", "? ", "avoid"}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		for range rapid.IntRange(0, 40).Draw(t, "n") {
			b.WriteString(rapid.SampledFrom(pieces).Draw(t, "piece"))
		}
		text, limit := b.String(), rapid.IntRange(1, 6).Draw(t, "limit")
		if got, want := agentDecisions(text, limit), naiveCued(text, agentCues, limit); !slices.Equal(got, want) {
			t.Fatalf("agentDecisions(%q) = %q, want %q", text, got, want)
		}
	})
}

// naiveParseArgs is parseArgs decoding every value.
func naiveParseArgs(raw string) callArgs {
	var a callArgs
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) != nil {
		return a
	}
	for _, k := range []string{"command", "cmd", "script"} {
		if s, ok := m[k].(string); ok && s != "" {
			a.Command = s
			break
		}
		if arr, ok := m[k].([]any); ok && len(arr) > 0 {
			parts := make([]string, 0, len(arr))
			for _, p := range arr {
				if s, ok := p.(string); ok {
					parts = append(parts, s)
				}
			}
			a.Command = strings.Join(parts, " ")
			break
		}
	}
	for _, k := range pathKeys {
		if s, ok := m[k].(string); ok && s != "" {
			a.Paths = append(a.Paths, s)
		}
	}
	if arr, ok := m["paths"].([]any); ok {
		for _, p := range arr {
			if s, ok := p.(string); ok && s != "" {
				a.Paths = append(a.Paths, s)
			}
		}
	}
	return a
}

func TestParseArgsMatchesNaive(t *testing.T) {
	t.Parallel()
	keys := []string{"command", "cmd", "script", "path", "file_path", "paths", "content", "dir", "x"}
	values := []string{`"a b"`, `""`, `"p\u00e9/\"q\".go"`, `["go","test"]`, `[]`, `[1,"x",null]`, `null`, `12`, `{"k":"v"}`, `true`, ` "spaced" `}
	rapid.Check(t, func(t *rapid.T) {
		var parts []string
		for range rapid.IntRange(0, 6).Draw(t, "n") {
			parts = append(parts, fmt.Sprintf(" %q :%s", rapid.SampledFrom(keys).Draw(t, "key"), rapid.SampledFrom(values).Draw(t, "value")))
		}
		raw := "{" + strings.Join(parts, ",") + "}"
		if rapid.IntRange(0, 9).Draw(t, "broken") == 0 {
			raw = raw[:len(raw)-1]
		}
		got, want := parseArgs(raw), naiveParseArgs(raw)
		if got.Command != want.Command || !slices.Equal(got.Paths, want.Paths) {
			t.Fatalf("parseArgs(%s) = %+v, want %+v", raw, got, want)
		}
	})
}

// naiveMarkCovered is markCovered by brute force: an entry is covered when another line of the
// same path text ranks above it (relevance, then the newer message, then the earlier entry).
func naiveMarkCovered(l *Ledger) {
	isPath := func(e LedgerEntry) bool {
		return !e.Pointer && (e.Kind == EntryRead || e.Kind == EntryWrote || e.Kind == EntryIdentifier && e.pathID)
	}
	for i := range l.Entries {
		l.Entries[i].covered = false
	}
	bestOf := func(i int) int {
		b := -1
		for j, x := range l.Entries {
			if !isPath(x) || x.Text != l.Entries[i].Text {
				continue
			}
			if b < 0 || x.relevance > l.Entries[b].relevance || x.relevance == l.Entries[b].relevance && x.MsgID > l.Entries[b].MsgID {
				b = j
			}
		}
		return b
	}
	var side []int
	for i, e := range l.Entries {
		if isPath(e) {
			if b := bestOf(i); b != i {
				l.Entries[i].covered = true
				if e.side {
					side = append(side, b)
				}
			}
		}
	}
	for _, b := range side {
		l.Entries[b].side = true
	}
	// A task path is covered by the command it is part of, or by the ask of its message.
	for i, e := range l.Entries {
		if e.Kind != EntryIdentifier || e.covered || !e.pathID || e.side {
			continue
		}
		for _, x := range l.Entries {
			if x.MsgID != e.MsgID {
				continue
			}
			if x.Kind == EntryCommand && !x.Pointer && !e.Pointer && e.relevance < 3 && strings.Contains(x.Text, e.Text) || x.Kind == EntryAsk {
				l.Entries[i].covered = true
			}
		}
	}
	for i, e := range l.Entries {
		if e.Kind != EntryAsk {
			continue
		}
		for _, x := range l.Entries {
			if x.Kind == EntryIdentifier && !x.covered && x.MsgID == e.MsgID {
				l.Entries[i].covered = true
			}
		}
	}
}
