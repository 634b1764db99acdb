package spool

import (
	"context"
	"errors"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/recall"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
)

// timeNow is the clock of the sessions this package creates.
var timeNow = time.Now

// Session is a handle on one stored conversation. It holds no state of its own: every call
// reads or writes the store, so handles on the same session (in this process or others) agree.
type Session struct {
	db *DB
	id string
}

// RecallResult is what Recall found: sessions about the query with their matching messages.
type RecallResult = recall.Discovery

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Info reads the session's row: title, model, counts, usage, lineage.
func (s *Session) Info(ctx context.Context) (SessionInfo, error) {
	info, err := s.db.st.GetSession(ctx, s.id)
	return info, wrap("info", s.id, err)
}

// Append stores messages at the end of the session, in order, in one transaction.
func (s *Session) Append(ctx context.Context, ms ...Message) error {
	_, err := s.db.st.AppendBatch(ctx, s.id, ms)
	return wrap("append", s.id, err)
}

// Load returns what the model sees: the active history. After a compaction it starts with
// the kept head and the summary (with its working set and pointers to the archived
// messages), followed by the recent messages.
func (s *Session) Load(ctx context.Context) ([]Message, error) {
	ms, err := s.db.st.Conversation(ctx, s.id, store.ViewActive)
	return ms, wrap("load", s.id, err)
}

// Transcript returns the whole conversation as a person would read it: the active history
// and every message compaction archived, in order.
func (s *Session) Transcript(ctx context.Context) ([]Message, error) {
	ms, err := s.db.st.Conversation(ctx, s.id, store.ViewDisplay)
	return ms, wrap("transcript", s.id, err)
}

// Pop undoes the last exchange: the last user message and everything after it leave the
// history (kept for audit, no longer shown, searched or sent). It returns how many messages
// left; with no user message to undo, the error is of ClassNotFound. Pop holds the
// conversation's turn lease for the edit: while a turn runs on it (in this process or
// another), the error is of ClassBusy and nothing changes.
func (s *Session) Pop(ctx context.Context) (int, error) {
	n, err := store.UnderLease(ctx, s.db.st, s.id, func(f store.Fence) (int, error) {
		return s.db.st.UndoLastExchange(ctx, s.id, f)
	})
	return n, wrap("pop", s.id, err)
}

// Clear removes every exchange from the session, as Pop does one at a time, under one hold of
// the turn lease (ClassBusy while a turn runs): the model starts afresh, and the messages are
// kept in the store for audit only (not shown, searched or sent). It returns how many messages
// left.
func (s *Session) Clear(ctx context.Context) (int, error) {
	total, err := store.UnderLease(ctx, s.db.st, s.id, func(f store.Fence) (int, error) {
		total := 0
		for {
			n, err := s.db.st.UndoLastExchange(ctx, s.id, f)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return total, nil
			case err != nil:
				return total, err
			}
			total += n
		}
	})
	return total, wrap("clear", s.id, err)
}

// Search runs a full-text query over the session's messages, archived ones included, best
// match first (limit 0: 20). The query is plain words; quotes make a phrase.
func (s *Session) Search(ctx context.Context, query string, limit int) ([]SearchHit, error) {
	hits, err := s.db.st.Search(ctx, store.SearchQuery{Text: query, SessionIDs: []string{s.id}, Limit: limit})
	return hits, wrap("search", s.id, err)
}

// Branch copies the active history into a new child session (title may be empty) and returns
// it; the two go on independently.
func (s *Session) Branch(ctx context.Context, title string) (*Session, error) {
	child, err := s.db.st.Branch(ctx, s.id, store.NewSession{Title: title, Source: Source})
	if err != nil {
		return nil, wrap("branch", s.id, err)
	}
	return &Session{db: s.db, id: child.ID}, nil
}

// Recall runs spool's session_search for this session: sessions about query (this one's
// active messages left out, since the model sees them; its archived ones included), each with
// its matching messages in context.
func (s *Session) Recall(ctx context.Context, query string) (RecallResult, error) {
	d, err := recall.Discover(ctx, s.db.st, recall.Request{Current: s.id, Query: query, Limit: recall.DefaultLimit, Window: recall.DefaultWindow})
	return d, wrap("recall", s.id, err)
}

// Tokens estimates the active history's size in tokens, as spool's agent estimates a request
// (characters / 4, plus each message's envelope): a caller driving its own loop compares it with its
// window (see ShouldCompact).
func (s *Session) Tokens(ctx context.Context) (int, error) {
	ms, err := s.Load(ctx)
	if err != nil {
		return 0, err
	}
	return tokens.Estimate(ms), nil
}

// ShouldCompact reports whether the active history has reached the compaction trigger of a
// model with a window of contextLength tokens (the trigger spool's agent uses).
func (s *Session) ShouldCompact(ctx context.Context, model string, contextLength int) (bool, error) {
	res, err := compress.Resolve(compress.DefaultConfig(), compress.Model{Name: model, ContextLength: contextLength})
	if err != nil {
		return false, wrap("should compact", s.id, err)
	}
	n, err := s.Tokens(ctx)
	return err == nil && n >= res.Tokens, err
}
