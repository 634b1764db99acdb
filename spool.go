package spool

import (
	"context"
	"log/slog"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/sqlite"
)

// Memory is the DSN of a database in memory that lives until Close: every Open of it is a new,
// empty store nobody else reaches, and no file is created anywhere (tests, examples,
// short-lived programs). Memory followed by a name (":memory:chat") is shared by every handle
// of this process that opens the same name while one of them is open.
const Memory = sqlite.Memory

// The types a program handles, re-exported from the packages that own them.
type (
	// Message is one stored message: a role, its content, tool calls or a tool result.
	Message = store.Message
	// ToolCall is a model's call of a tool, as stored on the assistant message.
	ToolCall = store.ToolCall
	// SearchHit is one full-text match, with its session and message.
	SearchHit = store.SearchHit
	// Usage sums model calls' tokens (cached ones apart) and cost.
	Usage = store.Usage
	// SessionInfo is a session's stored row.
	SessionInfo = store.Session
)

// Message roles.
const (
	RoleSystem    = store.RoleSystem
	RoleUser      = store.RoleUser
	RoleAssistant = store.RoleAssistant
	RoleTool      = store.RoleTool
)

// UserMessage is a message from the user.
func UserMessage(text string) Message { return Message{Role: RoleUser, Content: text} }

// AssistantMessage is a reply of the model.
func AssistantMessage(text string) Message { return Message{Role: RoleAssistant, Content: text} }

// DB is an open session store. It is safe for concurrent use, also by several processes (and,
// on PostgreSQL, several hosts) on the same database.
type DB struct {
	st  store.Backend
	log *slog.Logger
}

// Option tunes Open.
type Option func(*openOptions)

type openOptions struct {
	log *slog.Logger
}

// WithLogger sends the store's warnings (a write waiting for another process, a reclaimed
// lock) to l instead of slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *openOptions) { o.log = l } }

// Open opens (creating and migrating when needed) the store at dsn: a file path for SQLite, a
// postgres:// or postgresql:// URL for PostgreSQL, or Memory (":memory:") for a database that
// lives until Close.
func Open(ctx context.Context, dsn string, opts ...Option) (*DB, error) {
	var o openOptions
	for _, f := range opts {
		f(&o)
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	var (
		st  store.Backend
		err error
	)
	switch {
	case dsn == "":
		return nil, newError("open", "", ClassInvalid, errEmptyDSN)
	case postgres.IsURL(dsn):
		st, err = postgres.Open(ctx, dsn, postgres.Options{Logger: o.log})
	default:
		st, err = sqlite.Open(ctx, dsn, sqlite.Options{Logger: o.log})
	}
	if err != nil {
		return nil, wrap("open", "", err)
	}
	return &DB{st: st, log: o.log}, nil
}

// Close closes the store; a Memory database is gone with its last handle.
func (db *DB) Close() error {
	if c, ok := db.st.(interface{ Close() error }); ok {
		return wrap("close", "", c.Close())
	}
	return nil
}

// Store is the underlying store.Backend, for what this package does not cover (listing
// sessions, usage, routes, leases).
func (db *DB) Store() store.Backend { return db.st }

// NewSession starts a session; title may be empty (titles are unique: a title in use is an
// error of ClassInvalid).
func (db *DB) NewSession(ctx context.Context, title string) (*Session, error) {
	id, err := store.FreshSessionID(timeNow(), func(id string) (bool, error) {
		_, err := db.st.GetSession(ctx, id)
		if err == nil {
			return true, nil
		}
		if isNotFound(err) {
			return false, nil
		}
		return false, err
	})
	if err != nil {
		return nil, wrap("new session", "", err)
	}
	s, err := db.st.CreateSession(ctx, store.NewSession{ID: id, Source: Source, Title: title, StartedAt: timeNow()})
	if err != nil {
		return nil, wrap("new session", id, err)
	}
	return &Session{db: db, id: s.ID}, nil
}

// Session returns the session ref names: its id, its title, or a unique prefix of its id. A
// session continued by compression rotation resolves to its live continuation.
func (db *DB) Session(ctx context.Context, ref string) (*Session, error) {
	s, err := db.st.ResolveSession(ctx, ref)
	if err != nil {
		return nil, wrap("session", ref, err)
	}
	id, err := db.st.ResumeTarget(ctx, s.ID)
	if err != nil {
		return nil, wrap("session", s.ID, err)
	}
	return &Session{db: db, id: id}, nil
}

// Source is the source stamped on the sessions this package creates.
const Source = "sdk"
