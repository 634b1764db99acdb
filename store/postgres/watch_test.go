package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// TestWatchSurvivesListenerLoss: the notification connection is killed by the server; a waiter
// is still woken (by the reconnect's wake-up of every watcher, a hint like any other), and a
// release after the reconnect wakes it again. Wait never sleeps through its whole period.
func TestWatchSurvivesListenerLoss(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	if _, err := db.CreateSession(bg, store.NewSession{ID: "w"}); err != nil {
		t.Fatal(err)
	}
	watch, err := db.WatchLease("w")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	var killed int
	if err := db.pool.QueryRow(bg, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate the listener: %d %v", killed, err)
	}
	// Waits of an hour, bounded by a context of two minutes: only a wake-up ends them in time.
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	defer cancel()
	if err := watch.Wait(ctx, time.Hour); err != nil {
		t.Fatalf("the lost listener woke nobody: %v", err)
	}
	// Once it listens again, a release is heard.
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := db.pool.QueryRow(bg, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND query LIKE 'LISTEN %'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener did not reconnect")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	l, err := db.AcquireLease(bg, "w", "holder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseLease(bg, l); err != nil {
		t.Fatal(err)
	}
	if err := watch.Wait(ctx, time.Hour); err != nil {
		t.Fatalf("a release after the reconnect woke nobody: %v", err)
	}
}
