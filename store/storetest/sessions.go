package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

func testSessions(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)

	// Defaults: id, source, start time.
	s := mustCreate(t, st, store.NewSession{Model: "m1"})
	if s.ID == "" || s.Source != "cli" || s.StartedAt.IsZero() || s.Ended() {
		t.Fatalf("defaults not applied: %+v", s)
	}
	if _, err := st.ResolveSession(bg, s.ID[:15]); err != nil {
		t.Fatalf("generated id %q is not prefix-resolvable: %v", s.ID, err)
	}

	// Ensure semantics: a second create of the same id changes nothing.
	a := mustCreate(t, st, store.NewSession{ID: "s-a", Source: "telegram", UserID: "u1", SessionKey: "k1",
		Model: "m1", ModelConfig: json.RawMessage(`{"temperature":0.2}`), StartedAt: at(0), Cwd: "/w", GitBranch: "main"})
	again := mustCreate(t, st, store.NewSession{ID: "s-a", Source: "cli", UserID: "u2", Model: "m2"})
	if again.Source != "telegram" || again.UserID != "u1" || again.Model != "m1" || !again.StartedAt.Equal(at(0)) {
		t.Fatalf("ensure overwrote an earlier writer's values: %+v", again)
	}
	if a.SessionKey != "k1" || string(a.ModelConfig) != `{"temperature":0.2}` || a.Cwd != "/w" || a.GitBranch != "main" {
		t.Fatalf("fields not stored: %+v", a)
	}

	// Bad input.
	_, err := st.CreateSession(bg, store.NewSession{ID: "bad", Relation: "cousin", ParentID: "s-a"})
	wantErr(t, err, store.ErrInvalid, "unknown relation")
	_, err = st.CreateSession(bg, store.NewSession{ID: "orphan", Relation: store.RelationBranch, ParentID: "nope"})
	wantErr(t, err, store.ErrNotFound, "missing parent")
	_, err = st.CreateSession(bg, store.NewSession{ID: "cfg", ModelConfig: json.RawMessage(`[1,2]`)})
	wantErr(t, err, store.ErrInvalid, "model_config array")
	_, err = st.CreateSession(bg, store.NewSession{ID: "../etc"})
	wantErr(t, err, store.ErrInvalid, "path-like id")
	_, err = st.GetSession(bg, "missing")
	wantErr(t, err, store.ErrNotFound, "get missing")

	// Children inherit workspace from their parent.
	c := mustCreate(t, st, store.NewSession{ID: "s-a-child", ParentID: "s-a", Relation: store.RelationBranch})
	if c.Cwd != "/w" || c.GitBranch != "main" || c.ParentID != "s-a" || c.Relation != store.RelationBranch {
		t.Fatalf("child did not inherit: %+v", c)
	}

	// End: first stamp wins; reopen clears.
	if err := st.EndSession(bg, "s-a", store.EndUserExit); err != nil {
		t.Fatal(err)
	}
	first := mustSession(t, st, "s-a")
	time.Sleep(2 * time.Millisecond)
	if err := st.EndSession(bg, "s-a", "other"); err != nil {
		t.Fatal(err)
	}
	second := mustSession(t, st, "s-a")
	if !second.Ended() || second.EndReason != store.EndUserExit || !second.EndedAt.Equal(first.EndedAt) {
		t.Fatalf("end re-stamped: first %v %q, second %v %q", first.EndedAt, first.EndReason, second.EndedAt, second.EndReason)
	}
	if err := st.ReopenSession(bg, "s-a"); err != nil {
		t.Fatal(err)
	}
	if r := mustSession(t, st, "s-a"); r.Ended() || r.EndReason != "" {
		t.Fatalf("reopen left %+v", r)
	}
	wantErr(t, st.EndSession(bg, "missing", "x"), store.ErrNotFound, "end missing")
	wantErr(t, st.EndSession(bg, "s-a", ""), store.ErrInvalid, "end without reason")

	// Update metadata.
	model, cwd := "m9", "/elsewhere"
	if err := st.UpdateSession(bg, "s-a", store.SessionPatch{Model: &model, Cwd: &cwd, ModelConfig: json.RawMessage(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	if u := mustSession(t, st, "s-a"); u.Model != "m9" || u.Cwd != "/elsewhere" || string(u.ModelConfig) != `{"a":1}` || u.Source != "telegram" {
		t.Fatalf("update: %+v", u)
	}
	wantErr(t, st.UpdateSession(bg, "missing", store.SessionPatch{Model: &model}), store.ErrNotFound, "update missing")
	wantErr(t, st.UpdateSession(bg, "s-a", store.SessionPatch{ModelConfig: json.RawMessage(`nope`)}), store.ErrInvalid, "update bad config")
}

func testTitles(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "t1", StartedAt: at(0)})
	mustCreate(t, st, store.NewSession{ID: "t2", StartedAt: at(1)})

	if err := st.SetTitle(bg, "t1", "  Fix\tthe \u200bparser\n "); err != nil {
		t.Fatal(err)
	}
	if got := mustSession(t, st, "t1").Title; got != "Fix the parser" {
		t.Fatalf("title not cleaned: %q", got)
	}
	err := st.SetTitle(bg, "t2", "Fix the parser")
	var inUse *store.TitleInUseError
	if !errors.As(err, &inUse) || inUse.SessionID != "t1" || !errors.Is(err, store.ErrTitleInUse) {
		t.Fatalf("duplicate title: got %v, want TitleInUseError naming t1", err)
	}
	if got := mustSession(t, st, "t2").Title; got != "" {
		t.Fatalf("failed SetTitle changed the title to %q", got)
	}
	wantErr(t, st.SetTitle(bg, "t2", strings.Repeat("x", store.MaxTitleLength+1)), store.ErrInvalid, "long title")
	wantErr(t, st.SetTitle(bg, "missing", "x"), store.ErrNotFound, "title of missing session")

	next, err := st.NextTitle(bg, "", "Fix the parser")
	if err != nil || next != "Fix the parser #2" {
		t.Fatalf("NextTitle = %q, %v", next, err)
	}
	if err := st.SetTitle(bg, "t2", next); err != nil {
		t.Fatal(err)
	}
	if next, _ = st.NextTitle(bg, "", "Fix the parser #2"); next != "Fix the parser #3" {
		t.Fatalf("NextTitle after #2 = %q", next)
	}
	if fresh, _ := st.NextTitle(bg, "", "Unused"); fresh != "Unused" {
		t.Fatalf("NextTitle of a free title = %q", fresh)
	}
	// The bare title resolves to the newest numbered continuation; a numbered one to itself.
	if s, err := st.ResolveSession(bg, "Fix the parser"); err != nil || s.ID != "t2" {
		t.Fatalf("resolve by title = %v, %v; want t2", s.ID, err)
	}
	if s, err := st.ResolveSession(bg, "Fix the parser #2"); err != nil || s.ID != "t2" {
		t.Fatalf("resolve numbered title = %v, %v", s.ID, err)
	}
	// Clearing frees the title.
	if err := st.SetTitle(bg, "t1", ""); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(bg, "t2", "Fix the parser"); err != nil {
		t.Fatalf("title should be free after clearing: %v", err)
	}
	if _, err := st.CreateSession(bg, store.NewSession{ID: "t3", Title: "Fix the parser"}); !errors.Is(err, store.ErrTitleInUse) {
		t.Fatalf("create with a taken title: %v", err)
	}
}

