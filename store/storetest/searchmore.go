package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// Search correctness beyond the basics: whole tool bodies, CJK operators, timestamp
// order, tool names on hits, compaction copies and summaries, the tool-call envelope.

func searchIDs(t *testing.T, st store.Searcher, q store.SearchQuery) []int64 {
	t.Helper()
	hits, err := st.Search(bg, q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.MessageID
	}
	return ids
}

// testSearchLongToolOutput: a tool search finds text anywhere in a tool row's body, with the
// query's operators, not only in the prefix the index holds.
func testSearchLongToolOutput(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "tools"})
	long := "headword " + strings.Repeat("x", 9000) + " needleinhay and 桂林山水"
	ids := mustAppend(t, st, "tools",
		callingAssistant("", toolCall("c1", "terminal", `{"cmd":"cat big.log"}`)),
		toolResult("c1", "terminal", long),
		toolResult("c2", "terminal", "short output with needleinhay"),
		toolResult("c3", "read_file", strings.Repeat("y ", 5000)+"otherword"),
	)
	longID, shortID := ids[1], ids[2]
	tools := []string{store.RoleTool}
	cases := []struct {
		q    string
		want []int64
	}{
		{"needleinhay", []int64{shortID, longID}},
		{"headword AND needleinhay", []int64{longID}},      // one term in the prefix, one past it
		{"headword needleinhay", []int64{shortID, longID}}, // plain words: either one
		{"needleinhay NOT headword", []int64{shortID}},
		{"needleinhay NOT otherword", []int64{shortID, longID}},
		{"otherword OR headword", []int64{longID, ids[3]}},
		{`"needleinhay and"`, []int64{longID}},
		{"needlein*", []int64{shortID, longID}},
		{"桂林山水", []int64{longID}},
		{"山水 OR nothingatall", []int64{longID}},
	}
	for _, c := range cases {
		got := searchIDs(t, st, store.SearchQuery{Text: c.q, Roles: tools, NoContext: true})
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("tool search %q = %v, want %v", c.q, got, want)
		}
	}
	hits, err := st.Search(bg, store.SearchQuery{Text: "needleinhay", Roles: tools, Sort: store.SortNewest})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].MessageID != shortID || hits[1].MessageID != longID {
		t.Fatalf("newest-first tool hits = %+v", hits)
	}
	if !strings.Contains(hits[1].Snippet, ">>>") && !strings.Contains(hits[1].Snippet, "needleinhay") {
		t.Errorf("long tool hit snippet does not show the match: %q", hits[1].Snippet)
	}
	// Pages through the merged list return each hit once.
	var paged []int64
	for off := 0; off < 4; off++ {
		paged = append(paged, searchIDs(t, st, store.SearchQuery{Text: "needleinhay", Roles: tools, Limit: 1, Offset: off, NoContext: true})...)
	}
	slices.Sort(paged)
	if !slices.Equal(paged, []int64{longID, shortID}) {
		t.Errorf("paging tool hits one at a time = %v", paged)
	}
}

// testSearchCJKOperators: OR and NOT mean on CJK queries what they mean on Latin ones.
func testSearchCJKOperators(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "cjk-ops"})
	ids := mustAppend(t, st, "cjk-ops",
		user("桂林的山水甲天下"),
		user("北京的冬天很冷"),
		user("桂林漓江的风景"),
		user("beijing in english only"),
		user("上海的会话数据库"),
	)
	guilin, beijing, lijiang, latin, shanghai := ids[0], ids[1], ids[2], ids[3], ids[4]
	cases := []struct {
		q    string
		want []int64
	}{
		{"桂林 OR 北京", []int64{guilin, beijing, lijiang}},
		{"桂林 NOT 漓江", []int64{guilin}},
		{"桂林 NOT 漓江 OR 北京", []int64{guilin, beijing}},
		{"桂林 OR beijing", []int64{guilin, lijiang, latin}},
		{"会话数据库 OR 北京的冬天", []int64{beijing, shanghai}}, // both through the trigram index
		{"桂林 NOT 的风景", []int64{guilin}},
		{"NOT 桂林", []int64{guilin, lijiang}}, // a leading operator is dropped, as on the Latin path
		{"桂林 OR", []int64{guilin, lijiang}},
		{"桂林 AND 漓江", []int64{lijiang}},
	}
	for _, c := range cases {
		got := searchIDs(t, st, store.SearchQuery{Text: c.q, NoContext: true})
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("search %q = %v, want %v", c.q, got, want)
		}
	}
}

