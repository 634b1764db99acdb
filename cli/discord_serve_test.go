package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/gateway/discord/discordfake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// serveDiscord starts `spool serve` (a real process, the offline model) with its Discord
// adapter pointed at the fake whose token is in DC_TEST_TOKEN.
func serveDiscord(t *testing.T, home, token string) (*served, *lockedBuf) {
	t.Helper()
	cmd := exec.Command(spoolBin, "--home", home, "serve", "--listen", "127.0.0.1:0", "--provider", "fake")
	cmd.Env = append(cleanEnv(), "DC_TEST_TOKEN="+token)
	errb := &lockedBuf{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s, errb
}

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
	answered := func(texts ...string) func(v discordfake.View) bool {
		return func(v discordfake.View) bool {
			have := map[string]bool{}
			for _, m := range v.Messages("") {
				have[m.Content] = true
			}
			for _, x := range texts {
				if !have[x] {
					return false
				}
			}
			return true
		}
	}
	say := func(ch string, dm bool, text string) {
		fake.Say(discordfake.UserMessage{ChannelID: ch, DM: dm, AuthorID: "42", Username: "ann", Content: "SAY " + text})
	}

	first, errb := serveDiscord(t, home, fake.Token)
	wait("the first connection", func(v discordfake.View) bool { return v.Ready() == 1 })
	say("600", true, "one")
	say("500", false, "two")
	wait("the first answers", answered("one", "two"))
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.wait()
	wait("the killed process's socket to close", func(v discordfake.View) bool { return v.Ready() == 0 })
	say("600", true, "three, sent while no process ran")
	say("500", false, "four, sent while no process ran")
	if strings.Contains(errb.String(), fake.Token) {
		t.Fatalf("the token reached stderr:\n%s", errb.String())
	}

	second, _ := serveDiscord(t, home, fake.Token)
	wait("the missed messages' answers", answered("three, sent while no process ran", "four, sent while no process ran"))
	say("600", true, "five")
	wait("a live answer", answered("five"))
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	second.wait()

	fake.Inspect(func(v discordfake.View) {
		n := map[string]int{}
		for _, m := range v.Messages("") {
			n[m.ChannelID+": "+m.Content]++
		}
		for _, k := range []string{"600: one", "500: two", "600: three, sent while no process ran", "500: four, sent while no process ran", "600: five"} {
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
	for k, want := range map[string]int{"agent:main:discord:dm:600": 6, "agent:main:discord:group:500:42": 4} {
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
