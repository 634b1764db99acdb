package recall

import (
	"context"
	"errors"
	"fmt"

	"github.com/spoolhq/spool/store"
)

// Scope limits which sessions a request sees. A caller whose session carries a gateway
// session key (a chat-platform session) is scoped to that key by default: its own lineage and
// the sessions of the same key (its chat's earlier sessions, before a /new); other chats'
// sessions are invisible. Wide, asked explicitly, widens it to every session of the same
// principal (user id) — never beyond.
type Scope struct {
	// SessionKey admits the sessions with this gateway session key.
	SessionKey string
	// Wide admits every session whose UserID is UserID.
	Wide   bool
	UserID string
}

// scopeOf is the request's scope: the one asked for, else the caller's key scope, else none.
func scopeOf(ctx context.Context, lin *lineage, req Request) (*Scope, error) {
	if req.Scope != nil {
		return req.Scope, nil
	}
	if req.Current == "" {
		return nil, nil
	}
	s, err := lin.session(ctx, req.Current)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.SessionKey == "" {
		return nil, nil
	}
	return &Scope{SessionKey: s.SessionKey, UserID: s.UserID}, nil
}

// admits reports whether a session (with lineage root root) is inside the scope.
func (l *lineage) admits(sc *Scope, s store.Session, root string) bool {
	switch {
	case sc == nil:
		return true
	case l.currentRoot != "" && root == l.currentRoot:
		return true
	case sc.SessionKey != "" && s.SessionKey == sc.SessionKey:
		return true
	case sc.Wide && s.UserID == sc.UserID:
		return true
	}
	return false
}

// admitsID looks a session up and checks the scope; an unknown session is not admitted.
func (l *lineage) admitsID(ctx context.Context, sc *Scope, id string) (bool, error) {
	if sc == nil {
		return true, nil
	}
	s, err := l.session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	root, err := l.root(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return l.admits(sc, s, root), nil
}

// inScope refuses a session outside the request's scope as if it did not exist.
func inScope(ctx context.Context, lin *lineage, req Request, id string) error {
	sc, err := scopeOf(ctx, lin, req)
	if err != nil {
		return err
	}
	ok, err := lin.admitsID(ctx, sc, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("unknown session_id %q", req.SessionID)
	}
	return nil
}
