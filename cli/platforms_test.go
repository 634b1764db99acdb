package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/platformfake/telegramfake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is a running `spool serve`; wait returns once it has exited (its one cmd.Wait runs on
// the goroutine servePlatform starts).
type served struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *served) wait() { <-s.done }

// servePlatform starts `spool serve` (a real process, the offline model) on home, whose config
// points a platform adapter at a fake, with env (the token variable) added; it returns the
// process and its stderr.
func servePlatform(t *testing.T, home string, env ...string) (*served, *lockedBuf) {
	t.Helper()
	cmd := exec.Command(spoolBin, "--home", home, "serve", "--listen", "127.0.0.1:0", "--provider", "fake")
	cmd.Env = append(cleanEnv(), env...)
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

// TestServeTelegram: spool serve answers a Telegram DM and a forum topic through its adapter; a
// SIGKILL in the middle of a turn loses nothing: the next process finishes that turn once,
// answers once, and the chats continue in their sessions.
func TestServeTelegram(t *testing.T) {
	t.Parallel()
	api := telegramfake.New(t, "42:secret-bot-token")
	home := t.TempDir()
	cfg := "platforms:\n  telegram:\n    token_env: TG_TEST_TOKEN\n    base_url: " + api.URL + "\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	first, errb := servePlatform(t, home, "TG_TEST_TOKEN=42:secret-bot-token")
	id := api.Push(7, "private", 0, 7, "SAY hello over telegram")
	api.WaitFor(t, "the first reply", func() bool { return len(api.Texts(7, 0)) == 1 })
	id = api.Push(-500, "supergroup", 3, 7, "WAIT held 2\nSAY the held answer")
	// The turn is running (its update was handed to the router, so it is in the inbox) when
	// the process is killed.
	api.WaitConfirmed(t, id-1)
	waitInbox(t, home, "-500:1")
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.wait()
	if strings.Contains(errb.String(), "secret-bot-token") {
		t.Fatalf("the token reached stderr:\n%s", errb.String())
	}

	second, errb2 := servePlatform(t, home, "TG_TEST_TOKEN=42:secret-bot-token")
	// The killed turn runs again in the new process (held at the barrier again); a message in
	// another chat arrives at the barrier too and releases it.
	last := api.Push(8, "private", 0, 8, "WAIT held 2\nSAY released")
	api.WaitFor(t, "both answers", func() bool { return len(api.Texts(-500, 3)) >= 1 && len(api.Texts(8, 0)) >= 1 })
	api.WaitConfirmed(t, last)
	if got := api.Texts(-500, 3); strings.Join(got, "|") != "the held answer" {
		t.Fatalf("topic shows %q, want the killed turn's answer once", got)
	}
	if got := api.Texts(7, 0); strings.Join(got, "|") != "hello over telegram" {
		t.Fatalf("DM shows %q", got)
	}
	id = api.Push(7, "private", 0, 7, "SAY and again")
	api.WaitFor(t, "the DM's second reply", func() bool { return len(api.Texts(7, 0)) == 2 })
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	second.wait()
	if !strings.Contains(errb2.String(), "platform telegram connected") {
		t.Fatalf("stderr:\n%s", errb2.String())
	}

	st, err := sqlite.Open(context.Background(), filepath.Join(home, "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for k, want := range map[string]int{"agent:main:telegram:dm:7": 4, "agent:main:telegram:thread:-500:3": 2} {
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

// waitInbox waits until the serve process recorded an event (a hang guard bounds it).
func waitInbox(t *testing.T, home, eventID string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(home, "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		un, err := st.UnfinishedInbound(context.Background(), "telegram", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range un {
			if e.EventID == eventID && e.State == store.InboundRunning {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes; not a verdict
	}
	t.Fatalf("event %s never started its turn", eventID)
}