func testResolve(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	for _, id := range []string{"20261101_120000_aaaaaa", "20261101_120000_aaabbb", "20261102_090000_cccccc"} {
		mustCreate(t, st, store.NewSession{ID: id})
	}
	cases := []struct {
		ref, want string
		err       error
	}{
		{"20261101_120000_aaaaaa", "20261101_120000_aaaaaa", nil},
		{"20261102", "20261102_090000_cccccc", nil},
		{"20261101_120000_aaab", "20261101_120000_aaabbb", nil},
		{"20261101", "", store.ErrNotFound}, // ambiguous: checked below
		{"2099", "", store.ErrNotFound},
		{"   ", "", store.ErrInvalid},
	}
	for _, c := range cases {
		s, err := st.ResolveSession(bg, c.ref)
		if c.ref == "20261101" {
			var amb *store.AmbiguousError
			if !errors.As(err, &amb) || len(amb.Matches) != 2 || !strings.Contains(err.Error(), "ambiguous") {
				t.Fatalf("ambiguous prefix: got %v", err)
			}
			continue
		}
		if c.err != nil {
			wantErr(t, err, c.err, "resolve "+c.ref)
			continue
		}
		if err != nil || s.ID != c.want {
			t.Fatalf("resolve %q = %q, %v; want %q", c.ref, s.ID, err, c.want)
		}
	}
}

