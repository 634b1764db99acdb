package storetest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

func testList(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	long := strings.Repeat("ab", 40) + "\nsecond line"
	mk := func(id, source, userID string, start int) {
		mustCreate(t, st, store.NewSession{ID: id, Source: source, UserID: userID, StartedAt: at(start)})
	}
	mk("l-old", "cli", "u1", 0)
	mk("l-mid", "telegram", "u2", 10)
	mk("l-new", "cli", "u1", 20)
	mustAppend(t, st, "l-old", store.Message{Role: store.RoleUser, Content: "first\nask", Timestamp: at(100)})
	mustAppend(t, st, "l-mid", store.Message{Role: store.RoleAssistant, Content: "hello", Timestamp: at(30)},
		store.Message{Role: store.RoleUser, Content: long, Timestamp: at(31)})
	mustCreate(t, st, store.NewSession{ID: "l-del", ParentID: "l-new", Relation: store.RelationDelegate, StartedAt: at(200)})

	list, err := st.ListSessions(bg, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range list {
		ids = append(ids, l.ID)
	}
	// Newest activity first: l-old had the latest message; delegates are hidden.
	if !equalStrings(ids, []string{"l-old", "l-mid", "l-new"}) {
		t.Fatalf("order = %v", ids)
	}
	if list[0].Preview != "first ask" || !list[0].LastActive.Equal(at(100)) || list[0].MessageCount != 1 {
		t.Fatalf("listing of l-old: %+v", list[0])
	}
	if p := list[1].Preview; utf8.RuneCountInString(p) != 63 || !strings.HasSuffix(p, "...") || !strings.HasPrefix(p, "abab") {
		t.Fatalf("preview not shaped to 60 chars + ...: %q", p)
	}
	if list[2].Preview != "" || !list[2].LastActive.Equal(at(20)) {
		t.Fatalf("empty session listing: %+v", list[2])
	}
	for _, c := range []struct {
		o    store.ListOptions
		want []string
	}{
		{store.ListOptions{Source: "cli"}, []string{"l-old", "l-new"}},
		{store.ListOptions{UserID: "u2"}, []string{"l-mid"}},
		{store.ListOptions{Limit: 1, Offset: 1}, []string{"l-mid"}},
		{store.ListOptions{IncludeChildren: true, Limit: 1}, []string{"l-del"}},
		{store.ListOptions{Source: "nobody"}, nil},
	} {
		got, err := st.ListSessions(bg, c.o)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, l := range got {
			gotIDs = append(gotIDs, l.ID)
		}
		if !equalStrings(gotIDs, c.want) {
			t.Fatalf("list %+v = %v, want %v", c.o, gotIDs, c.want)
		}
	}
}

func testSearch(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "s1", Source: "cli", Model: "gpt"})
	mustCreate(t, st, store.NewSession{ID: "s2", Source: "telegram"})
	mustAppend(t, st, "s1",
		user("the deploy failed with ECONNREFUSED on port 5432"),
		callingAssistant("checking the database", toolCall("c1", "terminal", `{"cmd":"pg_isready --port 5432"}`)),
		toolResult("c1", "terminal", "no response from server at src/db/pool.go:42"),
		assistant("The postgres server is down; restart it with systemctl."),
		user("fix issue #123 in my-app.config.ts please, and email alice@example.com"),
	)
	mustAppend(t, st, "s2",
		user("what about deployment pipelines"),
		assistant("Deploying is covered by the runbook, 50% done, costs $5 and ok? a,b don't"),
	)
	search := func(q store.SearchQuery) []store.SearchHit {
		t.Helper()
		hits, err := st.Search(bg, q)
		if err != nil {
			t.Fatalf("search %+v: %v", q, err)
		}
		return hits
	}
	cases := []struct {
		q       store.SearchQuery
		wantMin int
		wantMax int
		check   func(hits []store.SearchHit) string
	}{
		{store.SearchQuery{Text: "deploy"}, 3, 3, nil},   // word forms meet: deployment, Deploying
		{store.SearchQuery{Text: `"deploy"`}, 1, 1, nil}, // a quoted word is matched as written
		{store.SearchQuery{Text: "deploy*"}, 3, 3, nil},
		{store.SearchQuery{Text: `"server is down"`}, 1, 1, nil},
		{store.SearchQuery{Text: `"down server"`}, 0, 0, nil},
		{store.SearchQuery{Text: "postgres OR runbook"}, 2, 2, nil},
		{store.SearchQuery{Text: "deploy* NOT pipelines"}, 2, 2, nil},
		{store.SearchQuery{Text: "deploy* AND"}, 3, 3, nil},
		{store.SearchQuery{Text: "deploy*", Sources: []string{"telegram"}}, 2, 2, nil},
		{store.SearchQuery{Text: "deploy*", ExcludeSources: []string{"telegram"}}, 1, 1, nil},
		{store.SearchQuery{Text: "5432", Roles: []string{"tool", "assistant"}}, 1, 1, func(h []store.SearchHit) string {
			if h[0].Role != store.RoleAssistant {
				return "role filter let through " + h[0].Role
			}
			return ""
		}},
		{store.SearchQuery{Text: "pool.go"}, 1, 1, func(h []store.SearchHit) string {
			if h[0].Role != store.RoleTool || h[0].Before == nil || h[0].Before.Content != "checking the database" ||
				h[0].After == nil || !strings.HasPrefix(h[0].After.Content, "The postgres") {
				return fmt.Sprintf("tool hit context wrong: %+v %+v", h[0].Before, h[0].After)
			}
			return ""
		}},
		{store.SearchQuery{Text: "ECONNREFUSED"}, 1, 1, func(h []store.SearchHit) string {
			if !strings.Contains(h[0].Snippet, ">>>ECONNREFUSED<<<") || h[0].Before != nil || h[0].Source != "cli" || h[0].Model != "gpt" {
				return fmt.Sprintf("snippet/context/meta wrong: %+v", h[0])
			}
			return ""
		}},
		{store.SearchQuery{Text: "ECONNREFUSED", NoContext: true}, 1, 1, func(h []store.SearchHit) string {
			if h[0].After != nil {
				return "context loaded despite NoContext"
			}
			return ""
		}},
		{store.SearchQuery{Text: "deploy*", Limit: 1}, 1, 1, nil},
		{store.SearchQuery{Text: "deploy*", Sort: store.SortOldest}, 3, 3, func(h []store.SearchHit) string {
			if h[0].SessionID != "s1" || h[2].SessionID != "s2" || h[1].MessageID > h[2].MessageID {
				return "oldest-first order wrong"
			}
			return ""
		}},
		{store.SearchQuery{Text: "deploy*", Sort: store.SortNewest}, 3, 3, func(h []store.SearchHit) string {
			if h[0].MessageID < h[1].MessageID {
				return "newest-first order wrong"
			}
			return ""
		}},
		// Hermes Agent's sanitiser cases: each of these must find the message that contains it.
		{store.SearchQuery{Text: "#123"}, 1, 1, nil},
		{store.SearchQuery{Text: "my-app.config.ts"}, 1, 1, nil},
		{store.SearchQuery{Text: "src/db/pool.go"}, 1, 1, nil},
		{store.SearchQuery{Text: "alice@example.com"}, 1, 1, nil},
		{store.SearchQuery{Text: "50%"}, 1, 1, nil},
		{store.SearchQuery{Text: "$5"}, 1, 1, nil},
		{store.SearchQuery{Text: "ok?"}, 1, 1, nil},
		{store.SearchQuery{Text: "a,b"}, 1, 1, nil},
		{store.SearchQuery{Text: "don't"}, 1, 1, nil},
		{store.SearchQuery{Text: "pg_isready"}, 1, 1, nil}, // tool call arguments are indexed
		{store.SearchQuery{Text: ""}, 0, 0, nil},
		{store.SearchQuery{Text: "   "}, 0, 0, nil},
	}
	for _, c := range cases {
		hits := search(c.q)
		if len(hits) < c.wantMin || len(hits) > c.wantMax {
			t.Errorf("search %+v: %d hits, want %d..%d: %+v", c.q, len(hits), c.wantMin, c.wantMax, hits)
			continue
		}
		if c.check != nil {
			if msg := c.check(hits); msg != "" {
				t.Errorf("search %+v: %s", c.q, msg)
			}
		}
	}
}

