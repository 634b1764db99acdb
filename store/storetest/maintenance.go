package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

func testDelete(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "d0"})
	if _, err := st.SetSystemPrompt(bg, "d0", "only d0 uses this"); err != nil {
		t.Fatal(err)
	}
	seedTurns(t, st, "d0", 1)
	mustCreate(t, st, store.NewSession{ID: "d-branch", ParentID: "d0", Relation: store.RelationBranch})
	mustCreate(t, st, store.NewSession{ID: "d-delegate", ParentID: "d0", Relation: store.RelationDelegate})
	mustAppend(t, st, "d-delegate", user("delegate work"))
	if _, err := Rotate(bg, st, store.RotateRequest{ParentID: "d0", Messages: []store.Message{user("cont")},
		Child: store.NewSession{ID: "d1"}}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, store.NewSession{ID: "d2", ParentID: "d1", Relation: store.RelationCompression})

	if err := st.DeleteSession(bg, "d0"); err != nil {
		t.Fatal(err)
	}
	_, err := st.GetSession(bg, "d0")
	wantErr(t, err, store.ErrNotFound, "deleted session")
	_, err = st.GetSession(bg, "d-delegate")
	wantErr(t, err, store.ErrNotFound, "delegate child of a deleted session")
	if b := mustSession(t, st, "d-branch"); b.ParentID != "" {
		t.Fatalf("branch child not orphaned: %+v", b)
	}
	// The continuation now heads what is left of the chain.
	for _, id := range []string{"d1", "d2"} {
		if root, _ := st.Root(bg, id); root != "d1" {
			t.Fatalf("root of %s after deleting the chain root = %q", id, root)
		}
	}
	if hits, _ := st.Search(bg, store.SearchQuery{Text: "delegate"}); len(hits) != 0 {
		t.Fatalf("messages of deleted sessions still searchable: %+v", hits)
	}
	// The continuation inherited the prompt, so it stays until its last user goes.
	if stats, _ := st.Stats(bg); stats.SystemPrompts != 1 {
		t.Fatalf("prompt still used by d1 was dropped: %d", stats.SystemPrompts)
	}
	for _, id := range []string{"d2", "d1"} {
		if err := st.DeleteSession(bg, id); err != nil {
			t.Fatal(err)
		}
	}
	if stats, _ := st.Stats(bg); stats.SystemPrompts != 0 {
		t.Fatalf("unreferenced prompt kept: %d", stats.SystemPrompts)
	}
	wantErr(t, st.DeleteSession(bg, "d0"), store.ErrNotFound, "delete twice")

	// A session whose conversation a live turn holds is not deleted (a continuation included);
	// once the lease is released, it is.
	mustCreate(t, st, store.NewSession{ID: "busy"})
	mustAppend(t, st, "busy", user("working"))
	mustCreate(t, st, store.NewSession{ID: "busy-cont", ParentID: "busy", Relation: store.RelationCompression})
	l, err := st.AcquireLease(bg, "busy", "other-host/4242/turn", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"busy", "busy-cont"} {
		wantErr(t, st.DeleteSession(bg, id), store.ErrLeaseHeld, "delete under a running turn")
		if _, err := st.GetSession(bg, id); err != nil {
			t.Fatalf("a refused delete removed %s: %v", id, err)
		}
	}
	if err := st.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSession(bg, "busy-cont"); err != nil {
		t.Fatalf("delete after the turn ended: %v", err)
	}
	expectHealthy(t, st)
}