// testSearchSortsByTimestamp: newest and oldest follow the messages' own times, not the order
// they were stored in (an imported session is stored last but dated first).
func testSearchSortsByTimestamp(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "live", StartedAt: at(1000)})
	live := mustAppend(t, st, "live",
		store.Message{Role: store.RoleUser, Content: "deploy the 会话数据库 now", Timestamp: at(1000)},
		store.Message{Role: store.RoleUser, Content: "deploy again 会话数据库", Timestamp: at(1010)})
	old := []store.Message{
		{Role: store.RoleUser, Content: "deploy from the archive 会话数据库", Timestamp: at(5), Active: true},
		{Role: store.RoleUser, Content: "deploy late in the archive 会话数据库", Timestamp: at(2000), Active: true},
	}
	if admin, ok := also[store.Admin](st); ok {
		if err := admin.ImportSession(bg, store.Session{ID: "imported", Source: "cli", StartedAt: at(0)}, "", old); err != nil {
			t.Fatal(err)
		}
	} else { // a base backend: the same back-dated rows, appended
		mustCreate(t, st, store.NewSession{ID: "imported", Source: "cli", StartedAt: at(0)})
		mustAppend(t, st, "imported", old...)
	}
	imported := mustConversation(t, st, "imported", store.ViewActive)
	newest := []int64{imported[1].ID, live[1], live[0], imported[0].ID}
	oldest := slices.Clone(newest)
	slices.Reverse(oldest)
	for _, text := range []string{"deploy", "会话数据库", "会话", "deploy OR nothing", "会话数据库 NOT nothing"} {
		if got := searchIDs(t, st, store.SearchQuery{Text: text, Sort: store.SortNewest, NoContext: true}); !slices.Equal(got, newest) {
			t.Errorf("search %q newest = %v, want %v", text, got, newest)
		}
		if got := searchIDs(t, st, store.SearchQuery{Text: text, Sort: store.SortOldest, NoContext: true}); !slices.Equal(got, oldest) {
			t.Errorf("search %q oldest = %v, want %v", text, got, oldest)
		}
	}
	if got := searchIDs(t, st, store.SearchQuery{Text: "deploy", Sort: store.SortNewest, Limit: 2, Offset: 1, NoContext: true}); !slices.Equal(got, newest[1:3]) {
		t.Errorf("second page newest = %v, want %v", got, newest[1:3])
	}
}

