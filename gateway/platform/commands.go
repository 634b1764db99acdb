package platform

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/recall"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
)

// CommandCall is one slash command a chat sent.
type CommandCall struct {
	Event Event
	Key   string
	// SessionID is the key's current session ("" when the chat has none yet).
	SessionID string
	Args      string
}

// CommandFunc answers a registered slash command; its reply is delivered to the chat.
type CommandFunc func(ctx context.Context, c CommandCall) (reply string, err error)

// Command registers a slash command (e.g. "handoff" for /handoff); it replaces a built-in of
// the same name. Register before Serve.
func (r *Router) Command(name string, fn CommandFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmds[strings.ToLower(strings.TrimPrefix(name, "/"))] = fn
}

// builtins are the platform commands the router answers itself.
var builtins = map[string]string{
	"new":      "start a fresh session (the old one is kept and linked)",
	"reset":    "same as /new",
	"stop":     "stop the running turn; the next message starts a fresh session",
	"status":   "this chat's session, tokens, cache share and last cache break",
	"compress": "compact the session now: /compress [focus]",
	"title":    "show or set the session's title: /title [text]",
	"undo":     "take back the last exchange",
	"search":   "search this chat's earlier sessions: /search words",
	"help":     "list the commands",
}

type command struct{ name, args string }

// parseCommand reads "/name[@bot] args".
func parseCommand(text string) (command, bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") || len(t) < 2 {
		return command{}, false
	}
	name, args, _ := strings.Cut(t[1:], " ")
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	name = strings.ToLower(name)
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return command{}, false
		}
	}
	return command{name: name, args: strings.TrimSpace(args)}, name != ""
}

// command answers a slash command; handled is false for a name the router does not know (the
// text then goes to the agent as a message).
func (r *Router) command(ctx context.Context, key string, ev Event, c command) (reply string, handled bool) {
	r.mu.Lock()
	fn := r.cmds[c.name]
	r.mu.Unlock()
	if fn == nil {
		if _, ok := builtins[c.name]; !ok {
			return "", false
		}
	}
	cur := r.current(ctx, key)
	if fn != nil {
		out, err := fn(ctx, CommandCall{Event: ev, Key: key, SessionID: cur, Args: c.args})
		if err != nil {
			return "⚠️ /" + c.name + ": " + oneLine(err.Error()), true
		}
		return out, true
	}
	out, err := r.builtin(ctx, key, ev, c, cur)
	if err != nil {
		return "⚠️ /" + c.name + ": " + oneLine(err.Error()), true
	}
	return out, true
}

// current is the live tip of the key's session, "" when it has none.
func (r *Router) current(ctx context.Context, key string) string {
	rt, err := r.st.GetRoute(ctx, key)
	if err != nil {
		return ""
	}
	tip, err := r.st.ResumeTarget(ctx, rt.SessionID)
	if err != nil {
		return ""
	}
	return tip
}

