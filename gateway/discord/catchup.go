package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/spoolhq/spool/store"
)

// Catch-up. Discord's gateway does not replay to a new session what it sent while no bot was
// connected (a crash, the moment of a restart, a reconnect Discord did not let resume), and
// discordgo keeps the session id and sequence a RESUME from the next process would need
// unexported. So the adapter keeps, per channel, the newest message id it handed on (a read
// cursor in the store), and on every new session (READY) reads each known channel's history
// after it (GET /channels/{id}/messages?after=ID&limit=100, paged; Discord returns a page
// newest first, so it is sorted before it is handed on) and hands on what it missed through
// the same Handler, whose inbox drops what was handed on before. A live message arriving in a
// channel whose history is being read waits and follows it, so a chat's messages keep their
// order. Channels learned during a session (a new thread, a DM) get their cursor with their
// first message. A cursor not advanced for InboundRetention is not read (the inbox no longer
// remembers what came before it).
//
// A channel whose first message came while no process was connected has no cursor. For those
// the adapter keeps a per-bot watermark (the store's store.Watermark of the bot): a
// snowflake before which every person's message Discord sent while a process was connected
// was handed on, or failed and left its channel a cursor before it. It is the newest snowflake
// seen on the socket or in a create's answer (Discord's clock) less watermarkMargin, and never
// past a message still being handed on; it is written only after the channel cursors of the
// same batch were. On a new session the guilds' GUILD_CREATE lists their channels and active
// threads with their newest message id: each one without a cursor whose newest message is past
// the watermark is read after it. A first start (no watermark) replays nothing. A DM's first
// message while no process was connected stays unread: Discord lists no DM channels to a bot.
//
// A channel held after a failure (a hand-on the Handler refused, a catch-up that failed) is
// read again after a backoff (2 s, doubling to a minute) within the session, not only at the
// next one.
//
// The cursor is a lower bound: it moves past a message only once the Handler took it (the
// inbox row is durable), it is written in the background (a crash loses at most the last
// writes, and reading those messages again makes no second turn), and a message the Handler
// never took holds its channel's cursor before it until a catch-up reads it again.

// historyPage is Discord's maximum page of GET /channels/{id}/messages.
const historyPage = 100

// cursorState is the adapter's view of its read cursors.
type cursorState struct {
	mu      sync.Mutex
	bot     string
	loaded  bool // the store's cursors were read: writes are allowed from then on
	noStore bool // reading them failed: nothing is written (the next process reads from the old ones)
	chans   map[string]*chanCursor
	epoch   int               // new sessions seen
	dirty   map[string]string // channel → cursor to write
	wake    chan struct{}     // the writer has work
	catch   chan struct{}     // the catch-up loop has work

	seen      string         // the newest snowflake seen (socket, create answers)
	inflight  map[string]int // person's messages being handed on (from the socket)
	wm        string         // the watermark: stored, then as computed (watermarkFrom)
	wmWritten string         // the watermark last written
}

// watermarkMargin is how far behind the newest snowflake seen the watermark stays: a message
// Discord made that long before one the bot saw has reached the socket.
const watermarkMargin = 10 * time.Second

// discordEpochMs is the snowflakes' epoch (2015-01-01) in Unix milliseconds.
const discordEpochMs = 1420070400000

// snowTime is a snowflake's time (zero if id is not one).
func snowTime(id string) time.Time {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(n>>22) + discordEpochMs)
}

// snowBefore is the snowflake d before id ("" if there is none).
func snowBefore(id string, d time.Duration) string {
	n, err := strconv.ParseUint(id, 10, 64)
	sub := uint64(d.Milliseconds()) << 22
	if err != nil || n <= sub {
		return ""
	}
	return strconv.FormatUint(n-sub, 10)
}

type chanCursor struct {
	safe     string // every message up to this id was handed on (or is no person's)
	at       time.Time
	want     int  // the newest session whose gap is still to read
	catching bool // its history is being read: live messages wait in buf
	buf      []*discordgo.Message
	held     bool      // a message was not handed on: safe stays before it
	fails    int       // failures in a row (the retry's backoff)
	retryAt  time.Time // when a held channel is read again (zero: not scheduled)
}