func testPrune(t *testing.T, h Harness) {
	st, _ := h.open(t)
	old := time.Now().Add(-40 * 24 * time.Hour)
	mustCreate(t, st, store.NewSession{ID: "old-ended", StartedAt: old})
	mustCreate(t, st, store.NewSession{ID: "old-open", StartedAt: old})
	mustCreate(t, st, store.NewSession{ID: "new-ended"})
	for _, id := range []string{"old-ended", "old-open"} {
		mustAppend(t, st, id, store.Message{Role: store.RoleUser, Content: "hello " + id, Timestamp: old.Add(time.Minute)})
	}
	mustAppend(t, st, "new-ended", user("hello new-ended"))
	for _, id := range []string{"old-ended", "new-ended"} {
		if err := st.EndSession(bg, id, store.EndUserExit); err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.Prune(bg, time.Now().Add(-30*24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("prune = %d, %v; want 2", n, err)
	}
	_, err = st.GetSession(bg, "old-ended")
	wantErr(t, err, store.ErrNotFound, "pruned session")
	// A session that never ended (every CLI session) is pruned by its last activity.
	_, err = st.GetSession(bg, "old-open")
	wantErr(t, err, store.ErrNotFound, "pruned open session")
	mustSession(t, st, "new-ended")
	expectHealthy(t, st)
}

func testImport(t *testing.T, h Harness) {
	src, _ := h.open(t)
	mustCreate(t, src, store.NewSession{ID: "i0", Title: "Imported", Source: "api", Model: "m", ModelConfig: json.RawMessage(`{"x":1}`),
		StartedAt: at(0), Cwd: "/p"})
	if _, err := src.SetSystemPrompt(bg, "i0", "the prompt"); err != nil {
		t.Fatal(err)
	}
	seedTurns(t, src, "i0", 20) // more rows than one bulk insert carries
	if _, err := Compact(bg, src, store.CompactRequest{SessionID: "i0",
		Messages: []store.Message{user("ask A"), {Role: store.RoleAssistant, Content: "sum", Summary: true}}}); err != nil {
		t.Fatal(err)
	}
	if err := src.RecordRequest(bg, "i0", store.RequestRecord{Usage: store.Usage{InputTokens: 5, APICalls: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := src.EndSession(bg, "i0", store.EndUserExit); err != nil {
		t.Fatal(err)
	}
	s := mustSession(t, src, "i0")
	prompt, _ := src.SystemPrompt(bg, "i0")
	all := mustConversation(t, src, "i0", store.ViewAll)

	dst, _ := h.open(t)
	if err := dst.ImportSession(bg, s, prompt, all); err != nil {
		t.Fatal(err)
	}
	got := mustSession(t, dst, "i0")
	if got.Title != s.Title || got.Source != s.Source || string(got.ModelConfig) != string(s.ModelConfig) ||
		!got.StartedAt.Equal(s.StartedAt) || !got.EndedAt.Equal(s.EndedAt) || got.EndReason != s.EndReason ||
		got.Usage != s.Usage || got.MessageCount != s.MessageCount || got.ToolCallCount != s.ToolCallCount ||
		got.SystemPromptHash != s.SystemPromptHash || got.Cwd != "/p" {
		t.Fatalf("imported session differs:\n got %+v\nwant %+v", got, s)
	}
	back := mustConversation(t, dst, "i0", store.ViewAll)
	if len(back) != len(all) {
		t.Fatalf("imported %d rows, want %d", len(back), len(all))
	}
	for i := range all {
		a, b := all[i], back[i]
		a.ID, b.ID = 0, 0
		if !reflect.DeepEqual(normalize(a), normalize(b)) {
			t.Fatalf("row %d differs:\n got %+v\nwant %+v", i, b, a)
		}
	}
	err := dst.ImportSession(bg, s, prompt, all)
	wantErr(t, err, store.ErrExists, "import over an existing id")
	if n := len(mustConversation(t, dst, "i0", store.ViewAll)); n != len(all) {
		t.Fatalf("refused import changed rows: %d", n)
	}
	// A clashing title is numbered, not refused; a bad message refuses the whole session.
	s2 := s
	s2.ID = "i1"
	if err := dst.ImportSession(bg, s2, "", all[:1]); err != nil {
		t.Fatal(err)
	}
	if title := mustSession(t, dst, "i1").Title; title != "Imported #2" {
		t.Fatalf("clashing import title = %q", title)
	}
	s3 := s
	s3.ID, s3.Title = "i2", ""
	err = dst.ImportSession(bg, s3, "", []store.Message{user("ok"), {Role: "bogus"}})
	wantErr(t, err, store.ErrInvalid, "import with a bad message")
	_, err = dst.GetSession(bg, "i2")
	wantErr(t, err, store.ErrNotFound, "half-imported session")
}

func testStatsAndCheck(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "a", Source: "cli"})
	mustCreate(t, st, store.NewSession{ID: "b", Source: "api"})
	seedTurns(t, st, "a", 2)
	if _, err := Compact(bg, st, store.CompactRequest{SessionID: "a", Messages: []store.Message{user("x")}}); err != nil {
		t.Fatal(err)
	}
	if err := st.EndSession(bg, "b", "done"); err != nil {
		t.Fatal(err)
	}
	stats, err := st.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sessions != 2 || stats.OpenSessions != 1 || stats.Messages != 9 || stats.ActiveMessages != 1 ||
		stats.ArchivedMessages != 8 || stats.BySource["cli"] != 1 || stats.BySource["api"] != 1 || stats.Bytes <= 0 {
		t.Fatalf("stats = %+v", stats)
	}
	expectHealthy(t, st)
}

func testCompressionLocks(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "cl"})
	ok, err := st.AcquireCompressionLock(bg, "cl", "a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("first acquire: %v %v", ok, err)
	}
	if ok, _ := st.AcquireCompressionLock(bg, "cl", "b", time.Minute); ok {
		t.Fatal("second holder got a live lock")
	}
	if ok, _ := st.RefreshCompressionLock(bg, "cl", "b", time.Minute); ok {
		t.Fatal("a foreign holder refreshed the lock")
	}
	if err := st.ReleaseCompressionLock(bg, "cl", "b"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.AcquireCompressionLock(bg, "cl", "b", time.Minute); ok {
		t.Fatal("a foreign release freed the lock")
	}
	// An expired lock may be refreshed by its owner (no self-deadlock) ...
	if ok, _ := st.AcquireCompressionLock(bg, "cl", "a", 100*time.Millisecond); !ok {
		t.Fatal("re-acquire own lock")
	}
	time.Sleep(150 * time.Millisecond)
	if ok, _ := st.RefreshCompressionLock(bg, "cl", "a", time.Minute); !ok {
		t.Fatal("owner could not revive its expired, unclaimed lock")
	}
	// ... and reclaimed by anyone else once expired.
	if ok, _ := st.AcquireCompressionLock(bg, "cl", "a", 100*time.Millisecond); !ok {
		t.Fatal("shorten own lock")
	}
	time.Sleep(150 * time.Millisecond)
	if ok, _ := st.AcquireCompressionLock(bg, "cl", "b", time.Minute); !ok {
		t.Fatal("expired lock was not reclaimed")
	}
	if err := st.ReleaseCompressionLock(bg, "cl", "b"); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseCompressionLock(bg, "cl", "b"); err != nil {
		t.Fatalf("release is idempotent: %v", err)
	}
	// A holder that is provably dead on this host is reclaimed before its TTL.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("cannot run a short-lived process to get a dead pid: %v", err)
	}
	deadHolder := store.NewHolder()
	deadHolder.PID, deadHolder.Start = dead.Process.Pid, ""
	if ok, _ := st.AcquireCompressionLock(bg, "cl", deadHolder.String(), time.Hour); !ok {
		t.Fatal("acquire as the soon-dead holder")
	}
	if ok, _ := st.AcquireCompressionLock(bg, "cl", "c", time.Minute); !ok {
		t.Fatalf("lock of dead holder %s was not reclaimed", deadHolder)
	}
	// An unstructured or live holder waits for its TTL.
	if ok, _ := st.AcquireCompressionLock(bg, "cl", "d", time.Minute); ok {
		t.Fatal("live holder's lock was taken")
	}
	_, err = st.AcquireCompressionLock(bg, "cl", "", time.Minute)
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty holder: %v", err)
	}
}

func testConcurrentGoroutines(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "g"})
	const workers, per = 8, 25
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < per; i++ {
				m := callingAssistant(fmt.Sprintf("w%d-%d", w, i), toolCall(fmt.Sprintf("c%d-%d", w, i), "t", "{}"))
				if _, err := st.Append(bg, "g", m); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ms := mustConversation(t, st, "g", store.ViewActive)
	if len(ms) != workers*per {
		t.Fatalf("%d messages, want %d", len(ms), workers*per)
	}
	// Each writer's messages keep their order.
	next := map[int]int{}
	for _, m := range ms {
		var w, i int
		fmt.Sscanf(m.Content, "w%d-%d", &w, &i)
		if i != next[w] {
			t.Fatalf("writer %d: message %d out of order (expected %d)", w, i, next[w])
		}
		next[w]++
	}
	expectCounts(t, st, "g", workers*per, workers*per)
}
