package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/platformfake/discordfake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// TestServeDiscordKilled: a `spool serve` killed (SIGKILL) while people write to the bot on
// Discord, which does not replay to the next process's new gateway session: the next process
// reads what was sent meanwhile from the channels' history and answers each message once, and
// answers none of the messages the killed one had answered again.
func TestServeDiscordKilled(t *testing.T) {
	t.Parallel()
	fake, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	fake.AddChannel("500", discordfake.GuildText, "")
	fake.AddChannel("600", discordfake.DMChannel, "")
	home := t.TempDir()
	cfg := "platforms:\n  discord:\n    token_env: DC_TEST_TOKEN\n    base_url: " + fake.URL + "\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, cond func(v discordfake.View) bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := fake.Wait(ctx, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	say := func(ch string, dm bool, text string) {
		fake.Say(discordfake.UserMessage{ChannelID: ch, DM: dm, AuthorID: "42", Username: "ann", Content: "SAY " + text})
	}

	first, errb := servePlatform(t, home, "DC_TEST_TOKEN="+fake.Token)
	wait("the first connection", func(v discordfake.View) bool { return v.Ready() == 1 })
	say("600", true, "one")
	say("500", false, "two")
	wait("the first answers", discordfake.HasPosted("one", "two"))
	// the bot's watermark is stored (it is written after the cursors of what was handed on)
	deadline := time.Now().Add(2 * time.Minute)
	for !hasWatermark(t, home, fake.BotID) {
		if time.Now().After(deadline) {
			t.Fatal("no watermark stored in two minutes")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.wait()
	wait("the killed process's socket to close", func(v discordfake.View) bool { return v.Ready() == 0 })
	say("600", true, "three, sent while no process ran")
	say("500", false, "four, sent while no process ran")
	// a channel and a thread made while no process ran: their first messages have no cursor
	fake.AddChannel("700", discordfake.GuildText, "")
	fake.AddChannel("710", discordfake.PublicThread, "500")
	say("700", false, "six, a new channel's first")
	say("710", false, "seven, a new thread's first")
	if strings.Contains(errb.String(), fake.Token) {
		t.Fatalf("the token reached stderr:\n%s", errb.String())
	}

	second, _ := servePlatform(t, home, "DC_TEST_TOKEN="+fake.Token)
	wait("the missed messages' answers", discordfake.HasPosted("three, sent while no process ran", "four, sent while no process ran",
		"six, a new channel's first", "seven, a new thread's first"))
	say("600", true, "five")
	wait("a live answer", discordfake.HasPosted("five"))
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	second.wait()

	fake.Inspect(func(v discordfake.View) {
		n := map[string]int{}
		for _, m := range v.Messages("") {
			n[m.ChannelID+": "+m.Content]++
		}
		for _, k := range []string{"600: one", "500: two", "600: three, sent while no process ran", "500: four, sent while no process ran", "600: five",
			"700: six, a new channel's first", "710: seven, a new thread's first"} {
			if n[k] != 1 {
				t.Errorf("%q answered %d times, want once (all: %v)", k, n[k], n)
			}
		}
	})
	st, err := sqlite.Open(context.Background(), filepath.Join(home, "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for k, want := range map[string]int{"agent:main:discord:dm:600": 6, "agent:main:discord:group:500:42": 4,
		"agent:main:discord:group:700:42": 2, "agent:main:discord:thread:500:710": 2} {
		rt, err := st.GetRoute(context.Background(), k)
		if err != nil {
			t.Fatalf("route %s: %v", k, err)
		}
		ms, err := st.Conversation(context.Background(), rt.SessionID, store.ViewActive)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != want {
			t.Fatalf("%s: %d messages, want %d (one turn per message)", k, len(ms), want)
		}
	}
}

// hasWatermark reports whether the Discord bot's watermark is in home's store.
func hasWatermark(t *testing.T, home, bot string) bool {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(home, "spool.db"), sqlite.Options{})
	if err != nil {
		return false
	}
	defer st.Close()
	_, err = st.Watermark(context.Background(), "discord", bot)
	return err == nil
}