func (c *cursorState) init() {
	c.chans, c.dirty, c.inflight = map[string]*chanCursor{}, map[string]string{}, map[string]int{}
	c.wake, c.catch = make(chan struct{}, 1), make(chan struct{}, 1)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *cursorState) botID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bot
}

// saw notes a snowflake Discord made (a message on the socket, a create's answer).
func (c *cursorState) saw(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if later(id, c.seen) {
		c.seen = id
		if w := snowBefore(id, watermarkMargin); w != "" && snowTime(w).Sub(snowTime(c.wmWritten)) >= time.Second {
			signal(c.wake)
		}
	}
}

// begin and end bracket a person's message being handed on: the watermark stays before it.
func (c *cursorState) begin(id string) {
	c.mu.Lock()
	c.inflight[id]++
	c.mu.Unlock()
}

func (c *cursorState) end(id string) {
	c.mu.Lock()
	if c.inflight[id]--; c.inflight[id] <= 0 {
		delete(c.inflight, id)
	}
	c.mu.Unlock()
}

// watermarkNow is the watermark the state allows now (under c.mu): the newest snowflake seen
// less the margin, before every message in hand, never behind the one known.
func (c *cursorState) watermarkNow() string {
	w := snowBefore(c.seen, watermarkMargin)
	for id := range c.inflight {
		if b := snowBefore(id, time.Millisecond); later(w, b) {
			w = b
		}
	}
	if later(w, c.wm) {
		c.wm = w
	}
	return c.wm
}

// hold keeps a live message back while its channel's history is read; it reports whether it did.
func (c *cursorState) hold(m *discordgo.Message) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc := c.chans[m.ChannelID]; cc != nil && cc.catching {
		cc.buf = append(cc.buf, m)
		return true
	}
	return false
}

// handed moves a channel's cursor past id (the Handler took that message, or it is no person's).
func (c *cursorState) handed(channel, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.chans[channel]
	if cc == nil {
		cc = &chanCursor{}
		c.chans[channel] = cc
	}
	if cc.held || !later(id, cc.safe) {
		return
	}
	cc.safe, cc.at = id, time.Now()
	c.dirty[channel] = id
	signal(c.wake)
}

// failed holds a channel's cursor where it is: message id there ("" = some message) was not
// handed on. A channel's first message gets a cursor just before it, so the next catch-up
// reads it.
func (c *cursorState) failed(channel, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.chans[channel]
	if cc == nil {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil || n == 0 {
			return
		}
		cc = &chanCursor{safe: strconv.FormatUint(n-1, 10), at: time.Now()}
		c.chans[channel] = cc
		c.dirty[channel] = cc.safe
		signal(c.wake)
	}
	cc.held = true
	cc.fails++
	cc.retryAt = time.Now().Add(min(time.Minute, time.Duration(1<<min(cc.fails, 6))*time.Second))
	signal(c.catch)
}

// retrying: the channel is held, not being read, and has a read again scheduled.
func (cc *chanCursor) retrying() bool {
	return cc.held && !cc.catching && !cc.retryAt.IsZero() && cc.safe != ""
}

// retryIn is how long until the next held channel is due to be read again (-1: none).
func (c *cursorState) retryIn(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := time.Duration(-1)
	for _, cc := range c.chans {
		if cc.retrying() {
			if w := max(0, cc.retryAt.Sub(now)); d < 0 || w < d {
				d = w
			}
		}
	}
	return d
}

// retryDue makes the held channels that are due read again; it reports whether there were any.
func (c *cursorState) retryDue(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cc := range c.chans {
		if cc.retrying() && !cc.retryAt.After(now) {
			cc.retryAt, cc.want, cc.catching = time.Time{}, c.epoch, true
			n++
		}
	}
	return n > 0
}

