package storetest

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

func testLeases(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "conv"})
	a := leaseExclusive(t, st)
	b := leaseFencedWrites(t, st, a)
	leaseFencedRecords(t, st, a, b)
	c := leaseExpiry(t, st)
	d2 := leaseDeadHolder(t, st)
	leaseOfConversation(t, st, c)
	leaseWakeUp(t, st, d2)
}

// leaseExclusive: one holder at a time, and a holder re-acquiring its own lease gets it.
func leaseExclusive(t *testing.T, st store.Backend) store.Lease {
	a, err := st.AcquireLease(bg, "conv", "holder-a", time.Minute)
	if err != nil || a.Generation != 1 || a.ConversationID != "conv" || a.Holder != "holder-a" {
		t.Fatalf("first acquire: %+v %v", a, err)
	}
	_, err = st.AcquireLease(bg, "conv", "holder-b", time.Minute)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "holder-a" || !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("second holder: %v", err)
	}
	again, err := st.AcquireLease(bg, "conv", "holder-a", time.Minute)
	if err != nil || again.Generation != a.Generation {
		t.Fatalf("the holder re-acquiring its own lease must not wait on itself: %+v %v", again, err)
	}
	return a
}

// leaseFencedWrites: transcript writes under a released or superseded lease are refused; the
// lease acquired after the release (b) is returned.
func leaseFencedWrites(t *testing.T, st store.Backend, a store.Lease) store.Lease {
	// Fenced writes.
	if _, err := st.Append(bg, "conv", user("by a"), store.WithLease(a)); err != nil {
		t.Fatalf("fenced append with the current lease: %v", err)
	}
	if err := st.ReleaseLease(bg, a); err != nil {
		t.Fatal(err)
	}
	_, err := st.Append(bg, "conv", user("stale a"), store.WithLease(a))
	wantErr(t, err, store.ErrLeaseLost, "append with a released lease")
	b, err := st.AcquireLease(bg, "conv", "holder-b", time.Minute)
	if err != nil || b.Generation != 2 {
		t.Fatalf("acquire after release: %+v %v", b, err)
	}
	_, err = st.AppendBatch(bg, "conv", []store.Message{user("stale a 1"), user("stale a 2")}, store.WithLease(a))
	wantErr(t, err, store.ErrLeaseLost, "batch with a superseded generation")
	_, err = st.ArchiveAndCompact(bg, store.CompactRequest{SessionID: "conv", Messages: []store.Message{user("x")}}, a.Fence())
	wantErr(t, err, store.ErrLeaseLost, "compaction with a superseded generation")
	return b
}

// leaseFencedRecords: usage and titles are fenced like the transcript, renewing or releasing a
// superseded lease does not touch the current one, and no refused write landed.
func leaseFencedRecords(t *testing.T, st store.Backend, a, b store.Lease) {
	// Usage is fenced like the transcript: a stale holder adds no request row and no tokens.
	before := mustSession(t, st, "conv").Usage
	err := st.RecordRequest(bg, "conv", store.RequestRecord{Usage: store.Usage{InputTokens: 7, OutputTokens: 3}, Lease: &a})
	wantErr(t, err, store.ErrLeaseLost, "usage recorded with a superseded generation")
	if after := mustSession(t, st, "conv").Usage; after != before {
		t.Fatalf("a refused usage record changed the session's usage: %+v -> %+v", before, after)
	}
	if rs, err := st.Requests(bg, "conv", 0); err != nil || len(rs) != 0 {
		t.Fatalf("a refused usage record left %d request rows (%v)", len(rs), err)
	}
	if err := st.RecordRequest(bg, "conv", store.RequestRecord{Usage: store.Usage{InputTokens: 7}, Lease: &b}); err != nil {
		t.Fatalf("usage recorded with the current lease: %v", err)
	}
	if rs, _ := st.Requests(bg, "conv", 0); len(rs) != 1 {
		t.Fatalf("%d request rows after one fenced record", len(rs))
	}
	// The title is fenced too: a stale turn's automatic title must not replace the live one's.
	if err := st.SetTitle(bg, "conv", "Named by b", store.WithLease(b)); err != nil {
		t.Fatalf("title set under the current lease: %v", err)
	}
	err = st.SetTitle(bg, "conv", "Named by b #2", store.WithLease(a))
	wantErr(t, err, store.ErrLeaseLost, "title set with a superseded generation")
	if got := mustSession(t, st, "conv").Title; got != "Named by b" {
		t.Fatalf("title = %q after a refused stale rename", got)
	}
	_, err = st.RenewLease(bg, a, time.Minute)
	wantErr(t, err, store.ErrLeaseLost, "renew a superseded lease")
	if err := st.ReleaseLease(bg, a); err != nil {
		t.Fatalf("releasing a lost lease is not an error: %v", err)
	}
	if _, err := st.Append(bg, "conv", user("by b"), store.WithLease(b)); err != nil {
		t.Fatalf("a stale release freed b's lease: %v", err)
	}
	if got := contents(mustConversation(t, st, "conv", store.ViewAll)); !equalStrings(got, []string{"by a", "by b"}) {
		t.Fatalf("transcript = %q: a refused write landed", got)
	}
}

