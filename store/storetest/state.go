package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

func testNamedLeases(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	const name = "platform-poller:telegram:0123"
	a, err := st.AcquireNamedLease(bg, name, "a", time.Minute)
	if err != nil || a.Holder != "a" || a.Generation != 1 || !a.ExpiresAt.After(time.Now()) {
		t.Fatalf("first acquire = %+v, %v", a, err)
	}
	// A live foreign holder: *LeaseHeldError naming the lease and its holder, from any handle.
	_, err = h.reopen(t, dsn).AcquireNamedLease(bg, name, "b", time.Minute)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Name != name || held.Holder != "a" || !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("second holder: %v", err)
	}
	// Another name is another lease.
	if o, err := st.AcquireNamedLease(bg, name+"-other", "b", time.Minute); err != nil || o.Generation != 1 {
		t.Fatalf("another name: %+v, %v", o, err)
	}
	// The holder acquiring again extends its lease, same generation; renewing keeps it.
	again, err := st.AcquireNamedLease(bg, name, "a", time.Minute)
	if err != nil || again.Generation != a.Generation {
		t.Fatalf("re-acquire own = %+v, %v", again, err)
	}
	if r, err := st.RenewNamedLease(bg, again, time.Hour); err != nil || r.Generation != a.Generation || !r.ExpiresAt.After(again.ExpiresAt) {
		t.Fatalf("renew = %+v, %v", r, err)
	}
	// A foreign or stale lease does not renew; a foreign release frees nothing.
	_, err = st.RenewNamedLease(bg, store.NamedLease{Name: name, Holder: "b", Generation: a.Generation}, time.Minute)
	wantErr(t, err, store.ErrLeaseLost, "renew by another holder")
	if err := st.ReleaseNamedLease(bg, store.NamedLease{Name: name, Holder: "b", Generation: a.Generation}); err != nil {
		t.Fatal(err)
	}
	_, err = st.AcquireNamedLease(bg, name, "b", time.Minute)
	wantErr(t, err, store.ErrLeaseHeld, "acquire after a foreign release")

	// Released, the next holder gets the next generation, and the old lease is lost for good.
	if err := st.ReleaseNamedLease(bg, a); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseNamedLease(bg, a); err != nil {
		t.Fatalf("release is idempotent: %v", err)
	}
	b, err := st.AcquireNamedLease(bg, name, "b", 100*time.Millisecond)
	if err != nil || b.Generation != a.Generation+1 {
		t.Fatalf("acquire after release = %+v, %v", b, err)
	}
	_, err = st.RenewNamedLease(bg, a, time.Minute)
	wantErr(t, err, store.ErrLeaseLost, "renew a lease that changed hands")

	// Expired and nobody took it: its holder may renew it; once expired, anyone takes it.
	time.Sleep(150 * time.Millisecond)
	if _, err := st.RenewNamedLease(bg, b, 100*time.Millisecond); err != nil {
		t.Fatalf("owner could not revive its expired, untaken lease: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	c, err := st.AcquireNamedLease(bg, name, "c", time.Minute)
	if err != nil || c.Generation != b.Generation+1 {
		t.Fatalf("acquire an expired lease = %+v, %v", c, err)
	}
	_, err = st.RenewNamedLease(bg, b, time.Minute)
	wantErr(t, err, store.ErrLeaseLost, "renew an expired lease someone took")

	for _, bad := range [][2]string{{"", "a"}, {name, ""}} {
		_, err := st.AcquireNamedLease(bg, bad[0], bad[1], time.Minute)
		wantErr(t, err, store.ErrInvalid, "bad lease "+bad[0]+"/"+bad[1])
	}
}

func testWatermarks(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	_, err := st.Watermark(bg, "discord", "bot1")
	wantErr(t, err, store.ErrNotFound, "watermark never advanced")
	at := time.Date(2026, 4, 3, 8, 5, 0, 0, time.UTC)
	for _, w := range []store.Watermark{
		{Platform: "discord", Bot: "bot1", LastID: "1100000000000000007", UpdatedAt: at},
		{Platform: "discord", Bot: "bot1", LastID: "1100000000000000006"}, // earlier: ignored
		{Platform: "discord", Bot: "bot1", LastID: "999999999999999999"},  // shorter: earlier
		{Platform: "discord", Bot: "bot2", LastID: "5"},
	} {
		if err := st.AdvanceWatermark(bg, w); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.reopen(t, dsn).Watermark(bg, "discord", "bot1")
	if err != nil || got.LastID != "1100000000000000007" || !got.UpdatedAt.Equal(at) || got.Bot != "bot1" {
		t.Fatalf("watermark = %+v, %v", got, err)
	}
	if err := st.AdvanceWatermark(bg, store.Watermark{Platform: "discord", Bot: "bot1", LastID: "11000000000000000070"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Watermark(bg, "discord", "bot1"); got.LastID != "11000000000000000070" {
		t.Fatalf("a longer id did not advance it: %+v", got)
	}
	if got, _ := st.Watermark(bg, "discord", "bot2"); got.LastID != "5" {
		t.Fatalf("another bot's watermark = %+v", got)
	}
	// A watermark is not a read cursor.
	if cs, err := st.ReadCursors(bg, "discord", "bot1"); err != nil || len(cs) != 0 {
		t.Fatalf("read cursors after watermarks = %+v, %v", cs, err)
	}
	for _, bad := range []store.Watermark{{Platform: "discord", Bot: "b"}, {Platform: "discord", LastID: "1"}, {Bot: "b", LastID: "1"}, {Platform: "discord", Bot: "b", LastID: "12a"}} {
		wantErr(t, st.AdvanceWatermark(bg, bad), store.ErrInvalid, "bad watermark")
	}
}

func testResponses(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "rs1", Source: "api", UserID: "alice"})
	mustCreate(t, st, store.NewSession{ID: "rs2", Source: "api", UserID: "alice"})
	_, err := st.GetResponse(bg, "alice", "resp_1")
	wantErr(t, err, store.ErrNotFound, "response never put")

	at := time.Date(2026, 4, 3, 8, 5, 0, 0, time.UTC)
	r := store.Response{ID: "resp_1", Principal: "alice", SessionID: "rs1", Status: "in_progress", CreatedAt: at,
		Record: json.RawMessage(`{"model":"m","calls":["c1"]}`)}
	if err := st.PutResponse(bg, r); err != nil {
		t.Fatal(err)
	}
	if id, err := st.LatestResponse(bg, "rs1"); err != nil || id != "" {
		t.Fatalf("latest before a finished response = %q, %v", id, err)
	}
	r.Status, r.MessageID, r.Latest = "completed", 42, true
	if err := st.PutResponse(bg, r); err != nil {
		t.Fatal(err)
	}
	got, err := h.reopen(t, dsn).GetResponse(bg, "alice", "resp_1")
	if err != nil || got.ID != "resp_1" || got.SessionID != "rs1" || got.Principal != "alice" || got.Status != "completed" ||
		got.MessageID != 42 || !got.CreatedAt.Equal(at) || !jsonEqual(got.Record, r.Record) {
		t.Fatalf("response read back = %+v, %v", got, err)
	}
	// Another principal does not find it.
	_, err = st.GetResponse(bg, "bob", "resp_1")
	wantErr(t, err, store.ErrNotFound, "another principal's response")

	if err := st.PutResponse(bg, store.Response{ID: "resp_2", Principal: "alice", SessionID: "rs1", Status: "completed", Latest: true}); err != nil {
		t.Fatal(err)
	}
	if id, err := st.LatestResponse(bg, "rs1"); err != nil || id != "resp_2" {
		t.Fatalf("latest = %q, %v", id, err)
	}
	if id, _ := st.LatestResponse(bg, "rs2"); id != "" {
		t.Fatalf("latest of a session without responses = %q", id)
	}

	// Conversation metadata: none, stored, replaced; the latest response stays.
	if m, err := st.ConversationMeta(bg, "rs1"); err != nil || m != nil {
		t.Fatalf("metadata never put = %s, %v", m, err)
	}
	for _, meta := range []string{`{"topic":"a"}`, `{"topic":"b","k":"v"}`} {
		if err := st.PutConversationMeta(bg, "alice", "rs1", json.RawMessage(meta)); err != nil {
			t.Fatal(err)
		}
		if m, err := h.reopen(t, dsn).ConversationMeta(bg, "rs1"); err != nil || !jsonEqual(m, json.RawMessage(meta)) {
			t.Fatalf("metadata = %s, %v; want %s", m, err, meta)
		}
	}
	if id, _ := st.LatestResponse(bg, "rs1"); id != "resp_2" {
		t.Fatalf("metadata moved the latest response: %q", id)
	}

	wantErr(t, st.PutResponse(bg, store.Response{ID: "resp_3", SessionID: "missing"}), store.ErrNotFound, "response of a missing session")
	wantErr(t, st.PutConversationMeta(bg, "alice", "missing", json.RawMessage(`{}`)), store.ErrNotFound, "metadata of a missing session")
	for _, bad := range []store.Response{{SessionID: "rs1"}, {ID: "resp_4"}, {ID: "resp_4", SessionID: "rs1", Record: json.RawMessage(`{`)}} {
		wantErr(t, st.PutResponse(bg, bad), store.ErrInvalid, "bad response "+bad.ID)
	}

	// Deleting the session deletes its responses and metadata.
	if err := st.DeleteSession(bg, "rs1"); err != nil {
		t.Fatal(err)
	}
	_, err = st.GetResponse(bg, "alice", "resp_2")
	wantErr(t, err, store.ErrNotFound, "response of a deleted session")
	if m, _ := st.ConversationMeta(bg, "rs1"); m != nil {
		t.Fatalf("metadata of a deleted session = %s", m)
	}
}
