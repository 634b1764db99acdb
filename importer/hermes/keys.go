package hermes

import (
	"regexp"
	"strings"

	"github.com/spoolhq/spool/gateway/platform"
)

// slackTS is the form of a Slack message timestamp (a thread's id).
var slackTS = regexp.MustCompile(`^[0-9]{9,}\.[0-9]{6}$`)

// laneKey maps a Hermes gateway session key to the key spool's platform adapters derive for the
// same lane (platform.Policy.Key), so a migrated chat goes on in its session with the next
// message.
//
// Hermes keys a thread under its chat's type — agent:main:slack:group:T:C:1712345678.000100 for a
// Slack thread, agent:main:telegram:group:-100123:7 for a Telegram forum topic — where spool's
// adapters key it as a thread: agent:main:slack:thread:T:C:1712345678.000100. thread is the lane's
// thread id when the entry or the session row names one; without it, a part of a Slack key in
// the form of a message timestamp is taken as the thread. The user part is kept where Hermes
// had one (per-user threads). DMs, plain groups and channels, and Discord threads are keyed alike
// by both and come back unchanged, as does a key this cannot read.
func laneKey(key, thread string) string {
	parts := strings.Split(key, ":")
	if len(parts) < 6 || parts[0] != "agent" {
		return key
	}
	ns, plat, slot, rest := parts[1], parts[2], parts[3], parts[4:]
	if slot != string(platform.Group) && slot != string(platform.Channel) {
		return key
	}
	at := -1
	for i := 1; i < len(rest) && at < 0; i++ {
		if (thread != "" && rest[i] == thread) || (thread == "" && plat == "slack" && slackTS.MatchString(rest[i])) {
			at = i
		}
	}
	if at < 0 {
		return key
	}
	a := platform.Address{Platform: plat, ChatType: platform.Thread, ChatID: rest[at-1], ThreadID: rest[at]}
	switch {
	case at == 2 && plat == "slack":
		a.ScopeID = rest[0] // the workspace
	case at != 1:
		return key
	}
	p := platform.Policy{Profile: profile(ns), GroupPerUser: true}
	switch len(rest) - at - 1 {
	case 0:
	case 1:
		a.UserID, p.ThreadPerUser = rest[at+1], true
	default:
		return key
	}
	k, err := p.Key(a)
	if err != nil {
		return key
	}
	return k
}

// profile is the profile whose namespace (platform.Namespace) is agent:ns.
func profile(ns string) string {
	switch ns {
	case "main":
		return ""
	case "main~":
		return "main"
	}
	return ns
}
