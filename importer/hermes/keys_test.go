package hermes_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/slack"
	"github.com/spoolhq/spool/importer/hermes"
)

// TestRoutesKeyedAsSpoolDerives: every kind of Hermes lane (Telegram DM, group, forum topic;
// Slack DM, channel, thread; Discord DM, channel, thread) is imported under the key spool's
// adapter derives for the lane's next message, so that message goes on in the migrated session.
// Slack addresses come from the adapter's own Inbound.Event; Telegram's and Discord's are built
// as their intake builds them (a private chat is a DM of that user, a forum topic a Thread of
// its chat, a Discord thread a Thread of its parent channel).
func TestRoutesKeyedAsSpoolDerives(t *testing.T) {
	t.Parallel()
	slackEv := func(in slack.Inbound) platform.Address { return in.Event().Address }
	cases := []struct {
		name, hermesKey string
		entry           map[string]any // more fields of the sessions.json entry
		next            platform.Address
	}{
		{"telegram dm", "agent:main:telegram:dm:123456789", nil,
			platform.Address{Platform: "telegram", ChatType: platform.DM, ChatID: "123456789", UserID: "123456789"}},
		{"telegram group", "agent:main:telegram:group:-100200:42", map[string]any{"chat_type": "group"},
			platform.Address{Platform: "telegram", ChatType: platform.Group, ChatID: "-100200", UserID: "42"}},
		{"telegram topic", "agent:main:telegram:group:-100300:7", map[string]any{"origin": map[string]any{"chat_id": "-100300", "thread_id": "7"}},
			platform.Address{Platform: "telegram", ChatType: platform.Thread, ChatID: "-100300", ThreadID: "7", UserID: "42"}},
		{"slack dm", "agent:main:slack:dm:T0TEAM:D0DM", nil,
			slackEv(slack.Inbound{TeamID: "T0TEAM", Channel: "D0DM", ChannelType: "im", User: "U1", TS: "1712345000.000001"})},
		{"slack channel", "agent:main:slack:group:T0TEAM:C0CHAN:U1", nil,
			slackEv(slack.Inbound{TeamID: "T0TEAM", Channel: "C0CHAN", ChannelType: "channel", User: "U1", TS: "1712345000.000002"})},
		{"slack thread", "agent:main:slack:group:T0TEAM:C0CHAN:1712345678.000100", nil,
			slackEv(slack.Inbound{TeamID: "T0TEAM", Channel: "C0CHAN", ChannelType: "channel", ThreadTS: "1712345678.000100", User: "U2", TS: "1712345700.000003"})},
		{"slack thread named in the entry", "agent:main:slack:group:T0TEAM:C0OTHER:1712345999.000200", map[string]any{"thread_id": "1712345999.000200"},
			slackEv(slack.Inbound{TeamID: "T0TEAM", Channel: "C0OTHER", ChannelType: "channel", ThreadTS: "1712345999.000200", User: "U3", TS: "1712346000.000004"})},
		{"discord dm", "agent:main:discord:dm:900", nil,
			platform.Address{Platform: "discord", ChatType: platform.DM, ChatID: "900", UserID: "42"}},
		{"discord channel", "agent:main:discord:group:500:42", nil,
			platform.Address{Platform: "discord", ChatType: platform.Group, ChatID: "500", UserID: "42"}},
		{"discord thread", "agent:main:discord:thread:500:501", nil,
			platform.Address{Platform: "discord", ChatType: platform.Thread, ChatID: "500", ThreadID: "501", UserID: "42"}},
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries := map[string]any{}
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = fmt.Sprintf("20260405_0800%02d_lane%02d", i, i)
		e := map[string]any{"session_key": c.hermesKey, "session_id": ids[i], "platform": c.next.Platform,
			"updated_at": "2026-04-05T08:00:00"}
		for k, v := range c.entry {
			e[k] = v
		}
		entries[c.hermesKey] = e
		line := fmt.Sprintf(`{"role":"user","content":"hello from %s","timestamp":"2026-04-05T08:00:%02d"}`+"\n", c.name, i)
		if err := os.WriteFile(filepath.Join(home, "sessions", ids[i]+".jsonl"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(entries)
	if err := os.WriteFile(filepath.Join(home, "sessions", "sessions.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	rep, err := hermes.Import(bg, st, home, hermes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Routes != len(cases) {
		t.Errorf("%d routes imported, want %d (skipped: %+v)", rep.Routes, len(cases), rep.Skipped)
	}
	for i, c := range cases {
		key, err := platform.DefaultPolicy.Key(c.next)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r, err := st.GetRoute(bg, key)
		if err != nil || r.SessionID != ids[i] {
			t.Errorf("%s: the next message's key %s routes to %q (%v), want the migrated session %s", c.name, key, r.SessionID, err, ids[i])
		}
		if s, err := st.GetSession(bg, ids[i]); err != nil || s.SessionKey != key {
			t.Errorf("%s: session key %q (%v), want %s", c.name, s.SessionKey, err, key)
		}
	}
}
