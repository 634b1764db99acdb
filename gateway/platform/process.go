package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
)

// turnID is the send-ledger id of an event's reply.
func turnID(ev Event) string { return ev.Platform + ":" + ev.EventID }

// process answers one event: claim it, run its command or turn, store the reply, deliver it.
// Every step is recorded in the inbox, so a process that dies anywhere leaves the event to be
// finished by the next one without a second turn or a second message.
func (r *Router) process(ctx context.Context, key string, ev Event) {
	r.mark(ev, "started")
	in, ok := store.InboundEvent{State: store.InboundPending}, true
	if !r.ownFresh(ev) {
		var err error
		in, ok, err = r.st.ClaimInbound(ctx, ev.Platform, ev.EventID, r.cfg.Holder, r.cfg.ClaimTTL)
		if err != nil {
			r.log.Warn("platform: claim event", "platform", ev.Platform, "event", ev.EventID, "err", err)
			return
		}
	}
	if !ok {
		r.unhold(ev)
		return // done already, or another live process has it
	}
	r.log.Debug("platform: claimed", "platform", ev.Platform, "event", ev.EventID, "state", in.State)
	r.hold(ev)
	out := r.outbound(ev.Platform)
	if out == nil {
		return
	}
	update := func(state store.InboundState, session, reply string) bool {
		err := r.st.UpdateInbound(context.WithoutCancel(ctx), store.InboundUpdate{Platform: ev.Platform, EventID: ev.EventID,
			Holder: r.cfg.Holder, State: state, SessionID: session, Reply: reply})
		if err != nil {
			r.log.Warn("platform: record event state", "platform", ev.Platform, "event", ev.EventID, "state", state, "err", err)
			return false
		}
		return true
	}
	finish := func(session, reply string) {
		if !update(store.InboundReplied, session, reply) {
			return
		}
		r.mark(ev, "flush")
		l, err := r.loadLedger(ctx, turnID(ev))
		if err == nil {
			err = r.deliver(ctx, out, ev, reply, l)
		}
		if err != nil {
			// Left replied: the next recovery delivers what is missing.
			r.log.Warn("platform: deliver reply", "platform", ev.Platform, "event", ev.EventID, "err", err)
			return
		}
		r.unmarkQueued(out, ev, l)
		if update(store.InboundDone, "", "") {
			r.log.Debug("platform: done", "platform", ev.Platform, "event", ev.EventID)
			r.unhold(ev)
		}
	}

	switch in.State {
	case store.InboundReplied:
		finish(in.SessionID, in.Reply)
		return
	case store.InboundRunning:
		// A process died during this event's turn: adopt the reply it stored, if it did; a turn
		// cut short left its user message (and maybe tool rows) without an answer: those are
		// taken back before the turn runs again, so the history holds the message once.
		reply, ok, dangling := r.storedReply(ctx, in.SessionID, ev.Text)
		if ok {
			finish(in.SessionID, reply)
			return
		}
		if dangling {
			tip, _ := r.st.ResumeTarget(ctx, in.SessionID)
			err := r.gw.EditHistory(ctx, tip, func(ctx context.Context, f store.Fence) error {
				_, err := r.st.UndoLastExchange(ctx, tip, f)
				return err
			})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				// Not taken back (another process's turn holds the conversation): running the
				// turn now would store the message twice. The event stays claimed and
				// unfinished; the next recovery pass tries again.
				r.log.Warn("platform: take back a cut-short turn", "session", tip, "err", err)
				return
			}
		}
	}

	if c, ok := parseCommand(ev.Text); ok {
		if reply, handled := r.command(ctx, key, ev, c); handled {
			finish("", reply)
			return
		}
	}

	sid, err := r.session(ctx, key, ev)
	if err != nil {
		r.log.Warn("platform: resolve session", "key", key, "err", err)
		finish("", "⚠️ I could not open this chat's session: "+oneLine(err.Error()))
		return
	}
	sid = r.hygiene(ctx, key, ev, sid)
	if !update(store.InboundRunning, sid, "") {
		return
	}
	r.setRunning(key, sid)
	r.mark(ev, "prepared")
	s := r.newStream(ctx, out, ev)
	rep, err := r.gw.TurnSession(ctx, gateway.SessionTurn{Principal: r.cfg.Principal, SessionID: sid, Input: ev.Text,
		Busy: gateway.BusyQueue}, gateway.Sink{OnDelta: s.delta})
	s.stop()
	if errors.Is(err, gateway.ErrDraining) && rep.Result.Reply == "" {
		// The gateway is stopping: the event stays unfinished (its claim released when the
		// router stops) and the next process answers it.
		return
	}
	if rep.SessionID != "" && rep.SessionID != sid {
		// The turn continued in a rotated tip: the key follows it (thread and all: the key
		// names the thread, the route only the session).
		r.moveRoute(ctx, key, ev, rep.SessionID)
		sid = rep.SessionID
	}
	reply := rep.Result.Reply
	switch {
	case errors.Is(err, gateway.ErrInterrupted):
		reply = strings.TrimSpace(reply + "\n\n(interrupted by your newer message)")
	case err != nil:
		r.log.Warn("platform: turn failed", "key", key, "session", sid, "err", err)
		reply = strings.TrimSpace(reply + "\n\n⚠️ The turn failed: " + oneLine(err.Error()))
	case strings.TrimSpace(reply) == "":
		reply = "(no reply)"
	}
	finish(sid, reply)
}

