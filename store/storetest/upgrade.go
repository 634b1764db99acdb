package storetest

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// UpgradeFixture is the manifest of a database written by an earlier release (see
// store/testdata/v0.1.0/gen): what it holds, for CheckUpgraded to find.
type UpgradeFixture struct {
	Release      string            `json:"release"`
	Backend      string            `json:"backend"`
	Responses    map[string]string `json:"responses"` // response id → session
	Latest       string            `json:"latest"`
	Branch       string            `json:"branch"`
	Conversation string            `json:"conversation"`
	Metadata     json.RawMessage   `json:"metadata"`
	Idempotency  map[string]string `json:"idempotency"` // key → session
	Chain        []string          `json:"chain"`
	Routes       map[string]string `json:"routes"`
	Bot          string            `json:"bot"`
	Cursors      map[string]string `json:"cursors"`
	Watermark    string            `json:"watermark"`
	PollerLease  string            `json:"poller_lease"`
	PollerHolder string            `json:"poller_holder"`
	Sessions     []string          `json:"sessions"`
}

// ReadUpgradeFixture reads a fixture's manifest.
func ReadUpgradeFixture(t *testing.T, path string) UpgradeFixture {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f UpgradeFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// CheckUpgraded checks that st, a database f describes opened (and so upgraded) by this build,
// still holds everything f names, working: sessions and their compaction chain, platform routes,
// response ids (their sessions, each session's latest, by the keyless principal ""),
// conversation metadata, idempotency keys, read cursors, the watermark and the poller's lease.
// It writes (it takes leases and replays keys): run it after any comparison of contents.
func CheckUpgraded(t *testing.T, st store.Backend, f UpgradeFixture) {
	t.Helper()
	for _, id := range f.Sessions {
		if _, err := st.GetSession(bg, id); err != nil {
			t.Errorf("session %s: %v", id, err)
		}
	}
	checkUpgradedChain(t, st, f)
	checkUpgradedRoutes(t, st, f)
	checkUpgradedResponses(t, st, f)
	for key, sid := range f.Idempotency {
		e, claimed, err := st.ClaimIdempotencyKey(bg, store.IdempotencyClaim{Entry: store.IdempotencyEntry{Key: key, RequestHash: "upgrade", CreatedAt: time.Now()}})
		if err != nil || claimed || e.Status != 200 || !strings.Contains(string(e.Response), `"session_id":"`+sid+`"`) {
			t.Errorf("idempotency key %s: claimed %v, entry %+v, %v", key, claimed, e, err)
		}
	}
	checkUpgradedPlatformState(t, st, f)
}

func checkUpgradedChain(t *testing.T, st store.Backend, f UpgradeFixture) {
	t.Helper()
	chain, err := st.Chain(bg, f.Chain[0])
	if err != nil || len(chain) != len(f.Chain) {
		t.Errorf("chain of %s = %+v, %v; want %v", f.Chain[0], chain, err, f.Chain)
		return
	}
	for i, s := range chain {
		if s.ID != f.Chain[i] {
			t.Errorf("chain[%d] = %s, want %s", i, s.ID, f.Chain[i])
		}
	}
	tip := f.Chain[len(f.Chain)-1]
	if got, err := st.ResumeTarget(bg, f.Chain[0]); err != nil || got != tip {
		t.Errorf("resume target of %s = %s, %v; want %s", f.Chain[0], got, err, tip)
	}
	if ms, err := st.Conversation(bg, tip, store.ViewActive); err != nil || len(ms) == 0 || ms[len(ms)-1].Content != "still here" {
		t.Errorf("the chain's tip holds %+v, %v", ms, err)
	}
}

func checkUpgradedRoutes(t *testing.T, st store.Backend, f UpgradeFixture) {
	t.Helper()
	for key, sid := range f.Routes {
		if r, err := st.GetRoute(bg, key); err != nil || r.SessionID != sid || len(r.Origin) == 0 {
			t.Errorf("route %s = %+v, %v; want session %s", key, r, err, sid)
		}
	}
	// The API's records are no longer routes: only its session keys are.
	for _, sid := range f.Sessions {
		rs, err := st.RoutesTo(bg, sid)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if strings.HasPrefix(r.Key, "api:") && !strings.Contains(r.Key, ":derived:") && !strings.Contains(r.Key, ":key:") {
				t.Errorf("route %s of %s is still there after the upgrade", r.Key, sid)
			}
		}
	}
}

func checkUpgradedResponses(t *testing.T, st store.Backend, f UpgradeFixture) {
	t.Helper()
	for id, sid := range f.Responses {
		r, err := st.GetResponse(bg, "", id)
		var rec struct {
			Status string `json:"status"`
		}
		if err != nil || r.ID != id || r.SessionID != sid || r.Status != "completed" || json.Unmarshal(r.Record, &rec) != nil || rec.Status != "completed" {
			t.Errorf("response %s = %+v, %v; want session %s, completed", id, r, err, sid)
		}
		if _, err := st.GetResponse(bg, "someone else", id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("response %s found for another principal: %v", id, err)
		}
	}
	for _, id := range []string{f.Latest, f.Branch} {
		if got, err := st.LatestResponse(bg, f.Responses[id]); err != nil || got != id {
			t.Errorf("latest response of %s = %q, %v; want %s", f.Responses[id], got, err, id)
		}
	}
	if meta, err := st.ConversationMeta(bg, f.Conversation); err != nil || !jsonEqual(meta, f.Metadata) {
		t.Errorf("metadata of %s = %s, %v; want %s", f.Conversation, meta, err, f.Metadata)
	}
}

func checkUpgradedPlatformState(t *testing.T, st store.Backend, f UpgradeFixture) {
	t.Helper()
	cs, err := st.ReadCursors(bg, "discord", f.Bot)
	if err != nil || len(cs) != len(f.Cursors) {
		t.Errorf("read cursors = %+v, %v; want %v", cs, err, f.Cursors)
	}
	for _, c := range cs {
		if f.Cursors[c.Channel] != c.LastID {
			t.Errorf("cursor %s = %s, want %s", c.Channel, c.LastID, f.Cursors[c.Channel])
		}
	}
	if w, err := st.Watermark(bg, "discord", f.Bot); err != nil || w.LastID != f.Watermark || w.UpdatedAt.IsZero() {
		t.Errorf("watermark = %+v, %v; want %s", w, err, f.Watermark)
	}
	_, err = st.AcquireNamedLease(bg, f.PollerLease, "another-replica", time.Minute)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != f.PollerHolder {
		t.Errorf("the poller's lease taken by another replica after the upgrade: %v", err)
	}
	if l, err := st.AcquireNamedLease(bg, f.PollerLease, f.PollerHolder, time.Minute); err != nil || l.Generation != 1 {
		t.Errorf("the poller's own holder re-acquiring = %+v, %v", l, err)
	}
}
