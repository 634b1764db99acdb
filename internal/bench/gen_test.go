package bench

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const refSeed = 20260428

func TestRngVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		seed uint64
		want []uint64
	}{
		{0, []uint64{16294208416658607535, 7960286522194355700}},
		{20260428, []uint64{3681249641902688670, 3572250941761617995, 12211358527185992387}},
	}
	for _, tc := range tests {
		r := NewRng(tc.seed)
		for i, w := range tc.want {
			if got := r.Next(); got != w {
				t.Errorf("Rng(%d) draw %d = %d, want %d", tc.seed, i, got, w)
			}
		}
	}
}

func testGen(t testing.TB) *Generator {
	t.Helper()
	v, err := DefaultVocab()
	if err != nil {
		t.Fatal(err)
	}
	return NewGenerator(v)
}

// TestReferenceWorkload reproduces the reference checksums and statistics of WORKLOAD.md at full
// size, which pins every draw of the generator.
func TestReferenceWorkload(t *testing.T) {
	t.Parallel()
	g := testGen(t)
	specs, msgs, err := g.W1(refSeed, 200, 50000)
	if err != nil {
		t.Fatal(err)
	}
	wantSizes := []int{218, 1503, 24, 1503, 148, 18, 75, 81, 20, 12, 12, 12}
	for i, w := range wantSizes {
		if specs[i].Size != w {
			t.Errorf("sizes[%d] = %d, want %d", i, specs[i].Size, w)
		}
	}
	minSize, maxSize, sum := specs[0].Size, 0, 0
	for _, s := range specs {
		minSize, maxSize, sum = min(minSize, s.Size), max(maxSize, s.Size), sum+s.Size
	}
	if minSize != 11 || maxSize != 1503 || sum != 50000 {
		t.Errorf("sizes min %d max %d sum %d, want 11, 1503, 50000", minSize, maxSize, sum)
	}
	if specs[5].ID != "bench-0005" || specs[5].Source != g.v.Sources[1] || specs[5].Model != g.v.Models[2] {
		t.Errorf("session 5 = %+v", specs[5])
	}
	if got, want := MessagesSHA256(msgs), "ebefebd646bae77d14c7784898c0d9e62c13563c7491738fb0de2c603c15f10a"; got != want {
		t.Errorf("messages_sha256 = %s, want %s", got, want)
	}
	st := Stats(msgs)
	checks := []struct {
		name      string
		got, want int
	}{
		{"messages", st.Messages, 50000},
		{"cjk messages", st.CJKMessages, 2530},
		{"chars", st.Chars, 19485648},
		{"utf8 bytes", st.UTF8Bytes, 20936794},
		{"min chars", st.MinChars, 50},
		{"max chars", st.MaxChars, 1964},
		{"user", st.Roles["user"], 11369},
		{"assistant", st.Roles["assistant"], 20407},
		{"tool", st.Roles["tool"], 18224},
		{"assistant with tool calls", st.AssistantWithToolCalls, 9188},
		{"tool calls", st.ToolCalls, 18357},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}

	qs := g.Queries(refSeed, 500)
	if got, want := QueriesSHA256(qs), "5ebeb64a5841115ae377abc56d7273097a5e23f4e4954233dc3e1cf44d7812b8"; got != want {
		t.Errorf("queries_sha256 = %s, want %s", got, want)
	}
	cats := map[string]int{}
	for _, q := range qs {
		cats[q.Category]++
	}
	wantCats := map[string]int{"word": 122, "quoted_bigram": 63, "prefix": 58, "term": 54, "boolean": 44,
		"unbalanced": 34, "quoted_phrase": 28, "special": 27, "two_words": 26, "cjk3": 19, "cjk2": 18, "path": 7}
	for c, n := range wantCats {
		if cats[c] != n {
			t.Errorf("category %s: %d queries, want %d", c, cats[c], n)
		}
	}
	if len(cats) != len(wantCats) {
		t.Errorf("categories %v, want exactly %v", cats, wantCats)
	}

	wantW5 := []string{
		"1d0aad14c81888667a0b2389d6a4ca736940166e2e511f3fd45a4fc2d07e050c",
		"7989522b679e58d5d68345fc0c5ff764f6fbb59184fd119a0862e8581c4adca3",
		"2b503ee42fb71324372e4f24095d8ebb4209d3e1ac5dd2f7182c6d3034486ea3",
		"6be7d74dc2fe2fff61bf192f8baba3a64eb90464955ddf66f41241fba240e902",
	}
	for k, want := range wantW5 {
		specs, msgs := g.W5(refSeed, k, 2000)
		if len(specs) != 5 || len(msgs) != 2000 {
			t.Fatalf("worker %d: %d sessions, %d messages", k, len(specs), len(msgs))
		}
		if got := MessagesSHA256(msgs); got != want {
			t.Errorf("w5_messages_sha256[%d] = %s, want %s", k, got, want)
		}
	}
}

