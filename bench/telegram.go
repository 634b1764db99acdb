package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/gateway"
	plat "github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/telegram"
	"github.com/spoolhq/spool/gateway/telegram/telegramtest"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/turn"
)

// TelegramSoakConfig sizes the Telegram soak. Zero fields take defaults.
type TelegramSoakConfig struct {
	Dir      string        // scratch directory (required)
	Duration time.Duration // how long users keep writing (10m)
	Lanes    int           // concurrent chat lanes: DMs, group members, forum topics (24)
	Restarts int           // gateway restarts during the run (4; negative: none)
	NoFaults bool          // inject no faults and restart nothing (the added latency alone)
	Log      io.Writer     // progress; nil: none
	// Trace hears a debug log of the run: every push, the adapter's and router's steps, and
	// the inbox row and ledger of each lost message (nil: none).
	Trace io.Writer
}

// TelegramSoakReport is what `spool bench telegram` prints.
type TelegramSoakReport struct {
	Duration string `json:"duration"`
	Lanes    int    `json:"lanes"`
	Messages int    `json:"messages"`
	// Faults injected: 429 retry_after, 5xx, hung requests, redeliveries, restarts.
	RateLimits   int `json:"faults_429"`
	ServerErrors int `json:"faults_5xx"`
	Hangs        int `json:"faults_timeout"`
	Redeliveries int `json:"redeliveries"`
	Restarts     int `json:"restarts"`
	// The verdicts (all targets 0).
	Lost        int `json:"lost"`
	Duplicated  int `json:"duplicated_sends"`
	Interleaved int `json:"turns_interleaved"`
	MixedKeys   int `json:"keys_mixed"`
	// FirstSend is inbound update → the reply's first message at the fake Bot API (the first
	// streamed text), for messages sent to an idle lane. The offline model answers at once, so
	// it is all spool's (plus the fake API's HTTP round trips).
	FirstSend Latency `json:"first_send"`
	// LostExamples names up to ten lost messages (lane and number), to investigate.
	LostExamples []string `json:"lost_examples,omitempty"`
	// Unfinished are inbox events not done at the end (state, holder, claim), to investigate.
	Unfinished []string `json:"unfinished_inbox,omitempty"`
}

type tgLane struct {
	name         string
	chat, thread int64
	user         int64
	chatType     string
	addr         plat.Address
	sent         []string         // expected answers, in order
	updates      map[string]int64 // answer text → the update id that carried it
}

// tgGateway is one "process": store handle, gateway, router and bot on the shared file.
type tgGateway struct {
	st     store.Store
	g      *gateway.Gateway
	cancel context.CancelFunc
	done   chan error
}