// testSearchSelectiveFilter: a filter that matches only low-ranked rows still finds them.
func testSearchSelectiveFilter(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "many", Source: "cli"})
	mustCreate(t, st, store.NewSession{ID: "few", Source: "cron"})
	batch := make([]store.Message, 200)
	for i := range batch {
		batch[i] = user("needle needle needle in a haystack")
	}
	mustAppend(t, st, "many", batch...)
	mustAppend(t, st, "few", assistant("one needle lost among many, many, many other words in this long message"))
	for _, q := range []store.SearchQuery{
		{Text: "needle", Sources: []string{"cron"}, Limit: 1},
		{Text: "needle", Roles: []string{"assistant"}, Limit: 5},
		{Text: "needle", SessionIDs: []string{"few"}},
	} {
		hits, err := st.Search(bg, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].SessionID != "few" {
			t.Fatalf("search %+v: %d hits %+v, want the one message of session few", q, len(hits), hits)
		}
	}
	// Paging through relevance order returns every match once.
	seen := map[int64]bool{}
	for off := 0; ; off += 20 {
		hits, err := st.Search(bg, store.SearchQuery{Text: "needle", Offset: off, Limit: 20, NoContext: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if seen[h.MessageID] {
				t.Fatalf("message %d returned on two pages", h.MessageID)
			}
			seen[h.MessageID] = true
		}
		if len(hits) < 20 {
			break
		}
	}
	if len(seen) != 201 {
		t.Fatalf("paging found %d of 201 matches", len(seen))
	}
}