func TestGeneratedMessageShape(t *testing.T) {
	t.Parallel()
	g := testGen(t)
	specs, msgs, err := g.W1(7, 10, 500)
	if err != nil {
		t.Fatal(err)
	}
	perSession := map[string]int{}
	pending := map[string][]string{} // session -> outstanding tool call ids
	for i, m := range msgs {
		perSession[m.SessionID]++
		n := utf8.RuneCountInString(m.Content)
		switch m.Role {
		case "user":
			if n < 50 || n > 600 || m.ToolCalls != nil || m.ToolName != "" || m.ToolCallID != "" {
				t.Fatalf("message %d: bad user message (%d chars) %+v", i, n, m)
			}
		case "assistant":
			if m.ToolCalls == nil && (n < 100 || n > 2000) || m.ToolCalls != nil && (n < 50 || n > 300) {
				t.Fatalf("message %d: assistant content of %d chars with %d calls", i, n, len(m.ToolCalls))
			}
			for _, c := range m.ToolCalls {
				if c.Type != "function" || !strings.HasPrefix(c.ID, "call_") || len(c.ID) != 29 {
					t.Fatalf("message %d: bad tool call %+v", i, c)
				}
				pending[m.SessionID] = append(pending[m.SessionID], c.ID)
			}
		case "tool":
			p := pending[m.SessionID]
			if len(p) == 0 || p[0] != m.ToolCallID || m.ToolName == "" {
				t.Fatalf("message %d: tool result %q does not answer the next pending call %v", i, m.ToolCallID, p)
			}
			pending[m.SessionID] = p[1:]
		default:
			t.Fatalf("message %d: role %q", i, m.Role)
		}
	}
	for _, s := range specs {
		if perSession[s.ID] != s.Size {
			t.Errorf("%s: %d messages, want %d", s.ID, perSession[s.ID], s.Size)
		}
	}
}

func TestW1RejectsTooFewMessages(t *testing.T) {
	t.Parallel()
	if _, _, err := testGen(t).W1(1, 10, 99); err == nil || !strings.Contains(err.Error(), "at least 10 per session") {
		t.Fatalf("W1(10 sessions, 99 messages) error = %v", err)
	}
}

func TestW5SizesSplitRemainder(t *testing.T) {
	t.Parallel()
	specs, msgs := testGen(t).W5(1, 2, 13)
	want := []int{3, 3, 3, 2, 2}
	for j, s := range specs {
		if s.Size != want[j] || s.ID != "contend-2-"+string(rune('0'+j)) {
			t.Errorf("session %d = %+v, want size %d", j, s, want[j])
		}
	}
	if len(msgs) != 13 {
		t.Errorf("%d messages, want 13", len(msgs))
	}
}

func TestNearestRank(t *testing.T) {
	t.Parallel()
	xs := make([]time.Duration, 100)
	for i := range xs {
		xs[i] = time.Duration(100-i) * time.Millisecond // 100..1 ms, unsorted
	}
	got := summarize(xs)
	want := Latency{P50: 50, P99: 99, Max: 100, Mean: 50.5}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if one := summarize([]time.Duration{1500 * time.Microsecond}); one.P50 != 1.5 || one.P99 != 1.5 {
		t.Errorf("single sample summary = %+v", one)
	}
}

func BenchmarkGenerateW1(b *testing.B) {
	g := testGen(b)
	for b.Loop() {
		if _, _, err := g.W1(refSeed, 200, 50000); err != nil {
			b.Fatal(err)
		}
	}
}
