package discord

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"
)

// discordgo's own log lines ("error reading from gateway ... websocket", "error reconnecting
// to gateway", heartbeat failures) go to the standard logger (stderr) unless its package-wide
// Logger hook is set. The adapter sets it once and hands each line to the Log of the adapters
// alive in this process (spool serve runs one Discord bot), at warning level for discordgo's
// errors and warnings (it retries them itself: a dropped socket is reconnected), info and
// debug below. A session logs only up to warnings (its LogLevel): discordgo's debug lines
// include the IDENTIFY payload, which holds the token. Every bot token known to the process
// is replaced by "[token]" in a line anyway, and a line is cut at 500 characters.
var dglog struct {
	once   sync.Once
	mu     sync.Mutex
	logs   map[*Adapter]*slog.Logger
	tokens map[string]int // token → adapters using it
}

const dglogMax = 500

// hookDiscordgoLog routes discordgo's log lines to a's log, with a's token redacted.
func hookDiscordgoLog(a *Adapter) {
	dglog.once.Do(func() {
		dglog.logs, dglog.tokens = map[*Adapter]*slog.Logger{}, map[string]int{}
		discordgo.Logger = discordgoLine
	})
	dglog.mu.Lock()
	defer dglog.mu.Unlock()
	if _, ok := dglog.logs[a]; !ok {
		dglog.tokens[a.token]++
	}
	dglog.logs[a] = a.log
}

// unhookDiscordgoLog stops handing discordgo's lines to a's log.
func unhookDiscordgoLog(a *Adapter) {
	dglog.mu.Lock()
	defer dglog.mu.Unlock()
	if _, ok := dglog.logs[a]; !ok {
		return
	}
	delete(dglog.logs, a)
	if dglog.tokens[a.token]--; dglog.tokens[a.token] <= 0 {
		delete(dglog.tokens, a.token)
	}
}

// discordgoLine is discordgo.Logger: one line, redacted, to every live adapter's log. With no
// adapter alive (a line from a reconnect loop that outlived its Run) it goes nowhere.
func discordgoLine(level, _ int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	dglog.mu.Lock()
	for tok := range dglog.tokens {
		if tok != "" {
			msg = strings.ReplaceAll(msg, tok, "[token]")
		}
	}
	logs := make([]*slog.Logger, 0, len(dglog.logs))
	for _, l := range dglog.logs {
		logs = append(logs, l)
	}
	dglog.mu.Unlock()
	msg = strings.TrimSpace(msg)
	if len(msg) > dglogMax {
		msg = strings.ToValidUTF8(msg[:dglogMax], "") + "…"
	}
	lv := slog.LevelDebug
	switch level {
	case discordgo.LogError, discordgo.LogWarning:
		lv = slog.LevelWarn
	case discordgo.LogInformational:
		lv = slog.LevelInfo
	}
	for _, l := range logs {
		l.Log(context.Background(), lv, "discord: discordgo: "+msg, "discordgo_level", level)
	}
}
