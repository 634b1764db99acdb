package recall

import (
	"context"

	"github.com/spoolhq/spool/store"
)

// Store is the read-only part of store.Backend that recall uses; every store.Backend satisfies it.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	ResolveSession(ctx context.Context, ref string) (store.Session, error)
	ResolveSessionOf(ctx context.Context, userID, ref string) (store.Session, error)
	Root(ctx context.Context, id string) (string, error)
	Chain(ctx context.Context, id string) ([]store.Session, error)
	Conversation(ctx context.Context, sessionID string, v store.View) ([]store.Message, error)
	Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error)
	ListSessions(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error)
}

var _ Store = store.Backend(nil)
