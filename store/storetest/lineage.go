package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// seedTurns appends n user/assistant exchanges, the second of each with a tool call and result.
func seedTurns(t *testing.T, st store.Transcript, sid string, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := 0; i < n; i++ {
		cid := sid + "-call-" + string(rune('a'+i))
		ids = append(ids, mustAppend(t, st, sid,
			user("ask "+string(rune('A'+i))),
			callingAssistant("calling", toolCall(cid, "terminal", `{"cmd":"ls"}`)),
			toolResult(cid, "terminal", "result "+string(rune('A'+i))),
			assistant("answer "+string(rune('A'+i))),
		)...)
	}
	return ids
}

func testCompactInPlace(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "c", ModelConfig: json.RawMessage(`{"keep":1,"drop":2}`)})
	ids := seedTurns(t, st, "c", 3) // 12 messages
	watermark := ids[len(ids)-1]
	// Appended while the summary was being written: must follow the compacted set.
	late := mustAppend(t, st, "c", user("late question"))

	old := mustConversation(t, st, "c", store.ViewActive)
	summary := store.Message{Role: store.RoleUser, Content: "[CONTEXT COMPACTION] summary of asks A and B", Summary: true}
	compacted := append([]store.Message{old[0], summary}, old[8:12]...) // head, summary, tail carried verbatim
	n, err := Compact(bg, st, store.CompactRequest{SessionID: "c", Messages: compacted, Watermark: watermark,
		TailCount: 4, ModelConfigPatch: map[string]json.RawMessage{"drop": json.RawMessage("null"), "compactions": json.RawMessage("1")}})
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Fatalf("active count = %d, want 7", n)
	}
	active := mustConversation(t, st, "c", store.ViewActive)
	want := []string{"ask A", summary.Content, "ask C", "calling", "result C", "answer C", "late question"}
	if got := contents(active); !equalStrings(got, want) {
		t.Fatalf("active after compaction = %q, want %q", got, want)
	}
	if !active[1].Summary || active[6].ID <= active[5].ID || active[6].ID == late[0] {
		t.Fatalf("summary flag or carried-over row wrong: %+v", active)
	}
	expectCounts(t, st, "c", 7, 1)
	if s := mustSession(t, st, "c"); string(s.ModelConfig) != `{"compactions":1,"keep":1}` {
		t.Fatalf("model_config patch = %s", s.ModelConfig)
	}
	// Display: archived rows plus the live ones, each message once.
	display := contents(mustConversation(t, st, "c", store.ViewDisplay))
	wantDisplay := []string{"calling", "result A", "answer A", "ask B", "calling", "result B", "answer B",
		"ask A", summary.Content, "ask C", "calling", "result C", "answer C", "late question"}
	if !equalStrings(display, wantDisplay) {
		t.Fatalf("display view = %q\nwant %q", display, wantDisplay)
	}
	if all := mustConversation(t, st, "c", store.ViewAll); len(all) != 13+7 {
		t.Fatalf("all view has %d rows, want 20", len(all))
	}
	// Archived rows stay searchable; superseded duplicates do not show.
	hits, err := st.Search(bg, store.SearchQuery{Text: "result"})
	if err != nil {
		t.Fatal(err)
	}
	for _, hit := range hits {
		if !hit.Active && !hit.Compacted {
			t.Fatalf("superseded row %d returned by search", hit.MessageID)
		}
	}
	if len(hits) != 3 {
		t.Fatalf("search after compaction found %d results, want 3 (A, B archived; C live): %+v", len(hits), hits)
	}
	// Re-compaction works on the new active set.
	if _, err := Compact(bg, st, store.CompactRequest{SessionID: "c", Messages: []store.Message{user("only")}}); err != nil {
		t.Fatal(err)
	}
	if got := contents(mustConversation(t, st, "c", store.ViewActive)); !equalStrings(got, []string{"only"}) {
		t.Fatalf("second compaction left %q", got)
	}
	_, err = Compact(bg, st, store.CompactRequest{SessionID: "c"})
	wantErr(t, err, store.ErrInvalid, "empty compaction")
	_, err = Compact(bg, st, store.CompactRequest{SessionID: "missing", Messages: []store.Message{user("x")}})
	wantErr(t, err, store.ErrNotFound, "compact missing session")
	expectHealthy(t, st)
}

