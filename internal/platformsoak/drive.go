package platformsoak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/spoolhq/spool/internal/platformfake/discordfake"
	"github.com/spoolhq/spool/internal/platformfake/slackfake"
)

// drive runs the gateway for cfg.Duration: every lane sends at its rate (with bursts and
// duplicate deliveries), faults are injected and the gateway restarts, until the deadline.
func (s *soak) drive(ctx context.Context) error {
	in, err := startSoakInstance(s.db, s.model, s.fk, s.cfg, &s.ids)
	if err != nil {
		return err
	}
	s.cur.Store(in)
	s.start = time.Now()
	runCtx, stopRun := context.WithDeadline(ctx, s.start.Add(s.cfg.Duration))
	defer stopRun()
	var wg sync.WaitGroup
	mean := time.Duration(float64(len(s.lanes)) / s.cfg.Rate * float64(time.Second))
	for i, l := range s.lanes {
		wg.Go(func() { s.sendLane(ctx, runCtx, l, rand.New(rand.NewPCG(s.cfg.Seed, uint64(i))), mean) })
	}
	if s.cfg.FaultEvery > 0 {
		wg.Go(func() { s.injectFaults(runCtx) })
	}
	if s.cfg.RestartEvery > 0 {
		wg.Go(func() { s.restarts(runCtx, stopRun) })
	}
	s.logProgress(runCtx)
	wg.Wait()
	if s.restartErr != nil {
		return fmt.Errorf("platform soak: restart: %w", s.restartErr)
	}
	s.rep.DuplicateDeliveries = int(s.dups.Load())
	return nil
}

// sendLane sends lane l's messages, exponentially spaced around mean (a Telegram group's at
// its share of the rate), some in bursts of two, until runCtx ends.
func (s *soak) sendLane(ctx, runCtx context.Context, l *soakLane, rng *rand.Rand, mean time.Duration) {
	for n := 1; ; n++ {
		wait := time.Duration(rng.ExpFloat64() * float64(mean))
		if l.platform == "telegram" && l.tgChat < 0 {
			wait = time.Duration(float64(wait) / s.cfg.TelegramGroupShare)
		}
		select {
		case <-runCtx.Done():
			return
		case <-time.After(wait):
		}
		s.send(ctx, l, n, rng)
		if rng.Float64() < s.cfg.BurstShare {
			n++
			s.send(ctx, l, n, rng)
		}
	}
}

// send delivers message n of lane l on its platform, and at cfg.DupShare delivers it again.
func (s *soak) send(ctx context.Context, l *soakLane, n int, rng *rand.Rand) {
	text := fmt.Sprintf("SAY %s#%d", l.name, n)
	user := l.users[n%len(l.users)]
	switch {
	case l.platform == "telegram":
		s.sendTelegram(l, n, user, text, rng)
	case l.slack:
		s.sendSlack(ctx, l, n, user, text, rng)
	default:
		s.sendDiscord(ctx, l, n, user, text, rng)
	}
}

func (s *soak) sendTelegram(l *soakLane, n int, user, text string, rng *rand.Rand) {
	tg := s.fk.tg
	uid, _ := strconv.ParseInt(user, 10, 64)
	at := time.Now()
	tg.Push(l.tgChat, l.tgType, l.tgTopic, uid, text)
	l.record(n, at)
	if rng.Float64() < s.cfg.DupShare {
		// Telegram redelivers what was not confirmed: the updates since the last confirmed
		// offset but one come again.
		if c := tg.Confirmed(); c > 1 {
			s.dups.Add(1)
			tg.Unconfirm(c - 1)
		}
	}
}

func (s *soak) sendSlack(ctx context.Context, l *soakLane, n int, user, text string, rng *rand.Rand) {
	ct := "channel"
	if l.dm {
		ct = "im"
	}
	body := s.fk.sf.Event(&slackfake.Message{Channel: l.channel, ChannelType: ct, User: user, Text: text, ThreadTS: l.thread})
	deliver := func(retry int) (time.Time, bool) {
		for ; ; retry++ {
			at := time.Now()
			st, err := slackfake.Post(ctx, s.hc, s.cur.Load().url, s.fk.secret, at, body, retry)
			if err == nil && st == http.StatusOK {
				return at, true
			}
			if ctx.Err() != nil {
				return time.Time{}, false
			}
			time.Sleep(100 * time.Millisecond) // Slack's retry (faster than its 1 min)
		}
	}
	at, ok := deliver(0)
	if !ok {
		return
	}
	l.record(n, at)
	if rng.Float64() < s.cfg.DupShare {
		s.dups.Add(1)
		deliver(1)
	}
}

