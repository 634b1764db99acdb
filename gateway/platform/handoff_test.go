package platform_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
)

func TestParseTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, name, chat, thread, err string
	}{
		{in: "slack:C1:1712.5", name: "slack", chat: "C1", thread: "1712.5"},
		{in: "telegram:-100200", name: "telegram", chat: "-100200"},
		{in: "discord:500:501", name: "discord", chat: "500", thread: "501"},
		{in: "slack", err: "not PLATFORM:CHAT"},
		{in: "slack::1", err: "not PLATFORM:CHAT"},
		{in: "a:b:c:d", err: "not PLATFORM:CHAT"},
		{in: "irc:#go", err: "not telegram, slack or discord"},
	} {
		n, c, th, err := platform.ParseTarget(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || n != tc.name || c != tc.chat || th != tc.thread {
			t.Errorf("%s: %s %s %s %v", tc.in, n, c, th, err)
		}
	}
}

// TestResolveTargetGuessed: an adapter without a Resolver (the in-memory one) is guessed; a
// per-user lane needs its user.
func TestResolveTargetGuessed(t *testing.T) {
	t.Parallel()
	tg := platformtest.NewOutbound("telegram", platform.Limits{MaxChars: 4096})
	ctx := context.Background()
	for _, tc := range []struct {
		chat, thread, user string
		p                  platform.Policy
		key, err           string
	}{
		{chat: "777", p: platform.DefaultPolicy, key: "agent:main:telegram:dm:777"},
		{chat: "-100200", thread: "7", p: platform.DefaultPolicy, key: "agent:main:telegram:thread:-100200:7"},
		{chat: "-100200", user: "42", p: platform.DefaultPolicy, key: "agent:main:telegram:group:-100200:42"},
		{chat: "-100200", p: platform.DefaultPolicy, err: "--user"},
		{chat: "-100200", thread: "7", p: platform.Policy{GroupPerUser: true, ThreadPerUser: true}, err: "--user"},
		{chat: "-100200", p: platform.Policy{}, key: "agent:main:telegram:group:-100200"},
		{chat: "bad id", p: platform.DefaultPolicy, err: "not allowed"},
	} {
		_, key, err := platform.ResolveTarget(ctx, tg, tc.p, tc.chat, tc.thread, tc.user)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s/%s: %v, want %q", tc.chat, tc.thread, err, tc.err)
			}
			continue
		}
		if err != nil || key != tc.key {
			t.Errorf("%s/%s: %s %v, want %s", tc.chat, tc.thread, key, err, tc.key)
		}
	}
}