// leaseExpiry: an expired lease nobody took still serves its owner; once taken, the old owner
// is fenced out. The taker's lease (c) is returned.
func leaseExpiry(t *testing.T, st store.Backend) store.Lease {
	// Expired but not taken: the owner renews (and writes) without deadlocking on itself.
	b, err := st.AcquireLease(bg, "conv", "holder-b", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if _, err := st.Append(bg, "conv", user("b after expiry"), store.WithLease(b)); err != nil {
		t.Fatalf("write on an expired, untaken lease: %v", err)
	}
	if b, err = st.RenewLease(bg, b, 100*time.Millisecond); err != nil {
		t.Fatalf("renew an expired, untaken lease: %v", err)
	}
	// Expired and taken: the old owner is fenced out.
	time.Sleep(150 * time.Millisecond)
	c, err := st.AcquireLease(bg, "conv", "holder-c", time.Minute)
	if err != nil || c.Generation != 3 {
		t.Fatalf("take an expired lease: %+v %v", c, err)
	}
	_, err = st.Append(bg, "conv", user("b too late"), store.WithLease(b))
	wantErr(t, err, store.ErrLeaseLost, "write after the lease was taken")
	return c
}

// leaseDeadHolder: a provably dead holder on this host is replaced at once. The new lease of
// conv2 is returned.
func leaseDeadHolder(t *testing.T, st store.Backend) store.Lease {
	// A provably dead holder on this host is replaced at once; generations never repeat.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dh := store.NewHolder()
	dh.PID, dh.Start = dead.Process.Pid, ""
	mustCreate(t, st, store.NewSession{ID: "conv2"})
	if _, err := st.AcquireLease(bg, "conv2", dh.String(), time.Hour); err != nil {
		t.Fatal(err)
	}
	d2, err := st.AcquireLease(bg, "conv2", "holder-d", time.Minute)
	if err != nil || d2.Generation != 2 {
		t.Fatalf("lease of a dead holder not reclaimed: %+v %v", d2, err)
	}
	return d2
}

// leaseOfConversation: a continuation shares its root's lease, a branch has its own, and bad
// requests are refused.
func leaseOfConversation(t *testing.T, st store.Backend, c store.Lease) {
	// The lease belongs to the conversation: a compression continuation shares its root's lease,
	// a branch has its own.
	if _, err := st.RotateCompaction(bg, store.RotateRequest{ParentID: "conv", Messages: []store.Message{user("cont")},
		Child: store.NewSession{ID: "conv-cont"}}, c.Fence()); err != nil {
		t.Fatalf("rotate under the lease: %v", err)
	}
	if _, err := st.Append(bg, "conv-cont", user("on the continuation"), store.WithLease(c)); err != nil {
		t.Fatalf("continuation writes under its root's lease: %v", err)
	}
	_, err := st.AcquireLease(bg, "conv-cont", "holder-e", time.Minute)
	wantErr(t, err, store.ErrLeaseHeld, "continuation's lease is its root's")
	if _, err := st.Branch(bg, "conv-cont", store.NewSession{ID: "conv-branch"}); err != nil {
		t.Fatal(err)
	}
	e, err := st.AcquireLease(bg, "conv-branch", "holder-e", time.Minute)
	if err != nil || e.ConversationID != "conv-branch" {
		t.Fatalf("a branch is its own conversation: %+v %v", e, err)
	}
	_, err = st.Append(bg, "conv-cont", user("wrong lease"), store.WithLease(e))
	wantErr(t, err, store.ErrLeaseLost, "a lease of another conversation")
	_, err = st.AcquireLease(bg, "missing", "x", time.Minute)
	wantErr(t, err, store.ErrNotFound, "lease of a missing session")
	_, err = st.AcquireLease(bg, "conv2", "", time.Minute)
	wantErr(t, err, store.ErrInvalid, "empty holder")
}

// leaseWakeUp: a release wakes a watcher of the lease (d2's) long before its poll interval.
func leaseWakeUp(t *testing.T, st store.Backend, d2 store.Lease) {
	// Wake-up: a release wakes a watcher long before its poll interval.
	w, ok := st.(store.LeaseWatcher)
	if !ok {
		t.Log("backend has no lease watcher; waiters poll")
		return
	}
	watch, err := w.WatchLease("conv2")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	released := make(chan struct{})
	// The release may still be leaving the store when the watcher wakes: wait for it before the
	// test's cleanup closes the store.
	defer func() { <-released }()
	go func() {
		defer close(released)
		time.Sleep(50 * time.Millisecond)
		_ = st.ReleaseLease(bg, d2)
	}()
	start := time.Now()
	if err := watch.Wait(bg, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("release did not wake the watcher (waited %v)", waited)
	}
}