func startTGGateway(dbPath string, api *telegramtest.API, model *fake.Model, log *slog.Logger) (*tgGateway, error) {
	st, err := sqlite.Open(context.Background(), dbPath, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	mk := func(wait time.Duration) (*agent.Agent, error) {
		return agent.New(agent.Deps{Store: st, Client: model, Config: agent.Config{Model: "fake",
			Compression: compress.DefaultConfig(), Lease: turn.Options{TTL: 30 * time.Second, Wait: wait}}})
	}
	run, err := mk(time.Millisecond)
	if err != nil {
		return nil, err
	}
	queue, err := mk(time.Minute)
	if err != nil {
		return nil, err
	}
	g, err := gateway.New(gateway.Deps{Store: st, Runner: run, Queue: queue, Config: gateway.Config{Model: "fake", MaxConcurrent: 1000}})
	if err != nil {
		return nil, err
	}
	holder := store.NewHolder().String()
	r, err := plat.NewRouter(plat.RouterDeps{Store: st, Turns: g, Log: log, Config: plat.Config{Holder: holder, RecoverEvery: 2 * time.Second}})
	if err != nil {
		return nil, err
	}
	bot, err := telegram.New(telegram.Options{Token: tgSoakToken, BaseURL: api.URL, Locks: st, Holder: holder, Log: log,
		HTTP: &http.Client{Timeout: 4 * time.Second}, PollTimeout: 2 * time.Second, LeaseTTL: 6 * time.Second, EditEvery: 200 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	sg := &tgGateway{st: st, g: g, cancel: cancel, done: make(chan error, 1)}
	go func() { sg.done <- r.Serve(ctx, bot) }()
	return sg, nil
}

func (sg *tgGateway) stop() error {
	sg.cancel()
	err := <-sg.done
	dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = sg.g.Drain(dctx)
	if cerr := sg.st.Close(); err == nil {
		err = cerr
	}
	return err
}

const tgSoakToken = "777:soak-token"

// tgInject injects one fault into the fake Bot API (a soak's tick), or none: a fault kind
// already queued and not yet met by a request is not queued again. Queued faults meet the
// next requests of their method, so a fault rate that ignores the traffic piles them up
// whenever requests pause (a restart, a poller in backoff): the backlog became a solid outage
// late in long runs (getUpdates failing through every retry for minutes, sendMessage hanging),
// and the soak ended with the last messages unfetched or undelivered. That is not a fault
// Telegram has; one pending fault per kind is.
func tgInject(api *telegramtest.API, rng *rand.Rand) string {
	queue := func(method string, ft telegramtest.Fault) bool {
		if api.Pending(method) > 0 {
			return false
		}
		api.Fail(method, 1, ft)
		return true
	}
	switch rng.IntN(10) {
	case 0:
		if queue("sendMessage", telegramtest.Fault{RetryAfter: 1 + rng.IntN(2)}) {
			return "429"
		}
	case 1:
		if queue("editMessageText", telegramtest.Fault{Status: 502}) {
			return "5xx"
		}
	case 2:
		if queue("getUpdates", telegramtest.Fault{Status: 500}) {
			return "5xx"
		}
	case 3:
		if queue("sendMessage", telegramtest.Fault{Hang: true}) {
			return "hang"
		}
	case 4:
		if c := api.Confirmed(); c > 3 {
			api.Unconfirm(c - 3) // the last three updates come again
			return "redelivery"
		}
	}
	return ""
}

// TelegramSoak runs the Telegram soak: Lanes users write to a Telegram bot (a local fake Bot
// API) served by the real adapter, router, gateway and agent on one SQLite file, each waiting
// for its answer before the next message (and now and then double-texting a busy chat), while
// faults are injected (429 retry_after 1-2 s, 5xx, requests that hang past the client's
// timeout, redelivered updates) and the gateway is restarted Restarts times. Then every chat
// and every session is checked: each message answered exactly once, in its own chat and lane's
// session, user and answer alternating.
func TelegramSoak(ctx context.Context, cfg TelegramSoakConfig) (TelegramSoakReport, error) {
	if cfg.Dir == "" {
		return TelegramSoakReport{}, errors.New("bench telegram: no scratch directory")
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Minute
	}
	if cfg.Lanes <= 0 {
		cfg.Lanes = 24
	}
	if cfg.Restarts < 0 || cfg.NoFaults {
		cfg.Restarts = 0
	} else if cfg.Restarts == 0 {
		cfg.Restarts = 4
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	diag := slog.New(slog.DiscardHandler)
	if cfg.Trace != nil {
		diag = slog.New(slog.NewTextHandler(cfg.Trace, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	api := telegramtest.Start(tgSoakToken)
	defer api.Close()
	model := fake.New(fake.Config{})
	dbPath := filepath.Join(cfg.Dir, "spool.db")
	rep := TelegramSoakReport{Duration: cfg.Duration.String(), Lanes: cfg.Lanes}

	lanes := make([]*tgLane, cfg.Lanes)
	for i := range lanes {
		l := &tgLane{user: int64(5000 + i)}
		switch i % 3 {
		case 0:
			l.chat, l.chatType = int64(5000+i), "private"
			l.addr = plat.Address{Platform: "telegram", ChatType: plat.DM, ChatID: fmt.Sprint(l.chat)}
		case 1: // two members per group, each their own session
			l.chat, l.chatType = int64(-1000-i/6), "supergroup"
			l.addr = plat.Address{Platform: "telegram", ChatType: plat.Group, ChatID: fmt.Sprint(l.chat), UserID: fmt.Sprint(l.user)}
		case 2: // two topics per forum
			l.chat, l.thread, l.chatType = int64(-2000-i/6), int64(10+i), "supergroup"
			l.addr = plat.Address{Platform: "telegram", ChatType: plat.Thread, ChatID: fmt.Sprint(l.chat), ThreadID: fmt.Sprint(l.thread)}
		}
		l.name = fmt.Sprintf("lane%02d", i)
		l.updates = map[string]int64{}
		lanes[i] = l
	}

	var (
		gwMu sync.Mutex
		gw   *tgGateway
	)
	var err error
	if gw, err = startTGGateway(dbPath, api, model, diag); err != nil {
		return rep, err
	}

	deadline := time.Now().Add(cfg.Duration)
	var latMu sync.Mutex
	var lats []time.Duration
	var messages atomic.Int64
	var wg sync.WaitGroup
	// waitAnswer waits for text in the lane's chat; it returns the first message's time.
	waitAnswer := func(l *tgLane, text string, limit time.Duration) (time.Time, bool) {
		end := time.After(limit)
		for {
			ch := api.Changed()
			for _, m := range api.Messages(l.chat, l.thread) {
				if m.Text == text {
					return m.At, true
				}
			}
			select {
			case <-ch:
			case <-end:
				return time.Time{}, false
			case <-ctx.Done():
				return time.Time{}, false
			}
		}
	}
	for _, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(l.user), 7))
			for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				text := fmt.Sprintf("%s m%d", l.name, n)
				pushed := time.Now()
				l.updates[text] = api.Push(l.chat, l.chatType, l.thread, l.user, "SAY "+text)
				diag.Info("soak: push", "text", text, "update", l.updates[text])
				l.sent = append(l.sent, text)
				messages.Add(1)
				double := rng.IntN(20) == 0
				if double { // double-texting: the second one finds the lane busy
					n++
					second := fmt.Sprintf("%s m%d", l.name, n)
					l.updates[second] = api.Push(l.chat, l.chatType, l.thread, l.user, "SAY "+second)
					diag.Info("soak: push", "text", second, "update", l.updates[second])
					l.sent = append(l.sent, second)
					messages.Add(1)
					text = second
				}
				at, ok := waitAnswer(l, text, 3*time.Minute)
				if !ok {
					diag.Warn("soak: no answer", "text", text, "update", l.updates[text], "confirmed", api.Confirmed())
				}
				if ok && !double && at.After(pushed) {
					latMu.Lock()
					lats = append(lats, at.Sub(pushed))
					latMu.Unlock()
				}
				time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond) // think time
			}
		}()
	}

	// Faults and restarts.
	faultStop := make(chan struct{})
	faultDone := make(chan struct{})
	go func() {
		defer close(faultDone)
		rng := rand.New(rand.NewPCG(1, 2))
		restartEvery := cfg.Duration / time.Duration(cfg.Restarts+1)
		nextRestart := time.Now().Add(restartEvery)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-faultStop:
				return
			case <-t.C:
			}
			if cfg.NoFaults {
				continue
			}
			if time.Now().Before(deadline) {
				switch tgInject(api, rng) {
				case "429":
					rep.RateLimits++
				case "5xx":
					rep.ServerErrors++
				case "hang":
					rep.Hangs++
				case "redelivery":
					rep.Redeliveries++
				}
			}
			if cfg.Restarts > 0 && rep.Restarts < cfg.Restarts && time.Now().After(nextRestart) {
				nextRestart = time.Now().Add(restartEvery)
				gwMu.Lock()
				if err := gw.stop(); err != nil {
					logf("restart: stop: %v", err)
				}
				if c := api.Confirmed(); c > 5 {
					api.Unconfirm(c - 5)
				}
				ng, err := startTGGateway(dbPath, api, model, diag)
				if err != nil {
					logf("restart: %v", err)
				} else {
					gw = ng
				}
				rep.Restarts++
				gwMu.Unlock()
				logf("bench telegram: restart %d, %d messages so far", rep.Restarts, messages.Load())
				diag.Info("soak: restarted", "n", rep.Restarts)
			}
		}
	}()
	wg.Wait()
	close(faultStop)
	<-faultDone
	// The last answers: every lane's messages answered (a lane gives up waiting after its
	// hang guard), then the last redeliveries and recoveries have finished.
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	for wctx.Err() == nil {
		ch := api.Changed()
		shown := map[string]bool{}
		for _, m := range api.All() {
			shown[m.Text] = true
		}
		missing := 0
		for _, l := range lanes {
			for _, s := range l.sent {
				if !shown[s] {
					missing++
				}
			}
		}
		if missing == 0 {
			break
		}
		select {
		case <-ch:
		case <-wctx.Done():
		}
	}
	wcancel()
	gwMu.Lock()
	stopErr := gw.stop()
	gwMu.Unlock()
	if stopErr != nil {
		logf("stop: %v", stopErr)
	}
	rep.Messages = int(messages.Load())
	rep.FirstSend = summarize(lats)

	// Verdicts: the chats.
	where := map[string]string{} // answer text → lane
	for _, l := range lanes {
		for _, s := range l.sent {
			where[s] = l.name
		}
	}
	seen := map[string]int{}
	for _, m := range api.All() {
		if strings.HasPrefix(m.Text, "⏳") {
			continue
		}
		owner, ok := where[m.Text]
		if !ok {
			continue
		}
		seen[m.Text]++
		var l *tgLane
		for _, x := range lanes {
			if x.name == owner {
				l = x
			}
		}
		if m.Chat != l.chat || m.Thread != l.thread {
			rep.MixedKeys++
		}
	}
	for text := range where {
		switch n := seen[text]; {
		case n == 0:
			rep.Lost++
			if len(rep.LostExamples) < 10 {
				rep.LostExamples = append(rep.LostExamples, text)
			}
		case n > 1:
			rep.Duplicated += n - 1
		}
	}
	// Verdicts: the sessions.
	st, err := sqlite.Open(context.Background(), dbPath, sqlite.Options{})
	if err != nil {
		return rep, err
	}
	defer st.Close()
	if un, err := st.UnfinishedInbound(context.Background(), "telegram", 0); err == nil {
		for _, e := range un {
			if len(rep.Unfinished) < 10 {
				var ev struct{ Text string }
				_ = json.Unmarshal(e.Payload, &ev)
				rep.Unfinished = append(rep.Unfinished, fmt.Sprintf("%s %q state=%s holder=%s until=%s", e.EventID, ev.Text, e.State, e.Holder, e.ClaimedUntil.Format(time.TimeOnly)))
			}
		}
	}
	for _, l := range lanes {
		for _, text := range l.sent {
			if seen[text] > 0 {
				continue
			}
			id := l.updates[text]
			var u struct {
				Message struct {
					MessageID int64 `json:"message_id"`
				} `json:"message"`
			}
			_ = json.Unmarshal(api.UpdateJSON(id), &u)
			evID := fmt.Sprintf("%d:%d", l.chat, u.Message.MessageID)
			in, _, ierr := st.ClaimInbound(context.Background(), "telegram", evID, "soak-check", time.Nanosecond)
			sends, _ := st.Sends(context.Background(), "telegram:"+evID)
			diag.Warn("soak: lost", "text", text, "update", id, "confirmed", api.Confirmed(), "event", evID, "inbox_err", ierr,
				"state", in.State, "holder", in.Holder, "session", in.SessionID, "reply", in.Reply, "sends", fmt.Sprint(sends))
		}
	}
	for _, l := range lanes {
		key, err := plat.DefaultPolicy.Key(l.addr)
		if err != nil {
			return rep, err
		}
		rt, err := st.GetRoute(context.Background(), key)
		if err != nil {
			return rep, fmt.Errorf("route %s: %w", key, err)
		}
		chain, err := st.Chain(context.Background(), rt.SessionID)
		if err != nil {
			return rep, err
		}
		for _, s := range chain {
			ms, err := st.Conversation(context.Background(), s.ID, store.ViewActive)
			if err != nil {
				return rep, err
			}
			var lastUser string
			for _, m := range ms {
				switch {
				case m.Summary:
				case m.Role == store.RoleUser:
					if lastUser != "" {
						rep.Interleaved++
					}
					lastUser = strings.TrimPrefix(m.Content, "SAY ")
					if !strings.HasPrefix(lastUser, l.name+" ") {
						rep.MixedKeys++
					}
				case m.Role == store.RoleAssistant && len(m.ToolCalls) == 0:
					if m.Content != lastUser {
						rep.Interleaved++
					}
					lastUser = ""
				}
			}
		}
	}
	if rep.Lost+rep.Duplicated+rep.Interleaved+rep.MixedKeys > 0 {
		return rep, fmt.Errorf("lost %d, duplicated %d, interleaved %d, keys mixed %d", rep.Lost, rep.Duplicated, rep.Interleaved, rep.MixedKeys)
	}
	return rep, nil
}