// later reports whether snowflake a comes after b (decimal ids: a longer one is later).
func later(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// onReady starts a new session's catch-up: the store's cursors are read at the first one (in
// the gateway's event order, before any message of the session is handed on), and every known
// channel's history is read after its cursor.
func (a *Adapter) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	a.mu.Lock()
	running := a.h != nil
	a.mu.Unlock()
	c := &a.cur
	c.mu.Lock()
	if r.User != nil {
		c.bot = r.User.ID
	}
	bot, loaded := c.bot, c.loaded || c.noStore
	c.mu.Unlock()
	if !running || a.cursors == nil || bot == "" {
		return
	}
	if !loaded {
		stored, wm, err := a.loadCursors(bot)
		c.mu.Lock()
		if err != nil {
			c.noStore = true // catch up on what this process saw; write nothing
			a.count("cursor_read_failed")
			a.log.Warn("discord: read cursors unreadable: no catch-up of what came before this process", "err", err)
		} else {
			c.loaded = true
			if wm.LastID != "" && time.Since(wm.UpdatedAt) < store.InboundRetention && later(wm.LastID, c.wm) {
				c.wm, c.wmWritten = wm.LastID, wm.LastID
			}
			for _, sc := range stored {
				if c.chans[sc.Channel] == nil {
					c.chans[sc.Channel] = &chanCursor{safe: sc.LastID, at: sc.UpdatedAt}
				}
			}
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.epoch++
	n := 0
	for _, cc := range c.chans {
		if cc.safe != "" && time.Since(cc.at) < store.InboundRetention {
			cc.want, cc.catching = c.epoch, true
			n++
		}
	}
	epoch := c.epoch
	c.mu.Unlock()
	a.log.Debug("discord: new session: catching up", "session", r.SessionID, "epoch", epoch, "channels", n)
	signal(c.catch)
}

// onGuildCreate reads, after the watermark, each of a guild's channels and active threads that
// has no cursor and whose newest message is past the watermark: their first messages came
// while no process was connected. GUILD_CREATE follows READY (and the cursors' load) in the
// gateway's event order.
func (a *Adapter) onGuildCreate(_ *discordgo.Session, g *discordgo.GuildCreate) {
	a.mu.Lock()
	running := a.h != nil
	a.mu.Unlock()
	if !running || a.cursors == nil || g.Guild == nil {
		return
	}
	c := &a.cur
	c.mu.Lock()
	w := c.watermarkNow()
	if w == "" || (!c.loaded && !c.noStore) || time.Since(snowTime(w)) >= store.InboundRetention {
		c.mu.Unlock()
		return
	}
	n := 0
	for _, ch := range append(append([]*discordgo.Channel{}, g.Channels...), g.Threads...) {
		if ch == nil || ch.ID == "" || c.chans[ch.ID] != nil || !later(ch.LastMessageID, w) {
			continue
		}
		switch ch.Type {
		case discordgo.ChannelTypeGuildCategory, discordgo.ChannelTypeGuildForum, discordgo.ChannelTypeGuildDirectory:
			continue // no messages of their own
		}
		c.chans[ch.ID] = &chanCursor{safe: w, at: time.Now(), want: c.epoch, catching: true}
		c.dirty[ch.ID] = w // a cursor of its own from now on
		n++
	}
	c.mu.Unlock()
	if n > 0 {
		a.count("new_channels_caught_up")
		a.log.Debug("discord: channels without a cursor: reading after the watermark", "guild", g.ID, "channels", n, "watermark", w)
		signal(c.wake)
		signal(c.catch)
	}
}

// background is Run's goroutines for the cursors: the catch-up loop and the writer.
type background struct {
	cancel     context.CancelFunc
	stopWriter chan struct{}
	wg         sync.WaitGroup
}

// stop waits for the catch-up loop (it ends with Run's context), then lets the writer write
// what is left and waits for it.
func (b *background) stop() {
	if b == nil {
		return
	}
	b.cancel()
	close(b.stopWriter)
	b.wg.Wait()
}

func (a *Adapter) startBackground(ctx context.Context) *background {
	if a.cursors == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, stopWriter: make(chan struct{})}
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		for {
			var retry <-chan time.Time
			var timer *time.Timer
			if d := a.cur.retryIn(time.Now()); d >= 0 {
				timer = time.NewTimer(d)
				retry = timer.C
			}
			select {
			case <-ctx.Done():
				if timer != nil {
					timer.Stop()
				}
				return
			case <-a.cur.catch:
			case <-retry:
				if a.cur.retryDue(time.Now()) {
					a.count("held_channel_retries")
				}
			}
			if timer != nil {
				timer.Stop() // not deferred: this loop runs for the adapter's life
			}
			a.catchUp(ctx)
		}
	}()
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stopWriter:
				a.writeCursors()
				return
			case <-a.cur.wake:
				a.writeCursors()
			}
		}
	}()
	return b
}

