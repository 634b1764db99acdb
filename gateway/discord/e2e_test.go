package discord_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/discord"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
)

func serveDiscord(t *testing.T, fake *discordfake.Server, o platformtest.Options) (*platformtest.Env, func()) {
	t.Helper()
	env := platformtest.New(t, o)
	_, stop := serveOn(t, env, fake, discord.Config{HTTP: &http.Client{Timeout: 2 * time.Second}})
	return env, stop
}

func waitFor(t *testing.T, f *discordfake.Server, cond func(v discordfake.View) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Wait(ctx, cond); err != nil {
		var all []discordfake.Posted
		f.Inspect(func(v discordfake.View) { all = v.Messages("") })
		t.Fatalf("%v; posted: %+v", err, all)
	}
}

func contents(ps []discordfake.Posted) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Content)
	}
	return strings.Join(out, "|")
}

// TestDiscordEndToEnd: a DM, a channel with two users (two sessions), a thread (shared, the
// reply in the thread), a duplicate delivery, a 429 of 30 s and a 5xx on replies, a reply
// over 2,000 characters split on its paragraphs, a busy turn's second message queued, and a
// restart mid-conversation that keeps the thread's session.
func TestDiscordEndToEnd(t *testing.T) {
	t.Parallel()
	fake, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	fake.AddChannel("500", discordfake.GuildText, "")
	fake.AddChannel("501", discordfake.PublicThread, "500")
	fake.AddChannel("600", discordfake.DMChannel, "")
	env, stop := serveDiscord(t, fake, platformtest.Options{})
	waitFor(t, fake, func(v discordfake.View) bool { return v.Ready() == 1 })

	id := fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "42", Content: "SAY dm answer"})
	fake.Redeliver(id)
	fake.Fail("POST messages", discordfake.Fault{Status: 429, RetryAfter: 30}, discordfake.Fault{Status: 502, After: true})
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "43", Content: "SAY ann's answer"})
	waitFor(t, fake, func(v discordfake.View) bool { return len(v.Messages("500")) == 1 })
	fake.Say(discordfake.UserMessage{ChannelID: "500", AuthorID: "44", Content: "SAY bob's answer"})
	para := strings.Repeat("word ", 300) // 1,500 characters
	fake.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "43", Content: "SAY " + strings.TrimSpace(para) + "\nSAY \nSAY " + strings.TrimSpace(para)})
	waitFor(t, fake, func(v discordfake.View) bool {
		return len(v.Messages("600")) == 1 && len(v.Messages("500")) == 2 && len(v.Messages("501")) == 2
	})
	env.Idle(t)
	fake.Inspect(func(v discordfake.View) {
		if got := contents(v.Messages("600")); got != "dm answer" {
			t.Errorf("DM %q", got)
		}
		if got := contents(v.Messages("500")); got != "ann's answer|bob's answer" {
			t.Errorf("channel %q", got)
		}
		th := v.Messages("501")
		if len(th) != 2 || strings.TrimSpace(th[0].Content) != strings.TrimSpace(para) || strings.TrimSpace(th[1].Content) != strings.TrimSpace(para) {
			t.Errorf("thread: %d messages (%d, %d characters)", len(th), len(th[0].Content), len(th[len(th)-1].Content))
		}
	})
	for k, n := range map[string]int{"agent:main:discord:dm:600": 2, "agent:main:discord:group:500:43": 2,
		"agent:main:discord:group:500:44": 2, "agent:main:discord:thread:500:501": 2} {
		ss := env.Sessions(t, k)
		if len(ss) != 1 || len(env.Transcript(t, ss[0].ID)) != n {
			t.Errorf("key %s: sessions %d", k, len(ss))
		}
	}

	// a busy thread: the second message is marked queued (a ⏳ reaction: no message spent),
	// answered after the first, and the mark comes off after its answer
	busy := func(barrier, first, second string) string {
		fake.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "43", Content: "WAIT " + barrier + " 2\nSAY " + first})
		if err := env.Model.AwaitBarrier(context.Background(), barrier, 1); err != nil {
			t.Fatal(err)
		}
		id := fake.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "45", Content: "SAY " + second})
		waitFor(t, fake, func(v discordfake.View) bool {
			return v.Reacted(id, discord.QueuedReaction) || strings.Contains(contents(v.Messages("501")), "Queued")
		})
		fake.Say(discordfake.UserMessage{ChannelID: "600", DM: true, AuthorID: "42", Content: "WAIT " + barrier + " 2\nSAY release"})
		waitFor(t, fake, discordfake.HasPosted(first, second))
		env.Idle(t)
		return id
	}
	second := busy("hold", "first", "second")
	fake.Inspect(func(v discordfake.View) {
		if got := contents(v.Messages("501")[2:]); got != "first|second" {
			t.Errorf("busy thread: %q, want the two answers and no notice message", got)
		}
		if v.ReactionsAdded() != 1 || v.Reacted(second, discord.QueuedReaction) {
			t.Errorf("reactions added %d, ⏳ still on the queued message %v: want one, taken off after its answer",
				v.ReactionsAdded(), v.Reacted(second, discord.QueuedReaction))
		}
	})
	// a bot that may not add reactions (403 Missing Permissions) tells the user by a message
	fake.Fail("PUT reactions", discordfake.Fault{Status: http.StatusForbidden})
	busy("hold2", "third", "fourth")
	fake.Inspect(func(v discordfake.View) {
		th := v.Messages("501")[4:]
		if len(th) != 3 || !strings.Contains(contents(th), "Queued") || !strings.Contains(contents(th), "third") || th[2].Content != "fourth" {
			t.Errorf("busy thread without reactions: %q, want a queued notice and both answers in order", contents(th))
		}
	})
	thread := env.Sessions(t, "agent:main:discord:thread:500:501")[0].ID

	// restart on the same database: the thread goes on in its session
	stop()
	env2, _ := serveDiscord(t, fake, platformtest.Options{DB: env.DB})
	waitFor(t, fake, func(v discordfake.View) bool { return v.Ready() == 1 })
	fake.Say(discordfake.UserMessage{ChannelID: "501", AuthorID: "43", Content: "SAY after the restart"})
	waitFor(t, fake, func(v discordfake.View) bool { return len(v.Messages("501")) == 8 })
	env2.Idle(t)
	ss := env2.Sessions(t, "agent:main:discord:thread:500:501")
	if len(ss) != 1 || ss[0].ID != thread {
		t.Fatalf("after the restart: %v, want %s", ss, thread)
	}
	if tr := env2.Transcript(t, thread); len(tr) != 12 || tr[11] != "a: after the restart" {
		t.Fatalf("transcript %q", tr)
	}
}
