package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

func testIdempotency(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	claim := func(st store.Backend, scope, key, hash string, at time.Time) (store.IdempotencyEntry, bool) {
		t.Helper()
		e, ok, err := st.ClaimIdempotencyKey(bg, store.IdempotencyClaim{
			Entry:        store.IdempotencyEntry{Scope: scope, Key: key, RequestHash: hash, CreatedAt: at},
			ExpireBefore: at.Add(-24 * time.Hour), StaleBefore: at.Add(-10 * time.Minute),
		})
		if err != nil {
			t.Fatalf("claim %s/%s: %v", scope, key, err)
		}
		return e, ok
	}

	if _, ok := claim(st, "alice", "k1", "h1", now); !ok {
		t.Fatal("first claim of a fresh key was refused")
	}
	// Pending: a second claim sees the pending entry, whatever its body.
	if e, ok := claim(st, "alice", "k1", "h2", now.Add(time.Second)); ok || e.Status != 0 || e.RequestHash != "h1" {
		t.Fatalf("second claim of a pending key = %+v, %v; want the pending h1 entry", e, ok)
	}
	// Another scope has a key space of its own.
	if _, ok := claim(st, "bob", "k1", "h9", now); !ok {
		t.Fatal("the same key in another scope was refused")
	}
	if err := st.CompleteIdempotencyKey(bg, "alice", "k1", 200, []byte(`{"id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	e, ok := claim(h.reopen(t, dsn), "alice", "k1", "h1", now.Add(time.Hour))
	if ok || e.Status != 200 || string(e.Response) != `{"id":"x"}` || e.RequestHash != "h1" || !e.CreatedAt.Equal(now) {
		t.Fatalf("claim of a finished key = %+v, %v; want the stored outcome", e, ok)
	}
	// Finished entries expire after the retention; then the key is free again.
	if _, ok := claim(st, "alice", "k1", "h3", now.Add(25*time.Hour)); !ok {
		t.Fatal("an expired key was not reclaimed")
	}
	// A pending claim older than StaleBefore (its process died) is replaced.
	claim(st, "alice", "k2", "h1", now)
	if _, ok := claim(st, "alice", "k2", "h1", now.Add(11*time.Minute)); !ok {
		t.Fatal("an abandoned pending claim was not replaced")
	}
	// Release drops a pending claim but never a finished one.
	if err := st.ReleaseIdempotencyKey(bg, "alice", "k2"); err != nil {
		t.Fatal(err)
	}
	if _, ok := claim(st, "alice", "k2", "h1", now.Add(12*time.Minute)); !ok {
		t.Fatal("a released key was not free")
	}
	if err := st.CompleteIdempotencyKey(bg, "alice", "k2", 409, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseIdempotencyKey(bg, "alice", "k2"); err != nil {
		t.Fatal(err)
	}
	if e, ok := claim(st, "alice", "k2", "h1", now.Add(13*time.Minute)); ok || e.Status != 409 {
		t.Fatalf("release removed a finished entry: %+v, %v", e, ok)
	}
	wantErr(t, st.CompleteIdempotencyKey(bg, "alice", "never", 200, nil), store.ErrNotFound, "complete an unclaimed key")
	wantErr(t, st.CompleteIdempotencyKey(bg, "alice", "k1", 0, nil), store.ErrInvalid, "complete with status 0")
	_, _, err := st.ClaimIdempotencyKey(bg, store.IdempotencyClaim{Entry: store.IdempotencyEntry{Scope: "alice"}})
	wantErr(t, err, store.ErrInvalid, "claim an empty key")

	// Concurrent claims of one key: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := st.ClaimIdempotencyKey(bg, store.IdempotencyClaim{
				Entry:        store.IdempotencyEntry{Scope: "carol", Key: "race", RequestHash: "h", CreatedAt: now},
				ExpireBefore: now.Add(-time.Hour), StaleBefore: now.Add(-time.Hour),
			})
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d of 8 concurrent claims won, want exactly 1", wins)
	}
	expectHealthy(t, st)
}
