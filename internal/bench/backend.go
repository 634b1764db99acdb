package bench

import (
	"context"

	"github.com/spoolhq/spool/store"
)

// Store is the part of store.Backend the workloads call.
type Store interface {
	CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	Append(ctx context.Context, sessionID string, m store.Message, opts ...store.WriteOption) (int64, error)
	Conversation(ctx context.Context, sessionID string, v store.View) ([]store.Message, error)
	Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error)
	ListSessions(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error)
	Close() error
}

// Opener opens the store file at path with the given synchronous mode ("NORMAL" or "FULL").
type Opener func(ctx context.Context, path, synchronous string) (Store, error)

// Optional abilities of a backend, found by type assertion. A backend without one reports null
// for the figure it feeds.
type (
	// matchChecker says whether the FTS engine refuses the sanitized form of a query (W3
	// engine_rejected).
	matchChecker interface {
		CheckMatch(ctx context.Context, query string) error
	}
	// busyCounter counts write retries after a locked database (W5 lock_retries).
	busyCounter interface{ BusyRetries() int64 }
	// versioner reports the linked SQLite library.
	versioner interface {
		SQLiteVersion(ctx context.Context) (string, error)
	}
	// journaler reports the journal mode in force.
	journaler interface{ JournalMode() string }
)
