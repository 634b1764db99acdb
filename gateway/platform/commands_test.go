package platform_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
)

func last(out *platformtest.Outbound, chat string) string {
	t := out.Texts(chat, "")
	if len(t) == 0 {
		return ""
	}
	return t[len(t)-1]
}

func TestCommands(t *testing.T) {
	t.Parallel()
	e := platformtest.New(t, platformtest.Options{})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	e.Start(t, out)
	n := 0
	say := func(chat, text string) string {
		t.Helper()
		n++
		handle(t, e, dm(chat, chat+":"+string(rune('a'+n)), text))
		e.Idle(t)
		return last(out, chat)
	}
	if got := say("20", "/status"); !strings.Contains(got, "no session yet") {
		t.Fatalf("/status before any message: %q", got)
	}
	say("20", "SAY the secret word is pineapple")
	say("21", "SAY banana bread recipe, and pineapple too")
	k20 := key(t, dm("20", "", "").Address)
	s := onlySession(t, e, k20)

	if got := say("20", "/title Fruit chat"); got != "Title set: Fruit chat" {
		t.Fatalf("/title: %q", got)
	}
	if got := say("20", "/title"); got != "Title: Fruit chat" {
		t.Fatalf("/title without text: %q", got)
	}
	got := say("20", "/status")
	for _, want := range []string{s.ID, "Fruit chat", "Context:", "/ 128000 tokens", "Cached share:", "Last cache break:"} {
		if !strings.Contains(got, want) {
			t.Fatalf("/status %q lacks %q", got, want)
		}
	}
	say("20", "SAY to be undone")
	if got := say("20", "/undo"); !strings.Contains(got, "Undid the last exchange (2 messages)") {
		t.Fatalf("/undo: %q", got)
	}
	if tr := e.Transcript(t, s.ID); len(tr) != 2 || !strings.Contains(tr[1], "pineapple") {
		t.Fatalf("after /undo: %q", tr)
	}
	if got := say("20", "/nosuchcommand hello"); !strings.Contains(got, "nosuchcommand") {
		t.Fatalf("an unknown command goes to the model as text: %q", got)
	}
	if got := say("20", "/help"); !strings.Contains(got, "/compress") {
		t.Fatalf("/help: %q", got)
	}

	// Recall scope: after /new, /search sees this chat's earlier session, never another chat's.
	say("20", "/new")
	got = say("20", "/search pineapple")
	if !strings.Contains(got, "Fruit chat") || strings.Contains(got, "banana") {
		t.Fatalf("/search in chat 20: %q, want its own earlier session only", got)
	}
	if got := say("22", "SAY hello"); got != "hello" {
		t.Fatalf("chat 22: %q", got)
	}
	if got := say("22", "/search pineapple"); !strings.Contains(got, "Nothing found") {
		t.Fatalf("/search in chat 22 saw other chats: %q", got)
	}
}

// Hygiene: a session over 85% of the window is compacted before the agent runs; a failed
// hygiene compaction is counted per key and the turn still runs.
func TestHygiene(t *testing.T) {
	t.Parallel()
	e := platformtest.New(t, platformtest.Options{Window: 4000})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	e.Start(t, out)
	handle(t, e, dm("30", "1", "SAY hi"))
	e.Idle(t)
	k := key(t, dm("30", "", "").Address)
	s := onlySession(t, e, k)
	// Grow the history past 85% of 4000 tokens behind the agent's back (another client).
	var rows []store.Message
	for i := range 16 {
		rows = append(rows, store.Message{Role: store.RoleUser, Content: strings.Repeat("history line ", 70) + string(rune('a'+i))},
			store.Message{Role: store.RoleAssistant, Content: "noted " + string(rune('a'+i))})
	}
	if _, err := e.Store.AppendBatch(bg, s.ID, rows); err != nil {
		t.Fatal(err)
	}
	e.Model.FailNext(1, fake.Fault{Kind: fake.FaultAuth})
	handle(t, e, dm("30", "2", "SAY after a failed hygiene"))
	e.Idle(t)
	if n := e.Router.HygieneStreak(k); n != 1 {
		t.Fatalf("hygiene failure streak = %d, want 1 (the compaction before the turn failed)", n)
	}
	if got := last(out, "30"); got != "after a failed hygiene" && !strings.Contains(got, "failed") {
		t.Fatalf("the turn after a failed hygiene: %q", got)
	}
	handle(t, e, dm("30", "3", "SAY compacted"))
	e.Idle(t)
	if n := e.Router.HygieneStreak(k); n != 0 {
		t.Fatalf("streak = %d after a compaction, want 0", n)
	}
	cur := onlySessionOrTip(t, e, k)
	tr := e.Transcript(t, cur)
	if len(tr) == 0 || !strings.Contains(strings.Join(tr, "|"), "summary") || tr[len(tr)-1] != "a: compacted" {
		t.Fatalf("after hygiene: %q, want a summary and the answer", tr)
	}
}

// Hygiene measures a session by the usage the agent recorded (compress.State's anchor: the
// provider's real prompt count), not only by the rough estimate: code and other dense text count
// far more tokens than characters/4 says, and the real count is preferred.
func TestHygieneUsesTheRecordedUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		anchor  int // the real prompt tokens of the last request
		hygiene bool
	}{
		{"the real count is over 85% of the window", 3600, true},
		{"the real count is under it", 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := platformtest.New(t, platformtest.Options{Window: 4000})
			out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
			e.Start(t, out)
			handle(t, e, dm("31", "1", "SAY hi"))
			handle(t, e, dm("31", "2", "SAY again"))
			e.Idle(t)
			k := key(t, dm("31", "", "").Address)
			s := onlySession(t, e, k)
			hist, err := e.Store.Conversation(bg, s.ID, store.ViewActive)
			if err != nil || len(hist) < 4 || tokens.Estimate(hist) > 1000 {
				t.Fatalf("the test needs 4 short messages: %d messages, estimate %d, %v", len(hist), tokens.Estimate(hist), err)
			}
			st, _ := json.Marshal(compress.State{AnchorPrompt: tc.anchor, AnchorEstimate: 10})
			cfg, _ := json.Marshal(map[string]json.RawMessage{compress.StateConfigKey: st})
			if err := e.Store.UpdateSession(bg, s.ID, store.SessionPatch{ModelConfig: cfg}); err != nil {
				t.Fatal(err)
			}
			// The next model call fails: a hygiene compaction, if the router starts one, counts a
			// failure for the key (the agent's own preflight does not count there).
			e.Model.FailNext(1, fake.Fault{Kind: fake.FaultAuth})
			handle(t, e, dm("31", "3", "SAY after"))
			e.Idle(t)
			if got := e.Router.HygieneStreak(k) == 1; got != tc.hygiene {
				t.Fatalf("hygiene ran = %v, want %v (streak %d)", got, tc.hygiene, e.Router.HygieneStreak(k))
			}
		})
	}
}

func onlySessionOrTip(t *testing.T, e *platformtest.Env, k string) string {
	t.Helper()
	rt, err := e.Store.GetRoute(bg, k)
	if err != nil {
		t.Fatal(err)
	}
	return rt.SessionID
}