func (r *Router) builtin(ctx context.Context, key string, ev Event, c command, cur string) (string, error) {
	switch c.name {
	case "help":
		var b strings.Builder
		b.WriteString("Commands:")
		for _, n := range []string{"new", "reset", "stop", "status", "compress", "title", "undo", "search"} {
			fmt.Fprintf(&b, "\n/%s — %s", n, builtins[n])
		}
		return b.String(), nil
	case "new", "reset":
		reason := store.EndNewSession
		if c.name == "reset" {
			reason = store.EndReset
		}
		if cur == "" {
			s, err := r.session(ctx, key, ev)
			if err != nil {
				return "", err
			}
			return "New session " + s + ".", nil
		}
		prev, err := r.st.GetSession(ctx, cur)
		if err != nil {
			return "", err
		}
		id, err := r.reset(ctx, key, ev, prev, reason)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("New session %s. The previous one (%s) is kept and linked.", id, cur), nil
	case "stop":
		if cur == "" {
			return "Nothing to stop.", nil
		}
		interrupted := false
		if s := r.runningSession(key); s != "" {
			interrupted = r.gw.Interrupt(s)
		}
		rt, err := r.st.GetRoute(ctx, key)
		if err != nil {
			return "", err
		}
		rt.Suspended = true
		if err := r.st.PutRoute(ctx, rt); err != nil {
			return "", err
		}
		if interrupted {
			return "Stopped the running turn. Your next message starts a fresh session.", nil
		}
		return "Stopped. Your next message starts a fresh session.", nil
	}
	if cur == "" {
		return "This chat has no session yet: send a message first.", nil
	}
	switch c.name {
	case "status":
		return r.status(ctx, key, cur)
	case "compress":
		res, err := r.gw.CompactSession(ctx, cur, c.args)
		if err != nil {
			return "", err
		}
		if res.SessionID != "" && res.SessionID != cur {
			r.moveRoute(ctx, key, ev, res.SessionID)
		}
		msg := "Compacted."
		if n := len(res.CompactionLog); n > 0 {
			l := res.CompactionLog[n-1]
			msg = fmt.Sprintf("Compacted: %d messages, ~%d → ~%d tokens.", l.Messages, l.TokensBefore, l.TokensAfter)
		}
		return msg, nil
	case "title":
		if c.args == "" {
			s, err := r.st.GetSession(ctx, cur)
			if err != nil {
				return "", err
			}
			if s.Title == "" {
				return "This session has no title. Set one with /title text.", nil
			}
			return "Title: " + s.Title, nil
		}
		if err := r.st.SetTitle(ctx, cur, c.args); err != nil {
			var inUse *store.TitleInUseError
			if errors.As(err, &inUse) {
				return "", fmt.Errorf("another session already has the title %q", c.args)
			}
			return "", err
		}
		return "Title set: " + c.args, nil
	case "undo":
		n := 0
		err := r.gw.EditHistory(ctx, cur, func(ctx context.Context, f store.Fence) error {
			var err error
			n, err = r.st.UndoLastExchange(ctx, cur, f)
			return err
		})
		var busy *gateway.BusyError
		switch {
		case errors.Is(err, store.ErrNotFound):
			return "Nothing to undo.", nil
		case errors.As(err, &busy):
			return "This chat's session is busy: a turn is running in another process. Nothing was undone; try again when it has finished.", nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Undid the last exchange (%d messages).", n), nil
	case "search":
		if c.args == "" {
			return "Usage: /search words", nil
		}
		d, err := recall.Discover(ctx, r.st, recall.Request{Current: cur, Query: c.args, Limit: 3, Window: 1,
			Scope: &recall.Scope{SessionKey: key}})
		if err != nil {
			return "", err
		}
		if len(d.Results) == 0 {
			return "Nothing found in this chat's sessions for " + c.args + ".", nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Found in this chat's sessions (%d):", len(d.Results))
		for _, res := range d.Results {
			title := res.Title
			if title == "" {
				title = res.SessionID
			}
			fmt.Fprintf(&b, "\n• %s (%s): %s", title, res.When, oneLine(res.Snippet))
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unknown command")
}

// status describes the key's session: id, tokens against the window, cache share, last break.
func (r *Router) status(ctx context.Context, key, cur string) (string, error) {
	s, err := r.st.GetSession(ctx, cur)
	if err != nil {
		return "", err
	}
	hist, err := r.st.Conversation(ctx, cur, store.ViewActive)
	if err != nil {
		return "", err
	}
	used := tokens.Estimate(hist)
	recs, err := r.st.Requests(ctx, cur, 50)
	if err != nil {
		return "", err
	}
	if len(recs) > 0 && recs[0].Usage.InputTokens > 0 {
		used = int(recs[0].Usage.InputTokens)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s", s.ID)
	if s.Title != "" {
		fmt.Fprintf(&b, " (%s)", s.Title)
	}
	fmt.Fprintf(&b, "\nMessages: %d (%d in the model's view)", s.Shown.Messages, s.MessageCount)
	fmt.Fprintf(&b, "\nContext: %d / %d tokens (%.0f%%)", used, r.cfg.Window, 100*float64(used)/float64(r.cfg.Window))
	if s.Usage.InputTokens > 0 {
		fmt.Fprintf(&b, "\nCached share: %.0f%% of %d input tokens", 100*float64(s.Usage.CacheReadTokens)/float64(s.Usage.InputTokens), s.Usage.InputTokens)
	} else {
		b.WriteString("\nCached share: no model calls yet")
	}
	brk := "none recorded"
	for _, rec := range recs {
		if rec.Break != nil {
			brk = fmt.Sprintf("%s (%s), %s ago, %d cached tokens lost", rec.Break.Layer, rec.Break.Reason, ago(rec.At), rec.Break.LostTokens)
			break
		}
	}
	b.WriteString("\nLast cache break: " + brk)
	if n := r.HygieneStreak(key); n > 0 {
		fmt.Fprintf(&b, "\nHygiene compaction failures in a row: %d", n)
	}
	if s.ParentID != "" {
		fmt.Fprintf(&b, "\nContinues: %s (%s)", s.ParentID, s.Relation)
	}
	return b.String(), nil
}

func ago(t time.Time) string {
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return d.String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Hour).String()
}
