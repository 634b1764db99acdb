package platform

import (
	"fmt"
	"strings"

	"github.com/spoolhq/spool/store"
)

// Policy is how keys isolate users (defaults, as Hermes Agent's: GroupPerUser true,
// ThreadPerUser false) and which profile namespace they live in.
type Policy struct {
	// Profile names the key's namespace: "" or "default" is agent:main, "main" is agent:main~,
	// anything else agent:<profile>.
	Profile string
	// GroupPerUser gives every user of a plain group their own session.
	GroupPerUser bool
	// ThreadPerUser gives every user of a thread their own session (threads are shared when
	// false).
	ThreadPerUser bool
}

// DefaultPolicy is the reference's: groups per user, threads shared.
var DefaultPolicy = Policy{GroupPerUser: true}

// Namespace is the key prefix of a profile.
func Namespace(profile string) string {
	switch profile {
	case "", "default":
		return "agent:main"
	case "main":
		return "agent:main~"
	}
	return "agent:" + profile
}

// Key builds the session key of an address:
//
//	namespace:platform:chat_type[:scope][:chat][:user][:thread]   (DM; user only without a chat id)
//	namespace:platform:chat_type[:scope][:chat][:thread][:user]   (group, channel, thread)
//
// e.g. agent:main:telegram:dm:123456789, agent:main:telegram:group:-100200:42 (user 42),
// agent:main:telegram:thread:-100200:7 (topic 7, shared). Every part is checked (CheckID).
func (p Policy) Key(a Address) (string, error) {
	if err := CheckID("profile", p.Profile, true); err != nil {
		return "", err
	}
	if err := CheckID("platform", a.Platform, false); err != nil {
		return "", err
	}
	if !a.ChatType.Valid() {
		return "", fmt.Errorf("chat type %q is not dm, group, channel or thread", a.ChatType)
	}
	for _, f := range []struct{ name, v string }{{"scope id", a.ScopeID}, {"chat id", a.ChatID}, {"thread id", a.ThreadID}, {"user id", a.UserID}} {
		if err := CheckID(f.name, f.v, true); err != nil {
			return "", err
		}
	}
	if a.ChatID == "" && a.UserID == "" {
		return "", fmt.Errorf("an address needs a chat id or a user id")
	}
	parts := []string{Namespace(p.Profile), strings.ToLower(a.Platform), string(a.ChatType)}
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	add(a.ScopeID)
	add(a.ChatID)
	if a.ChatType == DM {
		if a.ChatID == "" {
			add(a.UserID)
		}
		add(a.ThreadID)
	} else {
		add(a.ThreadID)
		inThread := a.ThreadID != ""
		if p.GroupPerUser && !(inThread && !p.ThreadPerUser) {
			add(a.UserID)
		}
	}
	key := strings.Join(parts, ":")
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// maxID bounds one part of a key.
const maxID = 128

// CheckID validates one part of a key: printable ASCII without ':', '/', '\' or spaces, not
// "." or "..", at most 128 bytes. Empty is allowed only when optional.
func CheckID(name, v string, optional bool) error {
	if v == "" {
		if optional {
			return nil
		}
		return fmt.Errorf("%s is empty", name)
	}
	if len(v) > maxID {
		return fmt.Errorf("%s is %d bytes, the limit is %d", name, len(v), maxID)
	}
	if v == "." || v == ".." {
		return fmt.Errorf("%s %q is not a path-safe id", name, v)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == ':' || c == '/' || c == '\\' {
			return fmt.Errorf("%s %q: byte %d (%q) is not allowed in an id (printable ASCII without ':', '/', '\\' or spaces)", name, v, i, c)
		}
	}
	return nil
}

// CheckKey validates a whole session key: non-empty, no leading '/', at most
// store.MaxRouteKey bytes, no control characters.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("session key is empty")
	case key[0] == '/':
		return fmt.Errorf("session key %q starts with /", key)
	case len(key) > store.MaxRouteKey:
		return fmt.Errorf("session key is %d bytes, the limit is %d", len(key), store.MaxRouteKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < ' ' || key[i] == 0x7f {
			return fmt.Errorf("session key has a control character at byte %d", i)
		}
	}
	return nil
}
