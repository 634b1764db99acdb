package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
)

// HandoffPrompt is the synthetic user turn a handoff posts in the chat it moves a session to.
func HandoffPrompt(to string) string {
	return "[spool handoff] This conversation has just moved here (" + to + "). " +
		"In a few lines, say where the work stands: the goal, what is done, what comes next."
}

// ParseTarget splits a handoff target PLATFORM:CHAT[:THREAD].
func ParseTarget(to string) (platformName, chat, thread string, err error) {
	parts := strings.Split(to, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return "", "", "", fmt.Errorf("%q is not PLATFORM:CHAT[:THREAD] (e.g. slack:C0123:1712345678.000100)", to)
	}
	if len(parts) == 3 {
		thread = parts[2]
	}
	switch parts[0] {
	case "telegram", "slack", "discord":
	default:
		return "", "", "", fmt.Errorf("%q: platform %q is not telegram, slack or discord", to, parts[0])
	}
	return parts[0], parts[1], thread, nil
}

// Bind points key at sessionID (a handoff: the same session, not a copy), recording the
// lane's address as the route's origin.
func Bind(ctx context.Context, st interface {
	PutRoute(ctx context.Context, r store.Route) error
}, key string, a Address, sessionID, from string) error {
	origin, _ := json.Marshal(map[string]string{"platform": a.Platform, "chat_type": string(a.ChatType), "scope_id": a.ScopeID,
		"chat_id": a.ChatID, "thread_id": a.ThreadID, "user_id": a.UserID, "handoff_from": from})
	if err := st.PutRoute(ctx, store.Route{Key: key, SessionID: sessionID, Origin: origin}); err != nil {
		return fmt.Errorf("bind %s: %w", key, err)
	}
	return nil
}

// HandoffEvent is the synthetic event that asks the agent, in the target chat, where the
// work stands.
func HandoffEvent(a Address, sessionID, to string) Event {
	return Event{Address: a, EventID: fmt.Sprintf("handoff-%s-%d", sessionID, time.Now().UnixNano()),
		UserName: "spool handoff", Text: HandoffPrompt(to), At: time.Now()}
}

// HandoffCommand is the platform slash command /handoff PLATFORM:CHAT[:THREAD] [USER]: the
// chat's session continues in another chat of a connected platform (adapters by name), whose
// key (policies by platform; DefaultPolicy when absent) is bound to it, and a synthetic turn
// there says where the work stands.
func HandoffCommand(r *Router, st interface {
	PutRoute(ctx context.Context, r store.Route) error
}, adapters map[string]Adapter, policies map[string]Policy) CommandFunc {
	return func(ctx context.Context, c CommandCall) (string, error) {
		if c.SessionID == "" {
			return "", errors.New("this chat has no session yet: send a message first")
		}
		f := strings.Fields(c.Args)
		if len(f) == 0 || len(f) > 2 {
			return "", errors.New("usage: /handoff PLATFORM:CHAT[:THREAD] [USER]")
		}
		name, chat, thread, err := ParseTarget(f[0])
		if err != nil {
			return "", err
		}
		ad := adapters[name]
		if ad == nil {
			return "", fmt.Errorf("%s is not connected to this gateway", name)
		}
		user := ""
		if len(f) == 2 {
			user = f[1]
		}
		p, ok := policies[name]
		if !ok {
			p = DefaultPolicy
		}
		a, key, err := ResolveTarget(ctx, ad, p, chat, thread, user)
		if err != nil {
			return "", err
		}
		if key == c.Key {
			return "", errors.New("that is this chat")
		}
		if err := Bind(ctx, st, key, a, c.SessionID, c.Key); err != nil {
			return "", err
		}
		if err := r.Handle(ctx, HandoffEvent(a, c.SessionID, f[0])); err != nil {
			return "", err
		}
		return fmt.Sprintf("Handed this session (%s) to %s: it continues there.", c.SessionID, f[0]), nil
	}
}