func (r *Router) outbound(platform string) Outbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out[platform]
}

// storedReply finds the reply a turn for input stored on a session: the last real user
// message is input and a final assistant message follows it (ok). dangling: the last user
// message is input but no answer follows (the turn was cut short).
func (r *Router) storedReply(ctx context.Context, sessionID, input string) (reply string, ok, dangling bool) {
	if sessionID == "" {
		return "", false, false
	}
	tip, err := r.st.ResumeTarget(ctx, sessionID)
	if err != nil {
		return "", false, false
	}
	hist, err := r.st.Conversation(ctx, tip, store.ViewActive)
	if err != nil {
		return "", false, false
	}
	for i := len(hist) - 1; i >= 0; i-- {
		m := hist[i]
		if m.Role == store.RoleUser && !m.Summary {
			if strings.TrimSpace(m.Content) != strings.TrimSpace(input) {
				return "", false, false
			}
			for _, a := range hist[i+1:] {
				if a.Role == store.RoleAssistant && len(a.ToolCalls) == 0 && a.Content != "" {
					return a.Content, true, false
				}
			}
			return "", false, true
		}
	}
	return "", false, false
}

// origin is a lane's metadata on its route.
func origin(ev Event) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"platform": ev.Platform, "chat_type": string(ev.ChatType), "scope_id": ev.ScopeID,
		"chat_id": ev.ChatID, "thread_id": ev.ThreadID, "user_id": ev.UserID, "user_name": ev.UserName})
	return b
}

// session resolves a key to the session its turn runs on: the route's live compression tip,
// a fresh session for a new key (one per key even when processes race: ClaimRoute), a fresh
// session linked to the old one (relation reset) after /stop or when the old one was ended
// deliberately elsewhere (a stale route is healed).
func (r *Router) session(ctx context.Context, key string, ev Event) (string, error) {
	rt, err := r.st.GetRoute(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		s, err := r.create(ctx, key, ev, "")
		if err != nil {
			return "", err
		}
		got, won, err := r.st.ClaimRoute(ctx, store.Route{Key: key, SessionID: s.ID, Origin: origin(ev)})
		if err != nil {
			return "", fmt.Errorf("route %s: %w", key, err)
		}
		if won {
			return s.ID, nil
		}
		// Another process made the key's first session: use it, drop ours (it is empty).
		_ = r.st.DeleteSession(context.WithoutCancel(ctx), s.ID)
		rt = got
	} else if err != nil {
		return "", fmt.Errorf("route %s: %w", key, err)
	}
	tip, err := r.st.ResumeTarget(ctx, rt.SessionID)
	if err != nil {
		return "", fmt.Errorf("tip of %s: %w", rt.SessionID, err)
	}
	s, err := r.st.GetSession(ctx, tip)
	if err != nil {
		return "", fmt.Errorf("session %s: %w", tip, err)
	}
	switch {
	case rt.Suspended:
		return r.reset(ctx, key, ev, s, store.EndReset)
	case s.Ended() && store.AutomaticEnd(s.EndReason):
		if err := r.st.ReopenSession(ctx, s.ID); err != nil {
			return "", fmt.Errorf("reopen %s: %w", s.ID, err)
		}
	case s.Ended():
		// Ended deliberately somewhere else (spool sessions end, a reset in the CLI): a stale
		// route; the chat goes on in a fresh session linked to it.
		return r.reset(ctx, key, ev, s, "")
	}
	if tip != rt.SessionID {
		r.moveRoute(ctx, key, ev, tip)
	}
	return tip, nil
}