// loadCursors reads a bot's stored read cursors and watermark (none: a zero Watermark), trying
// three times.
func (a *Adapter) loadCursors(bot string) ([]store.ReadCursor, store.Watermark, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var cs []store.ReadCursor
		var wm store.Watermark
		cs, err = a.cursors.ReadCursors(ctx, Platform, bot)
		if err == nil {
			wm, err = a.cursors.Watermark(ctx, Platform, bot)
			if errors.Is(err, store.ErrNotFound) {
				wm, err = store.Watermark{}, nil
			}
		}
		cancel()
		if err == nil {
			return cs, wm, nil
		}
	}
	return nil, store.Watermark{}, err
}

// writeCursors writes the cursors that moved.
func (a *Adapter) writeCursors() {
	c := &a.cur
	c.mu.Lock()
	if !c.loaded || c.bot == "" {
		c.mu.Unlock()
		return
	}
	wm := c.watermarkNow()
	if len(c.dirty) == 0 && !later(wm, c.wmWritten) {
		c.mu.Unlock()
		return
	}
	todo, bot := c.dirty, c.bot
	c.dirty = map[string]string{}
	c.mu.Unlock()
	ok := true
	for ch, id := range todo {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := a.cursors.AdvanceReadCursor(ctx, store.ReadCursor{Platform: Platform, Bot: bot, Channel: ch, LastID: id})
		cancel()
		if err != nil {
			ok = false
			a.count("cursor_write_failed")
			c.mu.Lock()
			if _, newer := c.dirty[ch]; !newer {
				c.dirty[ch] = id // the next write tries again
			}
			c.mu.Unlock()
		}
	}
	// the watermark only once the channels' cursors it relies on are stored
	if !ok || wm == "" || !later(wm, c.wmWritten) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := a.cursors.AdvanceWatermark(ctx, store.Watermark{Platform: Platform, Bot: bot, LastID: wm})
	cancel()
	if err != nil {
		a.count("cursor_write_failed")
		return
	}
	c.mu.Lock()
	if later(wm, c.wmWritten) {
		c.wmWritten = wm
	}
	c.mu.Unlock()
}

// catchUp reads the history of every channel waiting for it, the most recently active first.
func (a *Adapter) catchUp(ctx context.Context) {
	for ctx.Err() == nil {
		c := &a.cur
		c.mu.Lock()
		var next string
		var at time.Time
		for ch, cc := range c.chans {
			if cc.catching && (next == "" || cc.at.After(at)) {
				next, at = ch, cc.at
			}
		}
		c.mu.Unlock()
		if next == "" {
			return
		}
		a.catchUpChannel(ctx, next)
	}
}