func testCompactFenced(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "f"})
	seedTurns(t, st, "f", 2)
	before := mustConversation(t, st, "f", store.ViewAll)
	ok, err := st.AcquireCompressionLock(bg, "f", "holder-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	req := store.CompactRequest{SessionID: "f", Messages: []store.Message{user("summary")}, LockHolder: "holder-b"}
	_, err = Compact(bg, st, req)
	wantErr(t, err, store.ErrCompressionBusy, "compact with a foreign holder")
	if after := mustConversation(t, st, "f", store.ViewAll); len(after) != len(before) {
		t.Fatalf("refused compaction wrote rows: %d -> %d", len(before), len(after))
	}
	req.LockHolder = "holder-a"
	if _, err := Compact(bg, st, req); err != nil {
		t.Fatalf("compact with the lock: %v", err)
	}
	if err := st.ReleaseCompressionLock(bg, "f", "holder-a"); err != nil {
		t.Fatal(err)
	}
	_, err = Compact(bg, st, req)
	wantErr(t, err, store.ErrCompressionBusy, "compact after release")
}

func testRotate(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "r0", Title: "Refactor", Source: "telegram", UserID: "u", StartedAt: at(0)})
	if _, err := st.SetSystemPrompt(bg, "r0", "prompt"); err != nil {
		t.Fatal(err)
	}
	ids := seedTurns(t, st, "r0", 2)
	mustAppend(t, st, "r0", user("late"))
	child, err := Rotate(bg, st, store.RotateRequest{ParentID: "r0", Watermark: ids[len(ids)-1],
		Messages: []store.Message{user("ask A"), {Role: store.RoleAssistant, Content: "summary", Summary: true}},
		Child:    store.NewSession{ID: "r1", StartedAt: at(100)}})
	if err != nil {
		t.Fatal(err)
	}
	if child.ParentID != "r0" || child.Relation != store.RelationCompression || child.Title != "Refactor #2" ||
		child.Source != "telegram" || child.UserID != "u" || child.MessageCount != 3 || child.SystemPromptHash == "" {
		t.Fatalf("continuation: %+v", child)
	}
	if got := contents(mustConversation(t, st, "r1", store.ViewActive)); !equalStrings(got, []string{"ask A", "summary", "late"}) {
		t.Fatalf("continuation history = %q", got)
	}
	parent := mustSession(t, st, "r0")
	if parent.EndReason != store.EndCompression || !parent.Ended() {
		t.Fatalf("parent not ended by compression: %+v", parent)
	}
	if n := len(mustConversation(t, st, "r0", store.ViewActive)); n != 9 {
		t.Fatalf("parent keeps its rows for lineage: got %d active, want 9", n)
	}
	_, err = st.Append(bg, "r0", user("too late"))
	wantErr(t, err, store.ErrSessionClosed, "append to a rotated parent")
	if _, err := st.Append(bg, "r0", user("repair"), store.AllowClosed()); err != nil {
		t.Fatalf("AllowClosed append: %v", err)
	}
	_, err = Rotate(bg, st, store.RotateRequest{ParentID: "r0", Messages: []store.Message{user("x")}})
	wantErr(t, err, store.ErrSessionClosed, "rotate an ended session")

	// A second rotation; the chain reads root to tip.
	if _, err := Rotate(bg, st, store.RotateRequest{ParentID: "r1", Messages: []store.Message{user("again")},
		Child: store.NewSession{ID: "r2", StartedAt: at(200)}}); err != nil {
		t.Fatal(err)
	}
	chain, err := st.Chain(bg, "r1")
	if err != nil {
		t.Fatal(err)
	}
	var chainIDs []string
	for _, s := range chain {
		chainIDs = append(chainIDs, s.ID)
	}
	if !equalStrings(chainIDs, []string{"r0", "r1", "r2"}) {
		t.Fatalf("chain = %v", chainIDs)
	}
	for _, id := range []string{"r0", "r1", "r2"} {
		if root, err := st.Root(bg, id); err != nil || root != "r0" {
			t.Fatalf("root of %s = %q, %v", id, root, err)
		}
		if tip, err := st.ResumeTarget(bg, id); err != nil || tip != "r2" {
			t.Fatalf("resume target of %s = %q, %v", id, tip, err)
		}
	}
	if s, err := st.ResolveSession(bg, "Refactor"); err != nil || s.ID != "r2" {
		t.Fatalf("title resolves to newest continuation: %q %v", s.ID, err)
	}
	// The chain lists as one logical session.
	list, err := st.ListSessions(bg, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "r0" || list[0].TipID != "r2" {
		t.Fatalf("listing of a chain: %+v", list)
	}
	all, _ := st.ListSessions(bg, store.ListOptions{IncludeChildren: true})
	if len(all) != 3 {
		t.Fatalf("listing with children: %d rows", len(all))
	}
	// The title moves along the chain rather than being refused.
	if err := st.SetTitle(bg, "r2", "Refactor"); err != nil {
		t.Fatalf("moving a title along its chain: %v", err)
	}
	if mustSession(t, st, "r0").Title != "" || mustSession(t, st, "r2").Title != "Refactor" {
		t.Fatal("title did not move to the tip")
	}
}