func (r *Router) create(ctx context.Context, key string, ev Event, parent string) (store.Session, error) {
	ns := store.NewSession{Source: ev.Platform, UserID: r.cfg.Principal, SessionKey: key, Model: r.cfg.Model}
	if parent != "" {
		ns.ParentID, ns.Relation = parent, store.RelationReset
	}
	s, err := r.st.CreateSession(ctx, ns)
	if err != nil {
		return store.Session{}, fmt.Errorf("create a session for %s: %w", key, err)
	}
	return s, nil
}

// reset ends prev with reason (unless it has ended already) and points the key at a fresh
// session whose parent is prev (relation reset).
func (r *Router) reset(ctx context.Context, key string, ev Event, prev store.Session, reason string) (string, error) {
	if !prev.Ended() && reason != "" {
		if err := r.st.EndSession(ctx, prev.ID, reason); err != nil {
			return "", fmt.Errorf("end %s: %w", prev.ID, err)
		}
	}
	s, err := r.create(ctx, key, ev, prev.ID)
	if err != nil {
		return "", err
	}
	if err := r.st.PutRoute(ctx, store.Route{Key: key, SessionID: s.ID, Origin: origin(ev)}); err != nil {
		return "", fmt.Errorf("route %s: %w", key, err)
	}
	return s.ID, nil
}

func (r *Router) moveRoute(ctx context.Context, key string, ev Event, sessionID string) {
	if err := r.st.PutRoute(context.WithoutCancel(ctx), store.Route{Key: key, SessionID: sessionID, Origin: origin(ev)}); err != nil {
		r.log.Warn("platform: move route", "key", key, "session", sessionID, "err", err)
	}
}

// hygiene compacts a session over Config.HygieneAt of the window before its turn (the
// safety net under the agent's own preflight), counting failures per key.
func (r *Router) hygiene(ctx context.Context, key string, ev Event, sid string) string {
	if r.cfg.HygieneAt < 0 {
		return sid
	}
	s, err := r.st.GetSession(ctx, sid)
	if err != nil {
		return sid
	}
	st, err := compress.StateFromModelConfig(s.ModelConfig)
	if err != nil {
		r.log.Warn("platform: hygiene reads the estimate only", "session", sid, "err", err)
	}
	hist, err := r.st.Conversation(ctx, sid, store.ViewActive)
	if err != nil || len(hist) < 4 {
		return sid
	}
	if !compress.GatewayHygiene(r.cfg.HygieneAt, r.cfg.Window, len(hist), tokens.Estimate(hist), st).Due {
		r.mu.Lock()
		delete(r.streak, key) // the streak counts failures in a row of a needed compaction
		r.mu.Unlock()
		return sid
	}
	res, err := r.gw.CompactSession(ctx, sid, "")
	r.mu.Lock()
	if err != nil {
		r.streak[key]++
	} else {
		r.streak[key] = 0
	}
	n := r.streak[key]
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("platform: hygiene compaction failed", "key", key, "session", sid, "failure_streak", n, "err", err)
		return sid
	}
	if res.SessionID != "" && res.SessionID != sid {
		r.moveRoute(ctx, key, ev, res.SessionID)
		return res.SessionID
	}
	return sid
}

// HygieneStreak is the number of hygiene compactions of key that failed in a row.
func (r *Router) HygieneStreak(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streak[key]
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
