package store

import (
	"os"
	"testing"
)

// A holder names this host: $SPOOL_HOST_ID (its separators replaced) when set, else the host
// name, the same at every turn (it is read once).
func TestNewHolderHost(t *testing.T) {
	want, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	t.Setenv(HostIDEnv, "")
	for range 2 {
		if h := NewHolder(); h.Host != want || h.PID != os.Getpid() || h.Nonce == "" {
			t.Fatalf("holder %+v, want host %q", h, want)
		}
	}
	t.Setenv(HostIDEnv, "replica:1=a")
	if h := NewHolder(); h.Host != "replica_1_a" {
		t.Fatalf("holder host %q with %s set", h.Host, HostIDEnv)
	}
	t.Setenv(HostIDEnv, "")
	if h := NewHolder(); h.Host != want {
		t.Fatalf("holder host %q after %s was unset, want %q", h.Host, HostIDEnv, want)
	}
}