// testSearchHitFields: hits carry the tool name and say whether they are a compaction summary.
func testSearchHitFields(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "hf"})
	mustAppend(t, st, "hf",
		user("please grep for zanzibar"),
		callingAssistant("", toolCall("c1", "grep", `{"pattern":"zanzibar","path":"src/"}`)),
		toolResult("c1", "grep", "src/a.go:3: zanzibar found"),
	)
	if _, err := Compact(bg, st, store.CompactRequest{SessionID: "hf", Messages: []store.Message{
		{Role: store.RoleUser, Content: "[CONTEXT COMPACTION] the user looked for zanzibar", Summary: true},
	}}); err != nil {
		t.Fatal(err)
	}
	hits, err := st.Search(bg, store.SearchQuery{Text: "zanzibar", Sort: store.SortOldest, NoContext: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 4 {
		t.Fatalf("hits = %+v, want the ask, the call, the result and the summary", hits)
	}
	if hits[2].Role != store.RoleTool || hits[2].ToolName != "grep" {
		t.Errorf("tool hit without its tool name: %+v", hits[2])
	}
	for i, h := range hits {
		if h.Summary != (i == 3) {
			t.Errorf("hit %d (%s %q): Summary = %v", i, h.Role, h.Snippet, h.Summary)
		}
		if i < 3 && (h.Active || !h.Compacted) {
			t.Errorf("hit %d is not marked archived: %+v", i, h)
		}
	}
}

// testSearchToolCallEnvelope: a tool call is found by its tool name and argument values, not by
// the JSON around them.
func testSearchToolCallEnvelope(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "env"})
	mustAppend(t, st, "env",
		callingAssistant("", toolCall("call_abc123", "read_file", `{"path":"src/main.go","limit":500}`)),
		callingAssistant("", toolCall("call_def456", "terminal", `not json at all: quokka`)),
		assistant("this message mentions the function keyword"),
	)
	for _, c := range []struct {
		q    string
		want int
	}{
		{"function", 1},    // only the message that says it
		{"arguments", 0},   // a key of the envelope
		{"path", 0},        // a key of the arguments
		{"call_abc123", 0}, // call ids are bookkeeping
		{"type", 0},
		{"read_file", 1}, // the tool name
		{"src/main.go", 1},
		{"500", 1},
		{"quokka", 1}, // arguments that are not JSON are indexed as they are
		{"terminal", 1},
	} {
		if got := searchIDs(t, st, store.SearchQuery{Text: c.q, NoContext: true}); len(got) != c.want {
			t.Errorf("search %q: %d hits, want %d", c.q, len(got), c.want)
		}
	}
	hits, err := st.Search(bg, store.SearchQuery{Text: "src/main.go", NoContext: true})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search src/main.go: %v %+v", err, hits)
	}
	if s := hits[0].Snippet; strings.Contains(s, "{") || !strings.Contains(s, ">>>") {
		t.Errorf("tool call snippet shows the envelope or no match: %q", s)
	}
}

