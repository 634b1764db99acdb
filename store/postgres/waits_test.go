package postgres

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// lockedBuffer collects a logger's output across goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A transaction that keeps a session's row locked (an idle psql in a transaction, a paused
// replica) no longer holds an append for as long as its context lasts (before: forever without
// a deadline): the append waits the write budget (here 1.5 s, the connections' lock_timeout),
// says what it waits for, and fails with a *store.WriteTimeoutError; once the holder commits,
// the next append lands.
func TestLockedSessionRowTimesOut(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	var log lockedBuffer
	db, err := Open(bg, dsn, Options{WriteBudget: 1500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(bg)
	tx, err := other.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(bg)
	if _, err := tx.Exec(bg, "SELECT id FROM sessions WHERE id = 's' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	// A hang guard only: the verdict is the error, not the time it took.
	ctx, cancel := context.WithTimeout(bg, 3*time.Minute)
	defer cancel()
	_, err = db.Append(ctx, "s", store.Message{Role: store.RoleUser, Content: "behind a held row"})
	var wt *store.WriteTimeoutError
	if !errors.As(err, &wt) || !errors.Is(err, store.ErrWriteTimeout) {
		t.Fatalf("append behind a held row: %v, want a *store.WriteTimeoutError", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "a lock another PostgreSQL transaction holds") {
		t.Errorf("error line %q", msg)
	}
	if !strings.Contains(log.String(), "waiting for PostgreSQL to complete a write") {
		t.Errorf("no notice of the wait in the log: %q", log.String())
	}
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, "s", store.Message{Role: store.RoleUser, Content: "after the holder left"}); err != nil {
		t.Fatalf("append once the row is free: %v", err)
	}
	if ms, err := db.Conversation(bg, "s", store.ViewAll); err != nil || len(ms) != 1 {
		t.Fatalf("%d rows (%v): want only the append after the holder left", len(ms), err)
	}
}

// The server dropping every connection of spool's (what a restart does to them; here
// pg_terminate_backend, the server being shared) does not fail the next writes: each is run
// again on a new connection, since the server dropped it before its commit. Before, the first
// write on each dropped pooled connection failed at once with "terminating connection due to
// administrator command".
func TestDroppedConnectionsReconnect(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	db, err := Open(bg, dsn, Options{Logger: slog.New(slog.DiscardHandler), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(bg, store.NewSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(bg)
	ctx, cancel := context.WithTimeout(bg, 3*time.Minute) // hang guard
	defer cancel()
	for round := range 3 {
		// Warm every pooled connection, so that the writes below meet dropped ones.
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = db.pool.Exec(ctx, "SELECT pg_sleep(0.05)")
			}()
		}
		wg.Wait()
		var n int
		if err := admin.QueryRow(bg, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("no connection of the store's to drop")
		}
		l, err := db.AcquireLease(ctx, "s", "holder", time.Minute)
		if err != nil {
			t.Fatalf("round %d: lease after the server dropped %d connections: %v", round, n, err)
		}
		if _, err := db.Append(ctx, "s", store.Message{Role: store.RoleUser, Content: "after the drop"}, store.WithLease(l)); err != nil {
			t.Fatalf("round %d: append after the server dropped %d connections: %v", round, n, err)
		}
		if err := db.ReleaseLease(ctx, l); err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
	}
	if ms, err := db.Conversation(bg, "s", store.ViewAll); err != nil || len(ms) != 3 {
		t.Fatalf("%d rows (%v), want one per round", len(ms), err)
	}
}
