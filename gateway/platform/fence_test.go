package platform_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// holdLease takes the turn lease of sessionID's conversation through another handle on the
// database at path (another process's turn), released when the test ends or by the func.
func holdLease(t *testing.T, path, sessionID string) (release func()) {
	t.Helper()
	other, err := sqlite.Open(bg, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	l, err := other.AcquireLease(bg, sessionID, store.NewHolder().String(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			if err := other.ReleaseLease(bg, l); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(release)
	return release
}

// TestUndoFencedByLease: while another process holds the conversation's turn lease, a chat's
// /undo hides nothing and the chat is told the session is busy; once the lease is free, /undo
// works.
func TestUndoFencedByLease(t *testing.T) {
	t.Parallel()
	e := platformtest.New(t, platformtest.Options{})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	e.Start(t, out)
	n := 0
	say := func(text string) string {
		t.Helper()
		n++
		handle(t, e, dm("40", "40:"+string(rune('a'+n)), text))
		e.Idle(t)
		return last(out, "40")
	}
	say("SAY one")
	say("SAY two")
	s := onlySession(t, e, key(t, dm("40", "", "").Address))
	want := "u: SAY one|a: one|u: SAY two|a: two"

	release := holdLease(t, e.DB, s.ID)
	if got := say("/undo"); !strings.Contains(got, "busy") || !strings.Contains(got, "Nothing was undone") {
		t.Fatalf("/undo under another holder's lease: %q, want a busy reply", got)
	}
	if got := strings.Join(e.Transcript(t, s.ID), "|"); got != want {
		t.Fatalf("after a refused /undo: %q, want %q", got, want)
	}
	release()
	if got := say("/undo"); !strings.Contains(got, "Undid the last exchange (2 messages)") {
		t.Fatalf("/undo with the lease free: %q", got)
	}
	if got := strings.Join(e.Transcript(t, s.ID), "|"); got != "u: SAY one|a: one" {
		t.Fatalf("after /undo: %q", got)
	}
}

// TestRecoveryTakeBackFenced: a turn a crash cut short left its user message without an
// answer; recovery takes it back before running the turn again, but not while another process
// holds the conversation's lease: then nothing is hidden and the turn waits for a later
// recovery pass, which answers the message once.
func TestRecoveryTakeBackFenced(t *testing.T) {
	t.Parallel()
	first := platformtest.New(t, platformtest.Options{})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	first.Start(t, out)
	handle(t, first, dm("41", "41:a", "SAY one"))
	first.Idle(t)
	k := key(t, dm("41", "", "").Address)
	s := onlySession(t, first, k)

	// The crashed process's state: the event claimed and running, its user message stored.
	ev := dm("41", "41:b", "SAY two")
	payload, _ := json.Marshal(ev)
	dead := "dead-host:1:crashed"
	if _, _, err := first.Store.RecordInbound(bg, store.InboundEvent{Platform: tg, EventID: ev.EventID, SessionKey: k,
		Payload: payload, Holder: dead, ClaimedUntil: time.Now().Add(-time.Second), ReceivedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := first.Store.UpdateInbound(bg, store.InboundUpdate{Platform: tg, EventID: ev.EventID, Holder: dead,
		State: store.InboundRunning, SessionID: s.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Store.AppendBatch(bg, s.ID, []store.Message{{Role: store.RoleUser, Content: "SAY two"}}); err != nil {
		t.Fatal(err)
	}
	want := "u: SAY one|a: one|u: SAY two"

	release := holdLease(t, first.DB, s.ID)
	first.Router.Recover(bg)
	first.Idle(t)
	if got := strings.Join(first.Transcript(t, s.ID), "|"); got != want {
		t.Fatalf("recovery under another holder's lease left %q, want %q", got, want)
	}
	release()
	first.Router.Recover(bg)
	first.Idle(t)
	if got := strings.Join(first.Transcript(t, s.ID), "|"); got != "u: SAY one|a: one|u: SAY two|a: two" {
		t.Fatalf("after recovery: %q", got)
	}
	if got := out.Texts("41", ""); strings.Join(got, "|") != "one|two" {
		t.Fatalf("replies %q", got)
	}
}
