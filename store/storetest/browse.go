package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// testListFilters covers the listing filters the session browser uses: model, cwd and the
// title/first-prompt query.
func testListFilters(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "f-a", Model: "gpt-x", Cwd: "/src/a", Title: "Fix the Parser", StartedAt: at(0)})
	mustCreate(t, st, store.NewSession{ID: "f-b", Model: "claude-y", Cwd: "/src/b", StartedAt: at(10)})
	mustCreate(t, st, store.NewSession{ID: "f-c", Model: "gpt-x", Cwd: "/src/b", StartedAt: at(20)})
	mustAppend(t, st, "f-b", store.Message{Role: store.RoleUser, Content: "why does 100% of the_cache miss", Timestamp: at(30)})
	for _, c := range []struct {
		o    store.ListOptions
		want []string
	}{
		{store.ListOptions{Model: "gpt-x"}, []string{"f-c", "f-a"}},
		{store.ListOptions{Cwd: "/src/b"}, []string{"f-b", "f-c"}},
		{store.ListOptions{Model: "gpt-x", Cwd: "/src/b"}, []string{"f-c"}},
		{store.ListOptions{Query: "parser"}, []string{"f-a"}},
		{store.ListOptions{Query: "FIX THE"}, []string{"f-a"}},
		{store.ListOptions{Query: "cache"}, []string{"f-b"}},
		// Matched literally: neither % nor _ is a wildcard.
		{store.ListOptions{Query: "100%"}, []string{"f-b"}},
		{store.ListOptions{Query: "the_cache"}, []string{"f-b"}},
		{store.ListOptions{Query: "t%e"}, nil},
		{store.ListOptions{Query: "o_e"}, nil},
	} {
		got, err := st.ListSessions(bg, c.o)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range got {
			ids = append(ids, l.ID)
		}
		if !equalStrings(ids, c.want) {
			t.Fatalf("list %+v = %v, want %v", c.o, ids, c.want)
		}
	}
}

// testListTrees covers ListOptions.Trees, the browser's grouped listing: the page counts tree
// roots, each comes with its branches (at any depth, also those branched from a compression
// continuation) even when they are older than the next roots, and a filter that matches only a
// branch lists that branch under its root.
func testListTrees(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "t-root", Title: "Alpha root", StartedAt: at(100)})
	mustCreate(t, st, store.NewSession{ID: "t-br1", ParentID: "t-root", Relation: store.RelationBranch, StartedAt: at(10)})
	mustCreate(t, st, store.NewSession{ID: "t-br2", ParentID: "t-br1", Relation: store.RelationBranch, Source: "telegram", StartedAt: at(20)})
	mustCreate(t, st, store.NewSession{ID: "t-cont", ParentID: "t-root", Relation: store.RelationCompression, StartedAt: at(30)})
	mustCreate(t, st, store.NewSession{ID: "t-br3", ParentID: "t-cont", Relation: store.RelationBranch, Title: "Beta probe", StartedAt: at(40)})
	mustCreate(t, st, store.NewSession{ID: "t-x", StartedAt: at(90)})
	mustCreate(t, st, store.NewSession{ID: "t-y", StartedAt: at(80)})
	mustCreate(t, st, store.NewSession{ID: "t-z", Model: "m-z", StartedAt: at(70)})
	mustCreate(t, st, store.NewSession{ID: "t-del", ParentID: "t-z", Relation: store.RelationDelegate, StartedAt: at(71)})
	mustCreate(t, st, store.NewSession{ID: "t-dbr", ParentID: "t-del", Relation: store.RelationBranch, StartedAt: at(50)})
	mustCreate(t, st, store.NewSession{ID: "t-alice", UserID: "alice", StartedAt: at(60)})
	mustCreate(t, st, store.NewSession{ID: "t-bob", UserID: "bob", ParentID: "t-alice", Relation: store.RelationBranch, StartedAt: at(65)})
	// id, then "<tree parent" when nested, then "?" when listed only on the way to a match.
	show := func(ls []store.SessionListing) []string {
		var out []string
		for _, l := range ls {
			s := l.ID
			if l.TreeParent != "" {
				s += "<" + l.TreeParent
			}
			if l.Unmatched {
				s += "?"
			}
			out = append(out, s)
		}
		return out
	}
	for _, c := range []struct {
		name string
		o    store.ListOptions
		want []string
	}{
		{"first page", store.ListOptions{Limit: 2}, []string{"t-root", "t-br3<t-root", "t-br1<t-root", "t-br2<t-br1", "t-x"}},
		{"one root", store.ListOptions{Limit: 1}, []string{"t-root", "t-br3<t-root", "t-br1<t-root", "t-br2<t-br1"}},
		// A branch of a delegate run (not listed) and a branch of another user's session
		// (listed here) are placed by the same rule.
		{"next page", store.ListOptions{Limit: 10, Offset: 2}, []string{"t-y", "t-z", "t-alice", "t-bob<t-alice", "t-dbr"}},
		{"past the end", store.ListOptions{Limit: 10, Offset: 20}, nil},
		{"only a deep branch matches", store.ListOptions{Source: "telegram", Limit: 5}, []string{"t-root?", "t-br1<t-root?", "t-br2<t-br1"}},
		{"a branch of a continuation matches", store.ListOptions{Query: "PROBE", Limit: 5}, []string{"t-root?", "t-br3<t-root"}},
		{"only the root matches", store.ListOptions{Query: "alpha"}, []string{"t-root"}},
		{"filters compose", store.ListOptions{Source: "telegram", Query: "probe"}, nil},
		{"a model filter", store.ListOptions{Model: "m-z"}, []string{"t-z"}},
		{"a filtered second page", store.ListOptions{Source: "cli", Limit: 2, Offset: 1}, []string{"t-x", "t-y"}},
		// UserID bounds every row: bob's branch of alice's session is a root for bob.
		{"bob", store.ListOptions{UserID: "bob"}, []string{"t-bob"}},
		{"alice", store.ListOptions{UserID: "alice"}, []string{"t-alice"}},
		{"alice, filtered", store.ListOptions{UserID: "alice", Query: "root"}, nil},
	} {
		c.o.Trees = true
		got, err := st.ListSessions(bg, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if g := show(got); !equalStrings(g, c.want) {
			t.Errorf("%s: list %+v = %v, want %v", c.name, c.o, g, c.want)
		}
	}
	ls, err := st.ListSessions(bg, store.ListOptions{Trees: true, Limit: 1})
	if err != nil || len(ls) == 0 || ls[0].TipID != "t-cont" || ls[0].Title != "Alpha root" {
		t.Fatalf("tree root = %+v, %v: want t-root with its chain's tip t-cont", ls, err)
	}
	if _, err := st.ListSessions(bg, store.ListOptions{Trees: true, IncludeChildren: true}); !errors.Is(err, store.ErrTreesWithChildren) {
		t.Fatalf("Trees with IncludeChildren = %v, want ErrTreesWithChildren", err)
	}
}