// testCompactionCopies: a message a compaction carried over verbatim is one search hit (the
// original, its copies listed) and one row of the display view (the newest copy), through
// several compactions, while identical but distinct messages all stay.
func testCompactionCopies(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "cp"})
	ts := at(50)
	stamp := func(m store.Message) store.Message { m.Timestamp = ts; return m }
	mustAppend(t, st, "cp",
		stamp(user("the database listens on port 5433")),
		stamp(user("ok")), stamp(user("ok")), // said twice: two messages
		stamp(assistant("noted the port")),
		stamp(user("more work")),
	)
	for gen := 1; gen <= 3; gen++ {
		active := mustConversation(t, st, "cp", store.ViewActive)
		// The head (the first four rows) carried verbatim, then a summary.
		msgs := append(slices.Clone(active[:4]), store.Message{Role: store.RoleUser, Summary: true,
			Content: "[CONTEXT COMPACTION] port 5433 was mentioned", Timestamp: at(100 + gen)})
		if _, err := Compact(bg, st, store.CompactRequest{SessionID: "cp", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	display := mustConversation(t, st, "cp", store.ViewDisplay)
	var got []string
	for _, m := range display {
		got = append(got, m.Content)
	}
	want := []string{"more work",
		"[CONTEXT COMPACTION] port 5433 was mentioned", "[CONTEXT COMPACTION] port 5433 was mentioned",
		"the database listens on port 5433", "ok", "ok", "noted the port",
		"[CONTEXT COMPACTION] port 5433 was mentioned"}
	if !equalStrings(got, want) {
		t.Fatalf("display view = %q\nwant %q", got, want)
	}
	for _, m := range display[3:] {
		if !m.Active {
			t.Errorf("display shows row %d %q archived; its newest copy is active", m.ID, m.Content)
		}
	}
	hits, err := st.Search(bg, store.SearchQuery{Text: "5433", Sort: store.SortOldest, NoContext: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 4 {
		t.Fatalf("search 5433 = %d hits %+v, want the original once and three summaries", len(hits), hits)
	}
	orig := hits[0]
	if orig.Summary || orig.Active || len(orig.Copies) != 3 || !orig.Copies[2].Active || orig.Copies[0].Active {
		t.Fatalf("original hit: %+v", orig)
	}
	if last := orig.Copies[2].MessageID; last != display[3].ID {
		t.Errorf("newest copy %d is not the row the display view shows (%d)", last, display[3].ID)
	}
	for _, h := range hits[1:] {
		if !h.Summary {
			t.Errorf("summary hit not labelled: %+v", h)
		}
	}
	okHits := searchIDs(t, st, store.SearchQuery{Text: "ok", NoContext: true})
	if len(okHits) != 2 {
		t.Errorf(`search "ok" = %v, want the two original messages`, okHits)
	}
	// Export and import keep what the display view shows.
	var exported []store.Message
	for _, m := range mustConversation(t, st, "cp", store.ViewAll) {
		exported = append(exported, m)
	}
	if err := st.ImportSession(bg, store.Session{ID: "cp-imported", Source: "cli", StartedAt: at(0)}, "", exported); err != nil {
		t.Fatal(err)
	}
	if again := contents(mustConversation(t, st, "cp-imported", store.ViewDisplay)); !equalStrings(again, want) {
		t.Errorf("imported display view = %q\nwant %q", again, want)
	}
	expectHealthy(t, st)
}

// testDisplayKeepsIdenticalMessages: the display view never folds distinct rows that look alike.
func testDisplayKeepsIdenticalMessages(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "dup"})
	ts := at(7)
	for range 50 {
		mustAppend(t, st, "dup", store.Message{Role: store.RoleUser, Content: "ok", Timestamp: ts},
			store.Message{Role: store.RoleUser, Content: "ok", Timestamp: ts})
	}
	if n := len(mustConversation(t, st, "dup", store.ViewDisplay)); n != 100 {
		t.Fatalf("display view shows %d of 100 rows", n)
	}
	// Archived by a compaction that copies nothing verbatim: still every row.
	cp, ok := also[CompactStore](st)
	if !ok {
		return
	}
	if _, err := Compact(bg, cp, store.CompactRequest{SessionID: "dup", Messages: []store.Message{
		{Role: store.RoleUser, Content: "[CONTEXT COMPACTION] ok x100", Summary: true}}}); err != nil {
		t.Fatal(err)
	}
	if n := len(mustConversation(t, st, "dup", store.ViewDisplay)); n != 101 {
		t.Fatalf("display view after compaction shows %d of 101 rows", n)
	}
	expectHealthy(t, st)
}

// testStatsAddUp: the message breakdown covers every row.
func testStatsAddUp(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "st", Source: "cli"})
	mustCreate(t, st, store.NewSession{ID: "st2", Source: "telegram"})
	seedTurns(t, st, "st", 3)
	mustAppend(t, st, "st2", user("hi"))
	if _, err := Undo(bg, st, "st"); err != nil { // 4 superseded
		t.Fatal(err)
	}
	active := mustConversation(t, st, "st", store.ViewActive)
	if _, err := Compact(bg, st, store.CompactRequest{SessionID: "st", TailCount: 2,
		Messages: append([]store.Message{{Role: store.RoleUser, Content: "summary", Summary: true}}, active[len(active)-2:]...)}); err != nil {
		t.Fatal(err)
	}
	s, err := st.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	if s.ActiveMessages+s.ArchivedMessages+s.SupersededMessages != s.Messages || s.SupersededMessages != 6 {
		t.Fatalf("stats do not add up: %d messages = %d active + %d archived + %d superseded (want 6 superseded)",
			s.Messages, s.ActiveMessages, s.ArchivedMessages, s.SupersededMessages)
	}
	sum := 0
	for _, n := range s.BySource {
		sum += n
	}
	if sum != s.Sessions {
		t.Fatalf("sessions by source add up to %d of %d", sum, s.Sessions)
	}
}