func testPromptAndUsage(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "p1"})
	mustCreate(t, st, store.NewSession{ID: "p2"})
	prompt := "You are spool.\n\n## Tools\n- session_search 🔎\n会话\n"
	h1, err := st.SetSystemPrompt(bg, "p1", prompt)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := st.SetSystemPrompt(bg, "p2", prompt)
	if h1 != h2 || len(h1) != 64 {
		t.Fatalf("same prompt gave hashes %q and %q", h1, h2)
	}
	if got, _ := st.SystemPrompt(bg, "p2"); got != prompt {
		t.Fatalf("prompt round trip: %q", got)
	}
	if s := mustSession(t, st, "p1"); s.SystemPromptHash != h1 {
		t.Fatalf("session hash %q, want %q", s.SystemPromptHash, h1)
	}
	stats, _ := st.Stats(bg)
	if stats.SystemPrompts != 1 {
		t.Fatalf("prompt stored %d times, want once", stats.SystemPrompts)
	}
	if got, err := st.SystemPrompt(bg, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("prompt of missing session = %q, %v", got, err)
	}
	_, err = st.SetSystemPrompt(bg, "missing", "x")
	wantErr(t, err, store.ErrNotFound, "set prompt on missing session")

	u := store.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 80, CacheWriteTokens: 10, ReasoningTokens: 5, APICalls: 1, CostUSD: 0.25}
	for i := 0; i < 3; i++ {
		r := store.RequestRecord{At: at(i), Model: "m", Usage: u}
		if i == 2 {
			r.Task = "compression"
			r.Fallback = "mini"
			r.Break = &store.CacheBreak{Layer: "messages", Index: 4, Reason: "compaction", LostTokens: 1234, Detail: "model a -> b"}
			r.Latency = 1234567 * time.Microsecond
		}
		if err := st.RecordRequest(bg, "p1", r); err != nil {
			t.Fatal(err)
		}
	}
	got := mustSession(t, st, "p1").Usage
	want := u.Add(u).Add(u)
	if got != want {
		t.Fatalf("usage = %+v, want %+v", got, want)
	}
	reqs, err := st.Requests(bg, "p1", 2)
	if err != nil || len(reqs) != 2 {
		t.Fatalf("requests: %d, %v", len(reqs), err)
	}
	if r := reqs[0]; r.Task != "compression" || r.Break == nil || *r.Break != (store.CacheBreak{Layer: "messages", Index: 4, Reason: "compaction", LostTokens: 1234, Detail: "model a -> b"}) ||
		r.Fallback != "mini" || r.Usage != u || !r.At.Equal(at(2)) || r.Model != "m" || r.Latency != 1234567*time.Microsecond {
		t.Fatalf("newest request = %+v (break %+v)", r, r.Break)
	}
	if r := reqs[1]; r.Task != "turn" || r.Break != nil || r.Latency != 0 || r.Fallback != "" {
		t.Fatalf("second newest request = %+v", r)
	}
	wantErr(t, st.RecordRequest(bg, "missing", store.RequestRecord{Usage: u}), store.ErrNotFound, "request of missing session")
	_, err = st.Requests(bg, "missing", 0)
	wantErr(t, err, store.ErrNotFound, "requests of missing session")
}

