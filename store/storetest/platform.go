package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// testClaimRoute: concurrent first claims of one key, from separate store handles (as separate
// gateway processes would), leave exactly one winner, and everyone sees the winner's session.
func testClaimRoute(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	const n = 6
	for i := range n {
		mustCreate(t, st, store.NewSession{ID: sid("cr", i), Source: "telegram"})
	}
	const key = "agent:main:telegram:dm:42"
	handles := make([]store.Backend, n)
	for i := range handles {
		handles[i] = h.reopen(t, dsn)
	}
	var wg sync.WaitGroup
	got := make([]store.Route, n)
	won := make([]bool, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], won[i], errs[i] = handles[i].ClaimRoute(bg, store.Route{Key: key, SessionID: sid("cr", i)})
		}()
	}
	close(start)
	wg.Wait()
	winners, winner := 0, ""
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		if won[i] {
			winners++
			winner = sid("cr", i)
		}
	}
	if winners != 1 {
		t.Fatalf("%d claims won, want exactly 1", winners)
	}
	for i := range n {
		if got[i].SessionID != winner {
			t.Fatalf("claim %d sees session %q, the winner is %q", i, got[i].SessionID, winner)
		}
	}
	if r, _ := st.GetRoute(bg, key); r.SessionID != winner {
		t.Fatalf("stored route = %+v, want %s", r, winner)
	}
	wantErr(t, func() error { _, _, err := st.ClaimRoute(bg, store.Route{Key: "/x", SessionID: winner}); return err }(), store.ErrInvalid, "bad key")
	wantErr(t, func() error { _, _, err := st.ClaimRoute(bg, store.Route{Key: "k2", SessionID: "missing"}); return err }(), store.ErrNotFound, "missing session")
}

