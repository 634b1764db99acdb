package platform_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/storetest"
)

var bg = context.Background()

const tg = "telegram"

func dm(chat, id, text string) platform.Event {
	return platformtest.Event(tg, platform.DM, chat, "", chat, id, text)
}

func handle(t *testing.T, e *platformtest.Env, ev platform.Event) {
	t.Helper()
	if err := e.Router.Handle(bg, ev); err != nil {
		t.Fatalf("handle %s: %v", ev.EventID, err)
	}
}

func key(t *testing.T, a platform.Address) string {
	t.Helper()
	k, err := platform.DefaultPolicy.Key(a)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func onlySession(t *testing.T, e *platformtest.Env, k string) store.Session {
	t.Helper()
	ss := e.Sessions(t, k)
	if len(ss) != 1 {
		t.Fatalf("%d sessions for %s, want 1", len(ss), k)
	}
	return ss[0]
}

// Concurrent first messages of one key, through two routers on one database (two gateway
// processes) and several goroutines each, make one session that holds every message once.
func TestFirstMessagesMakeOneSession(t *testing.T) {
	t.Parallel()
	a := platformtest.New(t, platformtest.Options{})
	b := platformtest.New(t, platformtest.Options{DB: a.DB})
	outA, outB := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096}), platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	a.Start(t, outA)
	b.Start(t, outB)
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			env := a
			if i%2 == 1 {
				env = b
			}
			if err := env.Router.Handle(bg, dm("100", fmt.Sprint(i), fmt.Sprintf("hello %d", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	a.Idle(t)
	b.Idle(t)
	s := onlySession(t, a, key(t, dm("100", "", "").Address))
	tr := a.Transcript(t, s.ID)
	users := 0
	for _, l := range tr {
		if strings.HasPrefix(l, "u: ") {
			users++
		}
	}
	if users != n || len(tr) != 2*n {
		t.Fatalf("transcript %q: want %d user messages each answered", tr, n)
	}
	replies := 0
	for _, m := range append(outA.All(), outB.All()...) {
		if !strings.Contains(m.Text, "Queued") { // messages that found the lane busy were told so
			replies++
		}
	}
	if replies != n {
		t.Fatalf("%d replies sent, want %d", replies, n)
	}
}

// A redelivered event (the platform retried: a timeout, a lost ack, a restart) starts no
// second turn and sends nothing more, before and after the first finished.
func TestRedeliveryIsIgnored(t *testing.T) {
	t.Parallel()
	e := platformtest.New(t, platformtest.Options{})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	e.Start(t, out)
	ev := dm("7", "7:1", "only once")
	handle(t, e, ev)
	handle(t, e, ev)
	e.Idle(t)
	handle(t, e, ev)
	e.Idle(t)
	// Another router on the same database (a restarted process) ignores it too.
	e2 := platformtest.New(t, platformtest.Options{DB: e.DB})
	out2 := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	e2.Start(t, out2)
	handle(t, e2, ev)
	e2.Idle(t)
	s := onlySession(t, e, key(t, ev.Address))
	if tr := e.Transcript(t, s.ID); len(tr) != 2 {
		t.Fatalf("transcript %q, want one exchange", tr)
	}
	if n := len(out.All()) + len(out2.All()); n != 1 {
		t.Fatalf("%d messages sent, want 1", n)
	}
}

// A restarted gateway continues every chat where it was: same sessions, DMs and topics apart.
func TestRestartResumesEveryChat(t *testing.T) {
	t.Parallel()
	db := platformtest.New(t, platformtest.Options{}).DB
	topic := func(thread, id, text string) platform.Event {
		return platformtest.Event(tg, platform.Thread, "-1001", thread, "5", id, text)
	}
	first := platformtest.New(t, platformtest.Options{DB: db})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	first.Start(t, out)
	for _, ev := range []platform.Event{dm("1", "a1", "dm one"), topic("11", "t1", "topic eleven"), topic("12", "t2", "topic twelve")} {
		handle(t, first, ev)
	}
	first.Idle(t)
	before := map[string]string{}
	for _, ev := range []platform.Event{dm("1", "", ""), topic("11", "", ""), topic("12", "", "")} {
		before[key(t, ev.Address)] = onlySession(t, first, key(t, ev.Address)).ID
	}

	second := platformtest.New(t, platformtest.Options{DB: db})
	out2 := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	second.Start(t, out2)
	for _, ev := range []platform.Event{dm("1", "a2", "dm again"), topic("11", "t3", "eleven again"), topic("12", "t4", "twelve again")} {
		handle(t, second, ev)
	}
	second.Idle(t)
	for k, id := range before {
		if got := onlySession(t, second, k).ID; got != id {
			t.Fatalf("%s continued in %s after the restart, want %s", k, got, id)
		}
		tr := second.Transcript(t, id)
		if len(tr) != 4 {
			t.Fatalf("%s transcript %q, want two exchanges", k, tr)
		}
	}
	if tr := second.Transcript(t, before[key(t, topic("11", "", "").Address)]); !strings.Contains(tr[0], "eleven") || !strings.Contains(tr[2], "eleven") {
		t.Fatalf("topic 11 holds %q: context leaked between topics", tr)
	}
	if got := out2.Texts("-1001", "12"); len(got) != 1 {
		t.Fatalf("topic 12 got %q after the restart, want one reply", got)
	}
}

// /new and /reset start a fresh session linked to the previous one (relation reset, end reason
// recorded); /stop suspends, and the next message starts a fresh linked session.
func TestResetAndStop(t *testing.T) {
	t.Parallel()
	e := platformtest.New(t, platformtest.Options{})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	e.Start(t, out)
	k := key(t, dm("3", "", "").Address)
	handle(t, e, dm("3", "1", "first"))
	e.Idle(t)
	s1 := onlySession(t, e, k)
	handle(t, e, dm("3", "2", "/new"))
	e.Idle(t)
	handle(t, e, dm("3", "3", "/reset@spool_bot"))
	e.Idle(t)
	handle(t, e, dm("3", "4", "second"))
	e.Idle(t)
	handle(t, e, dm("3", "5", "/stop"))
	e.Idle(t)
	handle(t, e, dm("3", "6", "third"))
	e.Idle(t)
	ss := e.Sessions(t, k)
	if len(ss) != 4 {
		t.Fatalf("%d sessions, want 4 (first, /new, /reset, after /stop)", len(ss))
	}
	wantEnd := []string{store.EndNewSession, store.EndReset, store.EndReset, ""}
	for i, s := range ss {
		if s.EndReason != wantEnd[i] {
			t.Fatalf("session %d ended %q, want %q", i, s.EndReason, wantEnd[i])
		}
		if i > 0 && (s.ParentID != ss[i-1].ID || s.Relation != store.RelationReset) {
			t.Fatalf("session %d: parent %q relation %q, want %s reset", i, s.ParentID, s.Relation, ss[i-1].ID)
		}
	}
	if ss[0].ID != s1.ID {
		t.Fatal("the first session changed")
	}
	if tr := e.Transcript(t, ss[2].ID); len(tr) != 2 || tr[0] != "u: second" {
		t.Fatalf("session after /reset holds %q", tr)
	}
	if tr := e.Transcript(t, ss[3].ID); len(tr) != 2 || tr[0] != "u: third" {
		t.Fatalf("session after /stop holds %q", tr)
	}
	if !out.Contains("3", "", "Stopped") || !out.Contains("3", "", "New session") {
		t.Fatalf("command replies missing: %q", out.Texts("3", ""))
	}
}

// A route whose session was ended deliberately elsewhere is healed to a fresh linked
// session; one ended automatically (a process exit) is continued; a route to a rotated
// session resolves to its live tip and moves there.
func TestStaleAndTip(t *testing.T) {
	t.Parallel()
	e := platformtest.New(t, platformtest.Options{})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
	e.Start(t, out)
	k := key(t, dm("4", "", "").Address)
	handle(t, e, dm("4", "1", "one"))
	e.Idle(t)
	s1 := onlySession(t, e, k)
	if err := e.Store.EndSession(bg, s1.ID, store.EndProcessExit); err != nil {
		t.Fatal(err)
	}
	handle(t, e, dm("4", "2", "two"))
	e.Idle(t)
	if got := onlySession(t, e, k); got.ID != s1.ID || got.Ended() {
		t.Fatalf("after an automatic end: %+v, want %s reopened", got, s1.ID)
	}
	if err := e.Store.EndSession(bg, s1.ID, "user_ended"); err != nil {
		t.Fatal(err)
	}
	handle(t, e, dm("4", "3", "three"))
	e.Idle(t)
	ss := e.Sessions(t, k)
	if len(ss) != 2 || ss[1].ParentID != s1.ID || ss[1].Relation != store.RelationReset {
		t.Fatalf("a stale route was not healed into a linked session: %+v", ss)
	}
	// Rotation: the route names the parent, the tip is its continuation.
	tip, err := storetest.Rotate(bg, e.Store, store.RotateRequest{ParentID: ss[1].ID,
		Child:    store.NewSession{Source: tg, SessionKey: k},
		Messages: []store.Message{{Role: store.RoleUser, Content: "summary of one, two, three", Summary: true}}})
	if err != nil {
		t.Fatal(err)
	}
	handle(t, e, dm("4", "4", "four"))
	e.Idle(t)
	rt, _ := e.Store.GetRoute(bg, k)
	if rt.SessionID != tip.ID {
		t.Fatalf("route = %s, want the tip %s", rt.SessionID, tip.ID)
	}
	if tr := e.Transcript(t, tip.ID); len(tr) < 2 || tr[len(tr)-2] != "u: four" {
		t.Fatalf("tip holds %q", tr)
	}
}

// A message during a running turn is queued (the user is told), answered after it, never
// interleaved; with the interrupt policy it cancels the running turn instead.
func TestBusyChat(t *testing.T) {
	t.Parallel()
	for _, policy := range []gateway.Busy{gateway.BusyQueue, gateway.BusyInterrupt} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			e := platformtest.New(t, platformtest.Options{Router: platform.Config{Busy: map[string]gateway.Busy{tg: policy}}})
			out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 4096})
			noticed := make(chan struct{})
			var once sync.Once
			out.Fail = func(op string, _ platform.Address, text string) error {
				if op == "send" && strings.Contains(text, "Queued") {
					once.Do(func() { close(noticed) })
				}
				return nil
			}
			e.Start(t, out)
			handle(t, e, dm("9", "1", "WAIT hold 2\nSAY first answer"))
			if err := e.Model.AwaitBarrier(bg, "hold", 1); err != nil {
				t.Fatal(err)
			}
			handle(t, e, dm("9", "2", "SAY second answer"))
			if policy == gateway.BusyQueue {
				<-noticed // the notice went before the second message's turn begins
				// Release the held turn with a second arrival from another chat.
				handle(t, e, dm("10", "x", "WAIT hold 2\nSAY release"))
			}
			e.Idle(t)
			s := onlySession(t, e, key(t, dm("9", "", "").Address))
			tr := e.Transcript(t, s.ID)
			texts := out.Texts("9", "")
			if policy == gateway.BusyQueue {
				want := []string{"u: WAIT hold 2\nSAY first answer", "a: first answer", "u: SAY second answer", "a: second answer"}
				if strings.Join(tr, "|") != strings.Join(want, "|") {
					t.Fatalf("transcript %q, want %q", tr, want)
				}
				var answers []string
				notices := 0
				for _, x := range texts {
					if strings.Contains(x, "Queued") {
						notices++
					} else {
						answers = append(answers, x)
					}
				}
				// The notice goes out beside the running turn: before or after its answer.
				if notices != 1 || strings.Join(answers, "|") != "first answer|second answer" {
					t.Fatalf("chat shows %q, want one queued notice and both answers in order", texts)
				}
				// The second answer's send says its user was told; the first's and the notice's do not.
				for _, m := range out.Messages("9", "") {
					if want := m.Text == "second answer"; m.Key.Noticed != want {
						t.Errorf("%q was sent with Noticed %v, want %v", m.Text, m.Key.Noticed, want)
					}
				}
				return
			}
			if len(texts) != 2 || !strings.Contains(texts[0], "interrupted") || texts[1] != "second answer" {
				t.Fatalf("chat shows %q, want the interrupted turn then the second answer", texts)
			}
			if tr[len(tr)-1] != "a: second answer" {
				t.Fatalf("transcript %q", tr)
			}
		})
	}
}