func testSearchByUser(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "su-1", UserID: "alice"})
	mustCreate(t, st, store.NewSession{ID: "su-2", UserID: "bob"})
	mustAppend(t, st, "su-1", user("the zebra crossing"))
	mustAppend(t, st, "su-2", user("a zebra too"))
	for _, c := range []struct {
		user string
		want []string
	}{{"alice", []string{"su-1"}}, {"bob", []string{"su-2"}}, {"carol", nil}, {"", []string{"su-1", "su-2"}}} {
		hits, err := st.Search(bg, store.SearchQuery{Text: "zebra", UserID: c.user, Sort: store.SortOldest})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.SessionID)
		}
		if !equalStrings(got, c.want) {
			t.Fatalf("search as %q = %v, want %v", c.user, got, c.want)
		}
	}
}

func testConversationPage(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "pg"})
	ids := seedTurns(t, st, "pg", 5) // 20 rows
	all := mustConversation(t, st, "pg", store.ViewAll)
	if len(all) != len(ids) {
		t.Fatalf("seeded %d rows, loaded %d", len(ids), len(all))
	}
	page := func(q store.PageQuery) []int64 {
		t.Helper()
		ms, err := st.ConversationPage(bg, "pg", q)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int64, len(ms))
		for i, m := range ms {
			out[i] = m.ID
			if i := indexOf(all, m.ID); i >= 0 && m.Content != all[i].Content {
				t.Fatalf("page row %d differs from the conversation's", m.ID)
			}
		}
		return out
	}
	eq := func(what string, got, want []int64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s = %v, want %v", what, got, want)
			}
		}
	}
	eq("first 5", page(store.PageQuery{View: store.ViewAll, Limit: 5}), ids[:5])
	eq("5 after the 5th", page(store.PageQuery{View: store.ViewAll, AfterID: ids[4], Limit: 5}), ids[5:10])
	eq("last 3", page(store.PageQuery{View: store.ViewAll, BeforeID: ids[19] + 1, Limit: 3}), ids[17:])
	eq("3 before the 10th", page(store.PageQuery{View: store.ViewAll, BeforeID: ids[9], Limit: 3}), ids[6:9])
	eq("between", page(store.PageQuery{View: store.ViewAll, AfterID: ids[2], BeforeID: ids[6], Limit: 50}), ids[3:6])
	eq("default limit", page(store.PageQuery{View: store.ViewAll}), ids)

	// Compaction: archived rows appear in the display view, not in the active one.
	if cp, ok := also[CompactStore](st); ok {
		if _, err := Compact(bg, cp, store.CompactRequest{SessionID: "pg",
			Messages: []store.Message{{Role: store.RoleUser, Content: "summary", Summary: true}}}); err != nil {
			t.Fatal(err)
		}
		if got := page(store.PageQuery{View: store.ViewActive}); len(got) != 1 {
			t.Fatalf("active page after compaction = %v, want the summary alone", got)
		}
		if got := page(store.PageQuery{View: store.ViewDisplay}); len(got) != 21 || got[0] != ids[0] {
			t.Fatalf("display page after compaction = %v, want 20 archived rows and the summary", got)
		}
	}
	_, err := st.ConversationPage(bg, "missing", store.PageQuery{})
	wantErr(t, err, store.ErrNotFound, "page of a missing session")
	_, err = st.ConversationPage(bg, "pg", store.PageQuery{View: store.View(9)})
	wantErr(t, err, store.ErrInvalid, "page with an unknown view")
}