// testPruneByActivity: prune goes by last activity, so sessions that never ended (every CLI
// session) can be pruned; a conversation in use is kept.
func testPruneByActivity(t *testing.T, h Harness) {
	st, _ := h.open(t)
	old := time.Now().Add(-40 * 24 * time.Hour)
	msg := func(text string, when time.Time) store.Message {
		return store.Message{Role: store.RoleUser, Content: text, Timestamp: when}
	}
	mustCreate(t, st, store.NewSession{ID: "idle-open", StartedAt: old})
	mustAppend(t, st, "idle-open", msg("long ago", old.Add(time.Hour)))
	mustCreate(t, st, store.NewSession{ID: "old-but-busy", StartedAt: old})
	mustAppend(t, st, "old-but-busy", msg("today", time.Now()))
	mustCreate(t, st, store.NewSession{ID: "leased", StartedAt: old})
	mustAppend(t, st, "leased", msg("long ago", old.Add(time.Hour)))
	if _, err := st.AcquireLease(bg, "leased", "holder-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	// A compression chain whose root is idle but whose tip is not stays whole.
	mustCreate(t, st, store.NewSession{ID: "chain-root", StartedAt: old})
	mustAppend(t, st, "chain-root", msg("long ago", old.Add(time.Hour)))
	if _, err := Rotate(bg, st, store.RotateRequest{ParentID: "chain-root",
		Messages: []store.Message{msg("carried", old.Add(2*time.Hour))}, Child: store.NewSession{ID: "chain-tip", StartedAt: old}}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, "chain-tip", msg("today", time.Now()))

	n, err := st.Prune(bg, time.Now().Add(-30*24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("prune = %d, %v; want 1 (idle-open)", n, err)
	}
	_, err = st.GetSession(bg, "idle-open")
	wantErr(t, err, store.ErrNotFound, "pruned open session")
	for _, id := range []string{"old-but-busy", "leased", "chain-root", "chain-tip"} {
		mustSession(t, st, id)
	}
	expectHealthy(t, st)
}

// testRotateEndedParent: an automatic end stamp does not block a continuation; a deliberate one
// does, with an error that names it.
func testRotateEndedParent(t *testing.T, h Harness) {
	st, _ := h.open(t)
	rotate := func(parent, child string) (store.Session, error) {
		return Rotate(bg, st, store.RotateRequest{ParentID: parent, Messages: []store.Message{user("carried")},
			Child: store.NewSession{ID: child}})
	}
	for i, reason := range []string{store.EndUserExit, store.EndProcessExit, store.EndIdle} {
		p := sid("auto", i)
		mustCreate(t, st, store.NewSession{ID: p})
		mustAppend(t, st, p, user("hello"))
		if err := st.EndSession(bg, p, reason); err != nil {
			t.Fatal(err)
		}
		if _, err := rotate(p, p+"-next"); err != nil {
			t.Fatalf("rotate a session ended with %q: %v", reason, err)
		}
		if s := mustSession(t, st, p); s.EndReason != store.EndCompression {
			t.Fatalf("parent ended with %q, after rotation: %q", reason, s.EndReason)
		}
	}
	for i, reason := range []string{store.EndReset, store.EndNewSession} {
		p := sid("deliberate", i)
		mustCreate(t, st, store.NewSession{ID: p})
		mustAppend(t, st, p, user("hello"))
		if err := st.EndSession(bg, p, reason); err != nil {
			t.Fatal(err)
		}
		_, err := rotate(p, p+"-next")
		wantErr(t, err, store.ErrSessionEnded, "rotate a session ended with "+reason)
		if errors.Is(err, store.ErrSessionClosed) || strings.Contains(err.Error(), "compression") || !strings.Contains(err.Error(), reason) {
			t.Fatalf("misleading error for a %q end: %v", reason, err)
		}
		if _, err := st.GetSession(bg, p+"-next"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("refused rotation created its child: %v", err)
		}
	}
	if !store.AutomaticEnd(store.EndIdle) || store.AutomaticEnd(store.EndReset) || store.AutomaticEnd("anything else") {
		t.Fatal("AutomaticEnd classifies wrongly")
	}
}