// On a platform that can mark a message (Marker: Discord's reaction), a message that finds its
// chat busy is marked instead of noticed (no message spent), once however often it is
// delivered, its reply is sent as noticed, and the mark comes off after that reply; a mark
// that fails falls back to the notice message.
func TestBusyChatMarks(t *testing.T) {
	t.Parallel()
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("mark fails %v", failing), func(t *testing.T) {
			t.Parallel()
			e := platformtest.New(t, platformtest.Options{})
			out := platformtest.NewMarking(tg, platform.Limits{MaxChars: 4096})
			if failing {
				out.FailMark = func(string) error { return fmt.Errorf("403 Missing Permissions") }
			}
			e.Start(t, out)
			handle(t, e, dm("9", "1", "WAIT hold 2\nSAY first answer"))
			if err := e.Model.AwaitBarrier(bg, "hold", 1); err != nil {
				t.Fatal(err)
			}
			second := dm("9", "2", "SAY second answer")
			handle(t, e, second)
			handle(t, e, second) // a redelivery while it waits
			// Release the held turn with a second arrival from another chat.
			handle(t, e, dm("10", "x", "WAIT hold 2\nSAY release"))
			e.Idle(t)
			handle(t, e, second) // and one after it was answered
			e.Idle(t)
			var answers, notices []string
			for _, m := range out.Messages("9", "") {
				if strings.Contains(m.Text, "Queued") {
					notices = append(notices, m.Text)
					continue
				}
				answers = append(answers, m.Text)
				if want := m.Text == "second answer"; m.Key.Noticed != want {
					t.Errorf("%q was sent with Noticed %v, want %v", m.Text, m.Key.Noticed, want)
				}
			}
			if strings.Join(answers, "|") != "first answer|second answer" {
				t.Fatalf("chat shows answers %q, want both in order", answers)
			}
			marks := strings.Join(out.Marks(), "|")
			if failing {
				if len(notices) != 1 || marks != "" {
					t.Fatalf("with marking failing: notices %q, marks %q; want one notice message and no mark", notices, marks)
				}
				return
			}
			if len(notices) != 0 || marks != "mark 9/2|unmark 9/2" {
				t.Fatalf("notices %q, marks %q; want no notice message, the second message marked once and unmarked", notices, marks)
			}
		})
	}
}

