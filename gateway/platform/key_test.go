package platform

import (
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	t.Parallel()
	perThreadUser := Policy{GroupPerUser: true, ThreadPerUser: true}
	shared := Policy{}
	tests := []struct {
		name string
		p    Policy
		a    Address
		want string
	}{
		{"telegram dm", DefaultPolicy, Address{Platform: "telegram", ChatType: DM, ChatID: "123456789", UserID: "123456789"}, "agent:main:telegram:dm:123456789"},
		{"dm without chat id uses the sender", DefaultPolicy, Address{Platform: "slack", ChatType: DM, UserID: "U1"}, "agent:main:slack:dm:U1"},
		{"dm thread", DefaultPolicy, Address{Platform: "slack", ChatType: DM, ChatID: "D1", ThreadID: "1712.5", UserID: "U1"}, "agent:main:slack:dm:D1:1712.5"},
		{"group per user by default", DefaultPolicy, Address{Platform: "discord", ChatType: Group, ChatID: "chan", UserID: "u7"}, "agent:main:discord:group:chan:u7"},
		{"group shared when switched off", shared, Address{Platform: "discord", ChatType: Group, ChatID: "chan", UserID: "u7"}, "agent:main:discord:group:chan"},
		{"thread shared by default", DefaultPolicy, Address{Platform: "discord", ChatType: Thread, ChatID: "chan", ThreadID: "th", UserID: "u7"}, "agent:main:discord:thread:chan:th"},
		{"thread per user when switched on", perThreadUser, Address{Platform: "discord", ChatType: Thread, ChatID: "chan", ThreadID: "th", UserID: "u7"}, "agent:main:discord:thread:chan:th:u7"},
		{"telegram topic", DefaultPolicy, Address{Platform: "telegram", ChatType: Thread, ChatID: "-1001234", ThreadID: "42", UserID: "9"}, "agent:main:telegram:thread:-1001234:42"},
		{"slack scope", DefaultPolicy, Address{Platform: "slack", ChatType: Group, ScopeID: "T1", ChatID: "C1", ThreadID: "1712.5", UserID: "U1"}, "agent:main:slack:group:T1:C1:1712.5"},
		{"profile", Policy{Profile: "work", GroupPerUser: true}, Address{Platform: "telegram", ChatType: DM, ChatID: "1"}, "agent:work:telegram:dm:1"},
		{"profile default", Policy{Profile: "default"}, Address{Platform: "telegram", ChatType: DM, ChatID: "1"}, "agent:main:telegram:dm:1"},
		{"profile literally main", Policy{Profile: "main"}, Address{Platform: "telegram", ChatType: DM, ChatID: "1"}, "agent:main~:telegram:dm:1"},
		{"platform lowercased", DefaultPolicy, Address{Platform: "Telegram", ChatType: DM, ChatID: "1"}, "agent:main:telegram:dm:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.p.Key(tc.a)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Key = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestKeyRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    Policy
		a    Address
		want string
	}{
		{"no platform", DefaultPolicy, Address{ChatType: DM, ChatID: "1"}, "platform is empty"},
		{"bad chat type", DefaultPolicy, Address{Platform: "telegram", ChatType: "room", ChatID: "1"}, "chat type"},
		{"no chat no user", DefaultPolicy, Address{Platform: "telegram", ChatType: DM}, "chat id or a user id"},
		{"colon in chat id", DefaultPolicy, Address{Platform: "telegram", ChatType: DM, ChatID: "1:2"}, "chat id"},
		{"slash in thread", DefaultPolicy, Address{Platform: "telegram", ChatType: Thread, ChatID: "1", ThreadID: "../x"}, "thread id"},
		{"dot dot user", DefaultPolicy, Address{Platform: "telegram", ChatType: Group, ChatID: "1", UserID: ".."}, "path-safe"},
		{"backslash", DefaultPolicy, Address{Platform: "telegram", ChatType: DM, ChatID: `a\b`}, "chat id"},
		{"space", DefaultPolicy, Address{Platform: "telegram", ChatType: DM, ChatID: "a b"}, "chat id"},
		{"control", DefaultPolicy, Address{Platform: "telegram", ChatType: DM, ChatID: "a\x1bb"}, "chat id"},
		{"non-ascii", DefaultPolicy, Address{Platform: "telegram", ChatType: DM, ChatID: "ä"}, "chat id"},
		{"too long", DefaultPolicy, Address{Platform: "telegram", ChatType: DM, ChatID: strings.Repeat("9", 129)}, "limit is 128"},
		{"bad profile", Policy{Profile: "a/b"}, Address{Platform: "telegram", ChatType: DM, ChatID: "1"}, "profile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.p.Key(tc.a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Key(%+v) error = %v, want one naming %q", tc.a, err, tc.want)
			}
		})
	}
}

func TestCheckKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"agent:main:telegram:dm:1", true},
		{"agent:main:x/y", true}, // interior / is allowed in a key (reference)
		{"", false},
		{"/agent:main", false},
		{strings.Repeat("k", 513), false},
		{"agent\n", false},
	} {
		if err := CheckKey(tc.key); (err == nil) != tc.ok {
			t.Errorf("CheckKey(%q) = %v, want ok=%v", tc.key, err, tc.ok)
		}
	}
}