// A session created with its first messages stores both in one transaction: the messages are
// there with the counters and preview, and a create that cannot store them stores nothing.
func testSessionWithFirstMessages(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	first := []store.Message{
		{Role: store.RoleUser, Content: "the first ask", Timestamp: at(1)},
		{Role: store.RoleAssistant, Content: "an answer", Timestamp: at(2),
			ToolCalls: []store.ToolCall{{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"ls"}`}}}},
	}
	s := mustCreate(t, st, store.NewSession{ID: "with-first", SystemPrompt: "the frozen prompt", Messages: first})
	if s.MessageCount != 2 || s.ToolCallCount != 1 || s.SystemPromptHash != store.PromptHash("the frozen prompt") {
		t.Fatalf("counters and prompt after a create with messages: %+v", s)
	}
	if p, err := st.SystemPrompt(bg, "with-first"); err != nil || p != "the frozen prompt" {
		t.Fatalf("prompt of a session created with one: %q %v", p, err)
	}
	ms, err := st.Conversation(bg, "with-first", store.ViewActive)
	if err != nil || len(ms) != 2 || ms[0].Content != "the first ask" || len(ms[1].ToolCalls) != 1 {
		t.Fatalf("first messages: %+v %v", ms, err)
	}

	// An existing id: ErrExists, nothing added to the session that is there.
	_, err = st.CreateSession(bg, store.NewSession{ID: "with-first", Messages: first[:1]})
	wantErr(t, err, store.ErrExists, "create with messages on an existing id")
	_, err = st.CreateSession(bg, store.NewSession{ID: "with-first", SystemPrompt: "another prompt"})
	wantErr(t, err, store.ErrExists, "create with a prompt on an existing id")
	if ms, _ := st.Conversation(bg, "with-first", store.ViewAll); len(ms) != 2 {
		t.Fatalf("a refused create added messages: %d rows", len(ms))
	}
	if p, _ := st.SystemPrompt(bg, "with-first"); p != "the frozen prompt" {
		t.Fatalf("a refused create changed the prompt to %q", p)
	}

	// A message the store refuses: no session either.
	_, err = st.CreateSession(bg, store.NewSession{ID: "bad-first", SystemPrompt: "p", Messages: []store.Message{{Role: "narrator", Content: "x"}}})
	wantErr(t, err, store.ErrInvalid, "create with an invalid first message")
	_, err = st.GetSession(bg, "bad-first")
	wantErr(t, err, store.ErrNotFound, "session of a refused create")
}

// testTitlesPerPrincipal: a title is unique among one principal's (user_id's) sessions only:
// another principal's title neither blocks a rename nor numbers a new title, and resolving for
// one principal never finds, names or numbers another's session.
func testTitlesPerPrincipal(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	const secret = "Alice secret chat ZEBRA42"
	mustCreate(t, st, store.NewSession{ID: "pa-1", UserID: "alice", Title: secret, StartedAt: at(0)})
	mustCreate(t, st, store.NewSession{ID: "pb-1", UserID: "bob", StartedAt: at(1)})
	mustCreate(t, st, store.NewSession{ID: "pb-2", UserID: "bob", StartedAt: at(2)})

	// Bob's numbering does not count Alice's title.
	if next, err := st.NextTitle(bg, "bob", secret); err != nil || next != secret {
		t.Fatalf("bob's NextTitle(%q) = %q, %v; want it unnumbered", secret, next, err)
	}
	// Bob may take the same title: no TitleInUseError naming Alice's session.
	if err := st.SetTitle(bg, "pb-1", secret); err != nil {
		t.Fatalf("bob renaming to alice's title: %v", err)
	}
	// Within one principal titles stay unique and numbered.
	var inUse *store.TitleInUseError
	if err := st.SetTitle(bg, "pb-2", secret); !errors.As(err, &inUse) || inUse.SessionID != "pb-1" {
		t.Fatalf("bob's second session taking bob's title: %v; want TitleInUseError naming pb-1", err)
	}
	if next, err := st.NextTitle(bg, "bob", secret); err != nil || next != secret+" #2" {
		t.Fatalf("bob's NextTitle after taking it = %q, %v", next, err)
	}
	if next, err := st.NextTitle(bg, "alice", secret); err != nil || next != secret+" #2" {
		t.Fatalf("alice's NextTitle = %q, %v", next, err)
	}
	if next, err := st.NextTitle(bg, "carol", secret); err != nil || next != secret {
		t.Fatalf("carol's NextTitle = %q, %v", next, err)
	}
	// A create with another principal's title succeeds.
	if s, err := st.CreateSession(bg, store.NewSession{ID: "pc-1", UserID: "carol", Title: secret, StartedAt: at(3)}); err != nil || s.Title != secret {
		t.Fatalf("carol creating with a title others hold: %+v, %v", s, err)
	}
	if _, err := st.CreateSession(bg, store.NewSession{ID: "pc-2", UserID: "carol", Title: secret}); !errors.Is(err, store.ErrTitleInUse) {
		t.Fatalf("carol's second create with her own title: %v", err)
	}
	// A rotation's continuation is numbered among its own principal's titles.
	mustCreate(t, st, store.NewSession{ID: "pd-1", UserID: "dave", Title: "Plan", StartedAt: at(4)})
	mustCreate(t, st, store.NewSession{ID: "pe-1", UserID: "erin", Title: "Plan #7", StartedAt: at(4)})
	if next, err := st.NextTitle(bg, "dave", "Plan"); err != nil || next != "Plan #2" {
		t.Fatalf("dave's NextTitle beside erin's \"Plan #7\" = %q, %v", next, err)
	}

	// Resolving for one principal finds only that principal's sessions.
	for _, tc := range []struct{ user, ref, want string }{
		{"alice", secret, "pa-1"},
		{"bob", secret, "pb-1"},
		{"carol", secret, "pc-1"},
		{"bob", "pb-1", "pb-1"},
		{"bob", "pa-1", ""}, // another principal's exact id
		{"frank", secret, ""},
		{"erin", "Plan", "pe-1"},
		{"dave", "Plan #7", ""},
		{"bob", "pb-", ""}, // ambiguous among bob's own two
		{"alice", "p", "pa-1"},
	} {
		s, err := st.ResolveSessionOf(bg, tc.user, tc.ref)
		switch {
		case tc.want != "" && (err != nil || s.ID != tc.want):
			t.Errorf("ResolveSessionOf(%s, %q) = %q, %v; want %s", tc.user, tc.ref, s.ID, err, tc.want)
		case tc.want == "" && err == nil:
			t.Errorf("ResolveSessionOf(%s, %q) = %q; want an error", tc.user, tc.ref, s.ID)
		}
		var amb *store.AmbiguousError
		if errors.As(err, &amb) {
			for _, id := range amb.Matches {
				if !strings.HasPrefix(id, "pb-") {
					t.Errorf("ResolveSessionOf(%s, %q) names %s, another principal's session", tc.user, tc.ref, id)
				}
			}
		}
	}
	// Unscoped, the local principal's title wins over others' of the same name.
	mustCreate(t, st, store.NewSession{ID: "pl-1", Title: secret, StartedAt: at(0)})
	if s, err := st.ResolveSession(bg, secret); err != nil || s.ID != "pl-1" {
		t.Fatalf("ResolveSession(%q) = %q, %v; want the local principal's pl-1", secret, s.ID, err)
	}
}
