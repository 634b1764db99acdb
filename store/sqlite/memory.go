package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/store"
)

// memory is what a Memory database has that a file does not: its name in SQLite's memdb VFS,
// the connection that keeps it alive while the handle is open, and the bells that wake lease
// waiters (in this process: nobody else can reach the database).
//
// The memdb VFS rather than a shared-cache ":memory:" database: every connection of the handle
// (the writer, the read pool) reaches one database by its name, with the same locking as a
// file in rollback-journal mode (SQLITE_BUSY, which the busy timeout and the write retry
// handle), where shared cache locks table by table and fails readers at once with
// SQLITE_LOCKED. There is no WAL, no raw reader (it opens files) and no write gate (a lock
// file): the writer's single connection orders this handle's writes, SQLite's lock the rest.
type memory struct {
	name  string // "/spool-<name>": memdb's name of the database
	keep  *sql.DB
	bells *bells
}

// bells wake the lease waiters of one in-memory database, shared by its handles.
type bells struct {
	mu    sync.Mutex
	refs  int // open handles
	rings map[string]chan struct{}
}

var (
	memMu    sync.Mutex
	memBells = map[string]*bells{} // by memdb name, while a handle is open
)

// bellsOf returns (and counts a handle of) the bells of the database named name.
func bellsOf(name string) *bells {
	memMu.Lock()
	defer memMu.Unlock()
	b := memBells[name]
	if b == nil {
		b = &bells{rings: map[string]chan struct{}{}}
		memBells[name] = b
	}
	b.refs++
	return b
}

// close releases a handle's reference to its bells and its keeper connection.
func (m *memory) close() error {
	memMu.Lock()
	if m.bells.refs--; m.bells.refs == 0 {
		delete(memBells, m.name)
	}
	memMu.Unlock()
	return m.keep.Close() // the last connection of the last handle: the database goes
}

// dsn is the database/sql DSN of a connection to the memory database.
func (m *memory) dsn(busyMS int, synchronous string, readOnly bool) string {
	return dsn(m.name, busyMS, synchronous, readOnly) + "&vfs=memdb"
}

// openMemory opens the in-memory database called name (a new, unique one when name is ""):
// reached by its memdb name, kept alive by one connection of its own until Close, written and
// read like a file in rollback-journal mode.
func openMemory(ctx context.Context, name string, opts Options) (*DB, error) {
	if name == "" {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("open %s: %w", Memory, err)
		}
		name = hex.EncodeToString(b[:])
	}
	if strings.ContainsAny(name, "/?#") {
		return nil, fmt.Errorf("open %s%s: a memory database's name has no '/', '?' or '#'", Memory, name)
	}
	m := &memory{name: "/spool-" + name}
	db := shared(&DB{path: Memory + name, opts: opts, log: opts.Logger})
	fail := func(err error, pools ...*sql.DB) (*DB, error) {
		for _, p := range pools {
			p.Close()
		}
		return nil, fmt.Errorf("open %s: %w", db.path, err)
	}
	var err error
	if m.keep, err = openPool(m.dsn(writeBusyTimeoutMS, opts.Synchronous, false), 1); err != nil {
		return fail(err)
	}
	if err := m.keep.PingContext(ctx); err != nil {
		return fail(err, m.keep)
	}
	if db.w, err = openPool(m.dsn(writeBusyTimeoutMS, opts.Synchronous, false), 1); err != nil {
		return fail(err, m.keep)
	}
	db.mem = m // setup asks for it (the journal mode)
	if err := db.retryBusy(ctx, func() error { return db.setup(ctx) }); err != nil {
		return fail(err, db.w, m.keep)
	}
	if err := db.prepareWriter(ctx); err != nil {
		return fail(err, db.w, m.keep)
	}
	if db.r, err = openPool(m.dsn(readBusyTimeoutMS, opts.Synchronous, true), opts.ReadConns); err != nil {
		return fail(err, db.w, m.keep)
	}
	m.bells = bellsOf(m.name)
	db.group = startGroupWriter(db)
	return db, nil
}

// openPool opens a database/sql pool of n connections that are kept (never closed for age).
func openPool(dsn string, n int) (*sql.DB, error) {
	p, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	p.SetMaxOpenConns(n)
	p.SetMaxIdleConns(n)
	p.SetConnMaxLifetime(0)
	p.SetConnMaxIdleTime(0)
	return p, nil
}

// bell is the channel the next release of conversationID closes.
func (b *bells) bell(conversationID string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.rings[conversationID]
	if c == nil {
		c = make(chan struct{})
		b.rings[conversationID] = c
	}
	return c
}

// ring wakes the watchers of conversationID's lease.
func (b *bells) ring(conversationID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.rings[conversationID]; c != nil {
		close(c)
		delete(b.rings, conversationID)
	}
}

// memWatch is a store.LeaseWatch on a memory database's bell.
type memWatch struct {
	b  *bells
	id string
	c  chan struct{}
}

func (m *memory) watch(conversationID string) store.LeaseWatch {
	return &memWatch{b: m.bells, id: conversationID, c: m.bells.bell(conversationID)}
}

func (w *memWatch) Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	case <-w.c:
		w.c = w.b.bell(w.id) // the next Wait waits for the next release
		return nil
	}
}

func (w *memWatch) Close() error { return nil }
