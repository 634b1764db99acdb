package discord

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
)

// syncBuf is a log sink the adapter's goroutines write to while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type nopHandler struct{}

func (nopHandler) Handle(context.Context, platform.Event) error { return nil }

// A dropped socket makes discordgo log its read error; the line reaches the adapter's Log at
// warning level (not stderr), and no line carries the token.
func TestDiscordgoLogRouted(t *testing.T) {
	fake, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	var buf syncBuf
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ad, err := New(Config{Token: fake.Token, BaseURL: fake.URL, HTTP: &http.Client{Timeout: 5 * time.Second}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ad.Run(ctx, nopHandler{}) }()
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if err := fake.Wait(wctx, func(v discordfake.View) bool { return v.Ready() == 1 }); err != nil {
		t.Fatal(err)
	}
	fake.Drop()
	for !strings.Contains(buf.String(), "level=WARN msg=\"discord: discordgo: error reading from gateway") {
		if wctx.Err() != nil {
			t.Fatalf("discordgo's read error never reached the log:\n%s", buf.String())
		}
		time.Sleep(time.Millisecond) // polling a condition
	}
	// a line that names the token (discordgo's IDENTIFY dump, were it logged) is redacted
	discordgoLine(discordgo.LogError, 0, "identify %#v", map[string]string{"token": "Bot " + fake.Token})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, fake.Token) {
		t.Errorf("the token reached the log:\n%s", out)
	}
	if !strings.Contains(out, "Bot [token]") {
		t.Errorf("the redacted line is missing:\n%s", out)
	}
	// after Run, the adapter hears no more of discordgo
	n := len(buf.String())
	discordgoLine(discordgo.LogError, 0, "after the end")
	if len(buf.String()) != n {
		t.Errorf("a line reached a stopped adapter's log")
	}
}