func (s *soak) sendDiscord(ctx context.Context, l *soakLane, n int, user, text string, rng *rand.Rand) {
	df := s.fk.df
	s.discordGate.RLock()
	defer s.discordGate.RUnlock()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	err := df.Wait(wctx, func(v discordfake.View) bool { return v.Ready() >= 1 || s.discordCut.Load() })
	cancel()
	if err != nil {
		return
	}
	at := time.Now()
	id := df.Say(discordfake.UserMessage{ChannelID: l.channel, DM: l.dm, AuthorID: user, Username: "user" + user, Content: text})
	l.record(n, at)
	if rng.Float64() < s.cfg.DupShare {
		s.dups.Add(1)
		df.Redeliver(id)
	}
}

// record notes message n as delivered at at.
func (l *soakLane) record(n int, at time.Time) {
	l.mu.Lock()
	l.sent = append(l.sent, soakMsg{n: n, at: at})
	l.mu.Unlock()
}

// injectFaults injects one platform fault every cfg.FaultEvery, counting them by kind.
func (s *soak) injectFaults(runCtx context.Context) {
	rng := rand.New(rand.NewPCG(s.cfg.Seed, 1<<40))
	kinds := soakFaultKinds(s.fk)
	t := time.NewTicker(s.cfg.FaultEvery)
	defer t.Stop()
	for {
		select {
		case <-runCtx.Done():
			return
		case <-t.C:
		}
		if k := injectFault(kinds, rng); k != "" {
			s.faultMu.Lock()
			s.rep.Faults[k]++
			s.faultMu.Unlock()
		}
	}
}

// restarts restarts the gateway every cfg.RestartEvery; a failed restart ends the run.
func (s *soak) restarts(runCtx context.Context, stopRun context.CancelFunc) {
	t := time.NewTicker(s.cfg.RestartEvery)
	defer t.Stop()
	for {
		select {
		case <-runCtx.Done():
			return
		case <-t.C:
		}
		if err := s.restart(); err != nil {
			s.restartErr = err
			stopRun()
			return
		}
	}
}

// restart stops the gateway and starts another on the same database. Every
// DiscordAbruptEvery-th restart (the first included) is a crash for Discord: the bot's socket
// cut and its session forgotten while people go on writing. The outage is noted.
func (s *soak) restart() error {
	df, tg := s.fk.df, s.fk.tg
	abrupt := df != nil && s.cfg.DiscordAbruptEvery > 0 && s.rep.Restarts%s.cfg.DiscordAbruptEvery == 0
	down := time.Now()
	if abrupt {
		df.Refuse(1 << 30) // its reconnects fail: nothing more is read
		s.discordCut.Store(true)
		df.Expire() // the socket cut, the session forgotten: no replay to the next one
	} else {
		s.discordGate.Lock()
	}
	defer func() {
		if abrupt {
			df.Accept()
			s.discordCut.Store(false)
		} else {
			s.discordGate.Unlock()
		}
	}()
	err := s.cur.Load().stop()
	if tg != nil {
		if c := tg.Confirmed(); c > 3 {
			tg.Unconfirm(c - 3) // the last confirmations never reached Telegram
		}
	}
	if err != nil {
		return err
	}
	if abrupt {
		df.Accept() // the new process may connect
	}
	next, err := startSoakInstance(s.db, s.model, s.fk, s.cfg, &s.ids)
	if err != nil {
		return err
	}
	s.cur.Store(next)
	s.outages = append(s.outages, [2]time.Time{down, time.Now()})
	s.rep.Restarts++
	if abrupt {
		s.rep.DiscordAbrupt++
	}
	s.logf("restart %d at %s", s.rep.Restarts, time.Since(s.start).Round(time.Millisecond))
	return nil
}

// logProgress logs the messages sent every 30 s until runCtx ends.
func (s *soak) logProgress(runCtx context.Context) {
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	for {
		select {
		case <-runCtx.Done():
			return
		case <-progress.C:
		}
		n := 0
		for _, l := range s.lanes {
			l.mu.Lock()
			n += len(l.sent)
			l.mu.Unlock()
		}
		s.logf("%s: %d messages sent", time.Since(s.start).Round(time.Second), n)
	}
}