func testSearchNeverErrors(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "n"})
	mustAppend(t, st, "n", user("alpha beta gamma c++ foo(bar) {x} NEAR"))
	nasty := []string{`"`, `""`, `"""`, `***`, `*`, `c++`, `foo(bar)`, `{x}`, `NEAR(a b)`, `AND`, `OR OR`, `NOT`,
		`a AND AND b`, `-`, `---`, `issue --- main`, `^`, `col:value`, `(`, `)`, `[`, `'`, `\`, `%`, `_`, `a"b"c"`,
		`"unbalanced`, `say "unbalanced`, `"w1 w2 "w3"`, "\x00", "tab\there", strings.Repeat("x ", 3000), "😀", "🙂*",
		`alpha:beta`, `alpha^beta`, `+alpha`, `alpha.`, `.alpha`, `_alpha_`, `alpha-`, `-alpha`, `a-*`, `NEAR(`}
	for c := byte('!'); c <= '~'; c++ {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			nasty = append(nasty, "alpha"+string(c)+"beta", string(c))
		}
	}
	for _, q := range nasty {
		if _, err := st.Search(bg, store.SearchQuery{Text: q}); err != nil {
			t.Errorf("search %q: %v", q, err)
		}
	}
}

func testSearchCJK(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "cjk"})
	mustAppend(t, st, "cjk",
		user("请帮我检查会话数据库的索引"),
		assistant("語言模型のテキストを検索できます"),
		assistant("plain english only"),
		user("数据 in a mixed sentence"),
	)
	cases := []struct {
		q    string
		want []string
	}{
		{"会话数据库", []string{"请帮我检查会话数据库的索引"}},
		{"検索でき", []string{"語言模型のテキストを検索できます"}},
		{"数据", []string{"数据 in a mixed sentence", "请帮我检查会话数据库的索引"}}, // 2 chars: scan, newest first
		{"会话 索引", []string{"请帮我检查会话数据库的索引"}},
		{"不存在的词", nil},
		{`"会话数据库"`, []string{"请帮我检查会话数据库的索引"}},
	}
	for _, c := range cases {
		hits, err := st.Search(bg, store.SearchQuery{Text: c.q})
		if err != nil {
			t.Fatalf("search %q: %v", c.q, err)
		}
		var got []string
		all := mustConversation(t, st, "cjk", store.ViewActive)
		for _, h := range hits {
			for _, m := range all {
				if m.ID == h.MessageID {
					got = append(got, m.Content)
				}
			}
			if !strings.Contains(h.Snippet, ">>>") {
				t.Errorf("CJK hit without a marked snippet: %q", h.Snippet)
			}
		}
		if !equalStrings(got, c.want) {
			t.Errorf("search %q = %q, want %q", c.q, got, c.want)
		}
	}
}
