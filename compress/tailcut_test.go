package compress

import "testing"

func TestFindTailCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    string
		tok     int // every message's estimate
		head    int
		budget  int
		soft    int
		users   int
		want    int
		comment string
	}{
		{"soft ceiling stops the walk", "s u a u a u a u a u a", 10, 1, 30, 45, 1, 7,
			"acc reaches 40 at index 7; index 6 would pass 45"},
		{"min tail floor keeps three messages however big", "s u a u a u a u a u a", 1000, 1, 30, 45, 1, 8,
			"min_tail = min(max(3, min(3, 8)), n-head-3, n-head-1) = 3"},
		{"everything fits under soft: re-walk with the raw budget", "s u a u a u a", 10, 1, 40, 60, 1, 3,
			"raw budget 40 keeps four messages"},
		{"whole region fits even the raw budget: cut = max(n - min_tail, head+1)", "s u a u a u a", 1, 1, 100, 150, 1, 4,
			"n=7, min_tail=3"},
		{"cut inside a tool group moves back to the calling assistant", "s u a u c2 t t a u a", 10, 1, 40, 50, 1, 4,
			"walk stops at 5 (a tool result); its assistant is 4"},
		{"last user ask before the cut pulls the cut back", "s u a u c t c t c t a", 10, 1, 30, 45, 1, 3,
			"the tool loop after the ask fills the budget; the ask at 3 stays verbatim"},
		{"last user ask at the head boundary: the whole exchange moves to the middle", "s u c t c t c t a", 10, 1, 20, 30, 1, 4,
			"clamp to head+1 would split the ask from its reply, so the cut moves past u → c → t"},
		{"min_tail_user_messages = 2 keeps the two newest asks", "s u a u a u c t c t a", 10, 1, 30, 45, 2, 3, ""},
		{"min_tail_user_messages = 1 keeps only the newest ask", "s u a u a u c t c t a", 10, 1, 30, 45, 1, 5, ""},
		{"last assistant reply before the cut pulls the cut back", "s u a u a u u u u", 10, 1, 20, 30, 1, 4,
			"the tail held only user turns; the reply at 4 joins it"},
		{"raising the floor to head+1 never splits a tool group", "s c2 t t u u u u", 10, 1, 20, 30, 1, 4,
			"the last assistant (1, no text) pulls the cut to head+1 = 2, a tool result; align forward to 4"},
		{"a summary is not a user ask", "s S a c t c t a", 10, 1, 20, 30, 1, 3,
			"with the summary counted as an ask the cut would be 2"},
		{"no system message: head 0", "u a u a u a u a", 10, 0, 20, 30, 1, 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ms := hist(tt.spec)
			tok := make([]int, len(ms))
			for i := range tok {
				tok[i] = tt.tok
			}
			got := findTailCut(ms, tok, tt.head, tailParams{Budget: tt.budget, Soft: tt.soft, ProtectLastN: 3, MinTailUsers: tt.users})
			if got != tt.want {
				t.Fatalf("cut = %d, want %d (%s)\nhistory: %s", got, tt.want, tt.comment, roles(ms))
			}
			if got < len(ms) && ms[got].Role == "tool" {
				t.Fatalf("tail starts with a tool result")
			}
		})
	}
}

func TestAlignBoundaries(t *testing.T) {
	t.Parallel()
	ms := hist("u c2 t t a")
	for _, tc := range []struct{ in, back, fwd int }{
		{0, 0, 0}, {1, 1, 1}, {2, 1, 4}, {3, 1, 4}, {4, 1, 4}, {5, 5, 5},
	} {
		if got := alignBackward(ms, tc.in); got != tc.back {
			t.Errorf("alignBackward(%d) = %d, want %d", tc.in, got, tc.back)
		}
		if got := alignForward(ms, tc.in); got != tc.fwd {
			t.Errorf("alignForward(%d) = %d, want %d", tc.in, got, tc.fwd)
		}
	}
}
