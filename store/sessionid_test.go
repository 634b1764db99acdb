package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FreshSessionID draws again while the id is taken: a generated id never names an existing
// session. Not parallel: it replaces NewSessionID's random source.
func TestFreshSessionIDSkipsTakenIDs(t *testing.T) {
	draws := [][]byte{{0xa3, 0xf9, 0xc1}, {0xa3, 0xf9, 0xc1}, {0x00, 0x00, 0x01}}
	restore := SetSessionIDSource(func(b []byte) (int, error) {
		copy(b, draws[0])
		draws = draws[1:]
		return len(b), nil
	})
	defer restore()
	at := time.Date(2026, 11, 29, 15, 42, 33, 0, time.UTC)
	taken := map[string]bool{"20261129_154233_a3f9c1": true}
	var asked []string
	id, err := FreshSessionID(at, func(id string) (bool, error) {
		asked = append(asked, id)
		return taken[id], nil
	})
	if err != nil || id != "20261129_154233_000001" || len(asked) != 3 {
		t.Fatalf("id %q, %v; asked %v", id, err, asked)
	}

	// Every draw taken: ErrBusy after a bound, not a taken id.
	SetSessionIDSource(func(b []byte) (int, error) { copy(b, []byte{1, 2, 3}); return len(b), nil })
	n := 0
	id, err = FreshSessionID(at, func(string) (bool, error) { n++; return true, nil })
	if !errors.Is(err, ErrBusy) || id != "" || n != 64 {
		t.Fatalf("all taken: %q, %v after %d draws", id, err, n)
	}
	// The lookup's error is returned.
	boom := errors.New("disk I/O error")
	if _, err := FreshSessionID(at, func(string) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("lookup error: %v", err)
	}
	restore()
	if id := NewSessionID(at); !strings.HasPrefix(id, "20261129_154233_") || len(id) != len("20261129_154233_a3f9c1") {
		t.Fatalf("NewSessionID %q", id)
	}
}