func indexOf(ms []store.Message, id int64) int {
	for i, m := range ms {
		if m.ID == id {
			return i
		}
	}
	return -1
}

func testHeldLeases(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "hl-1"})
	mustCreate(t, st, store.NewSession{ID: "hl-2"})
	mustCreate(t, st, store.NewSession{ID: "hl-1b", ParentID: "hl-1", Relation: store.RelationCompression})
	if got, err := st.HeldLeases(bg); err != nil || len(got) != 0 {
		t.Fatalf("no lease taken yet: %v %v", got, err)
	}
	before := time.Now().Add(-time.Second)
	a, err := st.AcquireLease(bg, "hl-1", "holder-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.AcquireLease(bg, "hl-2", "holder-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.HeldLeases(bg)
	if err != nil || len(got) != 2 {
		t.Fatalf("held = %+v, %v", got, err)
	}
	if g := got[0]; g.ConversationID != "hl-1" || g.Holder != "holder-a" || g.Generation != a.Generation ||
		g.AcquiredAt.Before(before) || !g.ExpiresAt.Equal(a.ExpiresAt) {
		t.Fatalf("first held lease = %+v, acquired %+v", g, a)
	}
	if err := st.ReleaseLease(bg, b); err != nil {
		t.Fatal(err)
	}
	if got, _ = st.HeldLeases(bg); len(got) != 1 || got[0].ConversationID != "hl-1" {
		t.Fatalf("after releasing hl-2: %+v", got)
	}
	// An expired lease is not held, though its row remains.
	if _, err := st.AcquireLease(bg, "hl-2", "holder-c", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // outlive the TTL: expiry is the behaviour under test
	if got, _ = st.HeldLeases(bg); len(got) != 1 || got[0].ConversationID != "hl-1" {
		t.Fatalf("an expired lease listed as held: %+v", got)
	}
}

func testUsageByDay(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "ud-1", UserID: "alice"})
	mustCreate(t, st, store.NewSession{ID: "ud-2", UserID: "bob"})
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	u := store.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 60, CacheWriteTokens: 5, CostUSD: 0.5}
	rec := func(sid string, at time.Time, model string) {
		if err := st.RecordRequest(bg, sid, store.RequestRecord{At: at, Model: model, Usage: u}); err != nil {
			t.Fatal(err)
		}
	}
	rec("ud-1", day.Add(time.Hour), "m1")
	rec("ud-1", day.Add(23*time.Hour), "m1")
	rec("ud-1", day.Add(25*time.Hour), "m1")
	rec("ud-2", day.Add(2*time.Hour), "m2")
	rows, err := st.UsageByDay(bg, store.UsageQuery{})
	if err != nil || len(rows) != 3 {
		t.Fatalf("usage rows = %+v, %v", rows, err)
	}
	two := u.Add(u)
	two.APICalls = 2
	if r := rows[0]; !r.Day.Equal(day) || r.Model != "m1" || r.Usage != two {
		t.Fatalf("first row = %+v, want day %s m1 %+v", r, day, two)
	}
	one := u
	one.APICalls = 1
	if r := rows[1]; !r.Day.Equal(day) || r.Model != "m2" || r.Usage != one {
		t.Fatalf("second row = %+v", r)
	}
	if r := rows[2]; !r.Day.Equal(day.AddDate(0, 0, 1)) || r.Model != "m1" {
		t.Fatalf("third row = %+v", r)
	}
	if rows, _ = st.UsageByDay(bg, store.UsageQuery{UserID: "bob"}); len(rows) != 1 || rows[0].Model != "m2" {
		t.Fatalf("bob's usage = %+v", rows)
	}
	if rows, _ = st.UsageByDay(bg, store.UsageQuery{Since: day.Add(24 * time.Hour)}); len(rows) != 1 || !rows[0].Day.Equal(day.AddDate(0, 0, 1)) {
		t.Fatalf("usage since day 2 = %+v", rows)
	}
}
