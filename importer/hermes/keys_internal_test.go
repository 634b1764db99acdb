package hermes

import "testing"

func TestLaneKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ key, thread, want string }{
		{"agent:main:slack:group:T1:C1:1712345678.000100", "", "agent:main:slack:thread:T1:C1:1712345678.000100"},
		{"agent:main:slack:group:T1:C1:1712345678.000100:U9", "", "agent:main:slack:thread:T1:C1:1712345678.000100:U9"}, // per-user threads
		{"agent:work:slack:group:T1:C1:1712345678.000100", "", "agent:work:slack:thread:T1:C1:1712345678.000100"},
		{"agent:main~:telegram:group:-100:7", "7", "agent:main~:telegram:thread:-100:7"},
		{"agent:main:telegram:group:-100:42", "", "agent:main:telegram:group:-100:42"}, // a user, not a topic
		{"agent:main:slack:group:T1:C1:U1", "", "agent:main:slack:group:T1:C1:U1"},
		{"agent:main:slack:dm:T1:D1:1712345678.000100", "", "agent:main:slack:dm:T1:D1:1712345678.000100"},
		{"agent:main:discord:thread:500:501", "501", "agent:main:discord:thread:500:501"},
		{"agent:main:telegram:group:-100:7:42:x", "7", "agent:main:telegram:group:-100:7:42:x"}, // unreadable: as is
		{"custom-key", "7", "custom-key"},
	} {
		if got := laneKey(c.key, c.thread); got != c.want {
			t.Errorf("laneKey(%q, %q) = %q, want %q", c.key, c.thread, got, c.want)
		}
	}
}