// testInbox: an event is recorded once; a redelivery returns the stored one; claims exclude
// other holders until they expire; only the holder moves it on; finished events leave the
// unfinished list; everything survives a reopen.
func testInbox(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "in-1", Source: "telegram"})
	ev := store.InboundEvent{Platform: "telegram", EventID: "-100:7", SessionKey: "agent:main:telegram:dm:-100",
		Payload: json.RawMessage(`{"text":"hi <b>&amp;"}`), Holder: "A", ClaimedUntil: time.Now().Add(time.Hour)}
	got, fresh, err := st.RecordInbound(bg, ev)
	if err != nil || !fresh || got.State != store.InboundPending || got.Holder != "A" {
		t.Fatalf("first record = %+v, %v, %v", got, fresh, err)
	}
	again, fresh, err := h.reopen(t, dsn).RecordInbound(bg, store.InboundEvent{Platform: "telegram", EventID: "-100:7", Payload: json.RawMessage(`{"text":"other"}`), Holder: "B"})
	if err != nil || fresh {
		t.Fatalf("redelivery recorded again: fresh=%v err=%v", fresh, err)
	}
	if again.Holder != "A" || !jsonEqual(again.Payload, ev.Payload) || again.SessionKey != ev.SessionKey {
		t.Fatalf("redelivery changed the event: %+v", again)
	}
	// Same id on another platform is another event.
	if _, fresh, err := st.RecordInbound(bg, store.InboundEvent{Platform: "slack", EventID: "-100:7"}); err != nil || !fresh {
		t.Fatalf("same id on another platform: fresh=%v err=%v", fresh, err)
	}

	// B cannot claim while A holds; A can re-claim.
	if _, ok, err := st.ClaimInbound(bg, "telegram", "-100:7", "B", time.Minute); err != nil || ok {
		t.Fatalf("B claimed a held event: %v %v", ok, err)
	}
	if _, ok, err := st.ClaimInbound(bg, "telegram", "-100:7", "A", time.Minute); err != nil || !ok {
		t.Fatalf("A could not re-claim: %v %v", ok, err)
	}
	wantErr(t, st.UpdateInbound(bg, store.InboundUpdate{Platform: "telegram", EventID: "-100:7", Holder: "B", State: store.InboundRunning}), store.ErrLeaseLost, "update by a non-holder")
	if err := st.UpdateInbound(bg, store.InboundUpdate{Platform: "telegram", EventID: "-100:7", Holder: "A", State: store.InboundRunning, SessionID: "in-1"}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateInbound(bg, store.InboundUpdate{Platform: "telegram", EventID: "-100:7", Holder: "A", State: store.InboundReplied, Reply: "answer\x00 with a NUL"}); err != nil {
		t.Fatal(err)
	}
	// An expired claim is taken over.
	if _, ok, err := st.ClaimInbound(bg, "telegram", "-100:7", "A", -time.Second); err != nil || !ok {
		t.Fatalf("A could not shorten its claim: %v %v", ok, err)
	}
	took, ok, err := st.ClaimInbound(bg, "telegram", "-100:7", "B", time.Minute)
	if err != nil || !ok || took.Holder != "B" || took.State != store.InboundReplied || took.SessionID != "in-1" || took.Reply == "" {
		t.Fatalf("takeover of an expired claim = %+v, %v, %v", took, ok, err)
	}
	// B releases its claim (a gateway stopping): C takes it at once, state and reply kept.
	if err := st.UpdateInbound(bg, store.InboundUpdate{Platform: "telegram", EventID: "-100:7", Holder: "B", Release: true}); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := st.ClaimInbound(bg, "telegram", "-100:7", "C", time.Minute); err != nil || !ok || c.State != store.InboundReplied || c.Reply == "" {
		t.Fatalf("claim after a release = %+v, %v, %v", c, ok, err)
	}
	if _, ok, _ := st.ClaimInbound(bg, "telegram", "-100:7", "B", time.Minute); ok {
		t.Fatal("B re-claimed an event C holds")
	}
	if err := st.UpdateInbound(bg, store.InboundUpdate{Platform: "telegram", EventID: "-100:7", Holder: "C", Release: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.ClaimInbound(bg, "telegram", "-100:7", "B", time.Minute); !ok {
		t.Fatal("B could not take the released event back")
	}
	un, err := st.UnfinishedInbound(bg, "telegram", 0)
	if err != nil || len(un) != 1 || un[0].EventID != "-100:7" {
		t.Fatalf("unfinished = %+v, %v", un, err)
	}
	if err := st.UpdateInbound(bg, store.InboundUpdate{Platform: "telegram", EventID: "-100:7", Holder: "B", State: store.InboundDone}); err != nil {
		t.Fatal(err)
	}
	if un, _ := h.reopen(t, dsn).UnfinishedInbound(bg, "telegram", 0); len(un) != 0 {
		t.Fatalf("a done event is still unfinished: %+v", un)
	}
	// Done: never claimed again, still deduplicated.
	if _, ok, _ := st.ClaimInbound(bg, "telegram", "-100:7", "C", time.Minute); ok {
		t.Fatal("a done event was claimed")
	}
	if e, fresh, _ := st.RecordInbound(bg, store.InboundEvent{Platform: "telegram", EventID: "-100:7"}); fresh || e.State != store.InboundDone {
		t.Fatalf("a done event was recorded again: %+v %v", e, fresh)
	}
	_, _, err = st.ClaimInbound(bg, "telegram", "nope", "A", time.Minute)
	wantErr(t, err, store.ErrNotFound, "claim of an unknown event")
	for _, bad := range []store.InboundEvent{{EventID: "x"}, {Platform: "p"}, {Platform: "p", EventID: "x", Payload: json.RawMessage(`[1]`)}} {
		_, _, err := st.RecordInbound(bg, bad)
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("bad event %+v", bad))
	}

	// Unfinished events come oldest first.
	for i := range 3 {
		if _, _, err := st.RecordInbound(bg, store.InboundEvent{Platform: "discord", EventID: fmt.Sprintf("m%d", 3-i), ReceivedAt: at(i)}); err != nil {
			t.Fatal(err)
		}
	}
	un, _ = st.UnfinishedInbound(bg, "discord", 2)
	if len(un) != 2 || un[0].EventID != "m3" || un[1].EventID != "m2" {
		t.Fatalf("unfinished order = %+v", un)
	}
	expectHealthy(t, st)
}

// testSendLedger: entries are kept per (turn, chunk), replaced in place, listed by chunk.
func testSendLedger(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	const turn = "telegram:-100:7"
	for _, e := range []store.SendEntry{{TurnID: turn, Chunk: 1}, {TurnID: turn, Chunk: 0, MessageID: "501", TextHash: "h0"}, {TurnID: turn, Chunk: -1, MessageID: "499"}, {TurnID: "other", Chunk: 0, MessageID: "9"}} {
		if err := st.PutSend(bg, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutSend(bg, store.SendEntry{TurnID: turn, Chunk: 1, MessageID: "502", TextHash: "h1"}); err != nil {
		t.Fatal(err)
	}
	got, err := h.reopen(t, dsn).Sends(bg, turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Chunk != -1 || got[1].MessageID != "501" || got[2].MessageID != "502" || got[2].TextHash != "h1" || got[2].UpdatedAt.IsZero() {
		t.Fatalf("ledger = %+v", got)
	}
	if none, err := st.Sends(bg, "never"); err != nil || len(none) != 0 {
		t.Fatalf("ledger of an unknown turn = %+v, %v", none, err)
	}
	wantErr(t, st.PutSend(bg, store.SendEntry{}), store.ErrInvalid, "entry without a turn")
}

// testReadCursors: a cursor is created by its first advance, moves only forward (ids compare
// as numbers: a longer id is later, whatever its first digit), is kept per (platform, bot,
// channel), is listed most recently advanced first, and survives a reopen; concurrent
// advances from two handles keep the largest id; bad cursors are refused.
func testReadCursors(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	if cs, err := st.ReadCursors(bg, "discord", "bot1"); err != nil || len(cs) != 0 {
		t.Fatalf("no cursors yet: %+v, %v", cs, err)
	}
	t0 := time.Now().Add(-time.Hour)
	adv := func(s store.Backend, bot, ch, id string, at time.Time) {
		t.Helper()
		if err := s.AdvanceReadCursor(bg, store.ReadCursor{Platform: "discord", Bot: bot, Channel: ch, LastID: id, UpdatedAt: at}); err != nil {
			t.Fatalf("advance %s/%s to %s: %v", bot, ch, id, err)
		}
	}
	adv(st, "bot1", "500", "900", t0)
	adv(st, "bot1", "500", "1000", t0.Add(time.Second))   // longer: later, though "1" < "9"
	adv(st, "bot1", "500", "999", t0.Add(2*time.Second))  // shorter: earlier, ignored
	adv(st, "bot1", "500", "1000", t0.Add(3*time.Second)) // the same: ignored
	adv(st, "bot1", "600", "1100000000000000001", t0.Add(4*time.Second))
	adv(st, "bot1", "600", "1100000000000000000", t0.Add(5*time.Second)) // same length, smaller: ignored
	adv(st, "bot2", "500", "5", t0.Add(6*time.Second))
	adv(st, "bot1", "700", "7", t0.Add(-time.Minute))
	want := []store.ReadCursor{
		{Platform: "discord", Bot: "bot1", Channel: "600", LastID: "1100000000000000001"},
		{Platform: "discord", Bot: "bot1", Channel: "500", LastID: "1000"},
		{Platform: "discord", Bot: "bot1", Channel: "700", LastID: "7"},
	}
	check := func(s store.Backend, what string) {
		t.Helper()
		got, err := s.ReadCursors(bg, "discord", "bot1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: cursors %+v, want %+v", what, got, want)
		}
		for i := range want {
			g := got[i]
			if g.Platform != want[i].Platform || g.Bot != want[i].Bot || g.Channel != want[i].Channel || g.LastID != want[i].LastID {
				t.Fatalf("%s: cursor %d = %+v, want %+v", what, i, g, want[i])
			}
		}
		if !got[0].UpdatedAt.Equal(t0.Add(4*time.Second).Truncate(time.Microsecond)) || !got[1].UpdatedAt.Equal(t0.Add(time.Second).Truncate(time.Microsecond)) {
			t.Fatalf("%s: updated %v, %v: an ignored advance moved them", what, got[0].UpdatedAt, got[1].UpdatedAt)
		}
	}
	check(st, "first handle")
	other := h.reopen(t, dsn)
	check(other, "after a reopen")
	if got, _ := st.ReadCursors(bg, "discord", "bot2"); len(got) != 1 || got[0].LastID != "5" {
		t.Fatalf("bot2: %+v", got)
	}
	if got, _ := st.ReadCursors(bg, "slack", "bot1"); len(got) != 0 {
		t.Fatalf("another platform sees discord's cursors: %+v", got)
	}

	// two processes advancing one cursor at once: the largest id stays
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []store.Backend{st, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 40 {
				if err := s.AdvanceReadCursor(bg, store.ReadCursor{Platform: "discord", Bot: "race", Channel: "1", LastID: fmt.Sprint(1000 + 2*n + i)}); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := st.ReadCursors(bg, "discord", "race"); len(got) != 1 || got[0].LastID != "1079" {
		t.Fatalf("after concurrent advances: %+v, want 1079", got)
	}

	for _, bad := range []store.ReadCursor{
		{Bot: "b", Channel: "c", LastID: "1"},
		{Platform: "discord", Channel: "c", LastID: "1"},
		{Platform: "discord", Bot: "b", LastID: "1"},
		{Platform: "discord", Bot: "b", Channel: "c"},
		{Platform: "discord", Bot: "b", Channel: "c", LastID: "12a"},
		{Platform: "discord", Bot: "b", Channel: "c", LastID: "-1"},
		{Platform: "discord", Bot: "b", Channel: "c", LastID: strings.Repeat("9", store.MaxCursorID+1)},
	} {
		wantErr(t, st.AdvanceReadCursor(bg, bad), store.ErrInvalid, fmt.Sprintf("cursor %+v", bad))
	}
}