func testBranch(t *testing.T, h BaseHarness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "main", Model: "m"})
	if _, err := st.SetSystemPrompt(bg, "main", "P"); err != nil {
		t.Fatal(err)
	}
	seedTurns(t, st, "main", 2)
	b, err := st.Branch(bg, "main", store.NewSession{ID: "alt", Title: "try another way"})
	if err != nil {
		t.Fatal(err)
	}
	if b.ParentID != "main" || b.Relation != store.RelationBranch || b.MessageCount != 8 || b.ToolCallCount != 2 || b.Model != "m" {
		t.Fatalf("branch: %+v", b)
	}
	if p, _ := st.SystemPrompt(bg, "alt"); p != "P" {
		t.Fatalf("branch prompt = %q", p)
	}
	src := mustConversation(t, st, "main", store.ViewActive)
	dst := mustConversation(t, st, "alt", store.ViewActive)
	for i := range src {
		a, b := src[i], dst[i]
		a.ID, a.SessionID, b.ID, b.SessionID = 0, "", 0, ""
		if !equalMessages(a, b) {
			t.Fatalf("branch message %d differs: %+v vs %+v", i, a, b)
		}
	}
	mustAppend(t, st, "alt", user("only on the branch"))
	mustAppend(t, st, "main", user("only on main"))
	if n := len(mustConversation(t, st, "main", store.ViewActive)); n != 9 {
		t.Fatalf("parent changed by branch: %d", n)
	}
	if root, _ := st.Root(bg, "alt"); root != "alt" {
		t.Fatalf("a branch is its own conversation root, got %q", root)
	}
	if kids, err := st.Children(bg, "main"); err != nil || len(kids) != 1 || kids[0].ID != "alt" {
		t.Fatalf("children = %+v, %v", kids, err)
	}
	_, err = st.Branch(bg, "missing", store.NewSession{})
	wantErr(t, err, store.ErrNotFound, "branch of missing")
	_, err = st.Branch(bg, "main", store.NewSession{ID: "alt"})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("branch onto an existing id: %v", err)
	}
}

func equalMessages(a, b store.Message) bool {
	ja, _ := json.Marshal(normalize(a))
	jb, _ := json.Marshal(normalize(b))
	return string(ja) == string(jb)
}

// testChainActivity: a compression chain lists by its newest message, whether the continuation
// was made by a rotation or imported.
func testChainActivity(t *testing.T, h Harness) {
	st, _ := h.open(t)
	t0 := time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC)
	mustCreate(t, st, store.NewSession{ID: "ca0", StartedAt: t0})
	mustAppend(t, st, "ca0", store.Message{Role: store.RoleUser, Content: "first", Timestamp: t0.Add(time.Minute)})
	tip := t0.Add(3 * time.Hour)
	if _, err := Rotate(bg, st, store.RotateRequest{ParentID: "ca0", Child: store.NewSession{ID: "ca1", StartedAt: tip.Add(-time.Minute)},
		Messages: []store.Message{{Role: store.RoleUser, Content: "[summary]", Summary: true, Timestamp: tip}}}); err != nil {
		t.Fatal(err)
	}
	lastActive := func(st store.Backend, id string) time.Time {
		t.Helper()
		ls, err := st.ListSessions(bg, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if l.ID == id {
				return l.LastActive
			}
		}
		t.Fatalf("%s not listed", id)
		return time.Time{}
	}
	if got := lastActive(st, "ca0"); !got.Equal(tip) {
		t.Fatalf("rotated chain lists at %v, want its tip's message at %v", got, tip)
	}
	// The same chain imported session by session, parent first.
	dst, _ := h.open(t)
	for _, id := range []string{"ca0", "ca1"} {
		s := mustSession(t, st, id)
		if err := dst.ImportSession(bg, s, "", mustConversation(t, st, id, store.ViewAll)); err != nil {
			t.Fatal(err)
		}
	}
	if got := lastActive(dst, "ca0"); !got.Equal(tip) {
		t.Fatalf("imported chain lists at %v, want %v", got, tip)
	}
}