// catchUpChannel reads one channel's history after its cursor and hands on the people's
// messages in it, then the live ones that waited, until no new session asks again; the
// channel is live again when it returns (unless Run is stopping).
func (a *Adapter) catchUpChannel(ctx context.Context, ch string) {
	c := &a.cur
	c.mu.Lock()
	cc := c.chans[ch]
	c.mu.Unlock()
read:
	for ctx.Err() == nil {
		c.mu.Lock()
		epoch, after := cc.want, cc.safe
		cc.held = false
		c.mu.Unlock()
		err := a.readHistory(ctx, ch, after)
		if ctx.Err() != nil {
			a.log.Debug("discord: catch-up stopped", "channel", ch, "after", after)
			return // stopping: what is not handed on stays after the cursor
		}
		a.log.Debug("discord: caught up", "channel", ch, "after", after, "err", err)
		if err == nil {
			c.mu.Lock()
			if !cc.held {
				cc.fails = 0
			}
			c.mu.Unlock()
		} else {
			a.log.Warn("discord: catch-up failed: read again after a backoff", "channel", ch, "err", err)
			a.count("catch_up_failed")
			c.failed(ch, "") // the gap is read again after the backoff, or at the next session
		}
		// the live messages that waited, then the channel is live again
		for {
			c.mu.Lock()
			if cc.want > epoch {
				c.mu.Unlock()
				continue read // a newer session's gap
			}
			buf := cc.buf
			cc.buf = nil
			if len(buf) == 0 {
				cc.catching = false
				c.mu.Unlock()
				return
			}
			safe, held := cc.safe, cc.held
			c.mu.Unlock()
			for _, m := range buf {
				if !held && !later(m.ID, safe) {
					continue // already in the history read
				}
				if !a.deliver(ctx, m, m.GuildID == "", "received") && ctx.Err() != nil {
					return
				}
			}
		}
	}
}

// readHistory pages through a channel's messages after id and hands on the people's. The
// channel is looked up (DM, thread) only when there is someone's message to hand on: after a
// restart without a gap a channel's history holds the bot's own replies at most.
func (a *Adapter) readHistory(ctx context.Context, ch, after string) error {
	var ci *chanInfo
	for {
		page, err := a.history(ctx, ch, after)
		if err != nil {
			return err
		}
		for _, m := range page {
			if !later(m.ID, after) {
				continue
			}
			after = m.ID
			if m.ChannelID == "" {
				m.ChannelID = ch
			}
			if !a.person(m) {
				a.cur.handed(ch, m.ID) // nothing to hand on: the cursor passes it
				continue
			}
			if ci == nil {
				if err := a.catchPace.wait(ctx); err != nil {
					return err
				}
				got, err := a.channel(ctx, ch)
				if err != nil {
					return err
				}
				ci = &got
			}
			a.log.Debug("discord: caught up a message", "channel", ch, "message", m.ID)
			if !a.deliver(ctx, m, ci.dm, "caught_up") {
				return fmt.Errorf("discord: catch up on %s: stopped or not accepted", ch)
			}
		}
		if len(page) < historyPage {
			return nil
		}
	}
}

// deliver hands one message on under the stop's lock; false when Run is stopping or the
// Handler did not take it.
func (a *Adapter) deliver(ctx context.Context, m *discordgo.Message, dm bool, counter string) bool {
	a.inflight.RLock()
	defer a.inflight.RUnlock()
	a.mu.Lock()
	h := a.h
	a.mu.Unlock()
	if h == nil || ctx.Err() != nil {
		return false
	}
	return a.handOn(ctx, h, m, dm, counter)
}

// history is one page of a channel's messages after id, oldest first.
func (a *Adapter) history(ctx context.Context, ch, after string) ([]*discordgo.Message, error) {
	ep := discordgo.EndpointChannelMessages(ch)
	uri := ep + "?" + url.Values{"after": {after}, "limit": {fmt.Sprint(historyPage)}}.Encode()
	if err := a.catchPace.wait(ctx); err != nil {
		return nil, err
	}
	raw, err := a.do(ctx, "read history", func() ([]byte, error) {
		// a bucket of its own: discordgo's ChannelMessages shares the create's
		return a.s.RequestWithBucketID(http.MethodGet, uri, nil, ep+"#history", discordgo.WithContext(ctx))
	})
	if err != nil {
		return nil, err
	}
	var ms []*discordgo.Message
	if err := json.Unmarshal(raw, &ms); err != nil {
		return nil, fmt.Errorf("discord: read history of %s: unreadable answer", ch)
	}
	out := ms[:0]
	for _, m := range ms {
		if m != nil && m.ID != "" {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return later(out[j].ID, out[i].ID) }) // Discord: newest first
	return out, nil
}