// A reply longer than the platform's limit goes out in chunks, each once; a redelivery after
// a failed second chunk sends only what is missing.
func TestChunksAndLedger(t *testing.T) {
	t.Parallel()
	e := platformtest.New(t, platformtest.Options{Router: platform.Config{RecoverEvery: -1}})
	out := platformtest.NewOutbound(tg, platform.Limits{MaxChars: 100})
	sends := 0
	out.Fail = func(op string, _ platform.Address, _ string) error {
		if op == "send" {
			sends++
			if sends == 2 {
				return fmt.Errorf("502 bad gateway")
			}
		}
		return nil
	}
	e.Start(t, out)
	para := strings.Repeat("lorem ipsum ", 7) // 84 runes
	handle(t, e, dm("5", "1", "SAY "+para+"\nSAY \nSAY "+para+"\nSAY \nSAY "+para))
	e.Idle(t)
	if got := out.Texts("5", ""); len(got) != 1 {
		t.Fatalf("after a failed second chunk: %q", got)
	}
	// The next process (or recovery pass) finishes the delivery without a second turn.
	e.Router.Recover(bg)
	e.Idle(t)
	got := out.Texts("5", "")
	if len(got) != 3 {
		t.Fatalf("chunks %q, want 3", got)
	}
	for _, c := range got {
		if strings.TrimSpace(c) != strings.TrimSpace(para) {
			t.Fatalf("chunk %q", c)
		}
	}
	s := onlySession(t, e, key(t, dm("5", "", "").Address))
	if tr := e.Transcript(t, s.ID); len(tr) != 2 {
		t.Fatalf("transcript %q: the turn ran again", tr)
	}
}
