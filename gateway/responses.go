package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

// ResponseRecord is what a Responses API id names: a position in a session (its turn's user
// and assistant messages) and how the response ended. It is kept in the store's responses
// table (store.APIResponses), so every replica on the database finds it.
type ResponseRecord struct {
	ID            string `json:"-"`
	SessionID     string `json:"-"`
	Status        string `json:"status"` // in_progress, completed, incomplete, failed, cancelled
	Model         string `json:"model"`
	CreatedAt     int64  `json:"created_at"`
	MessageID     int64  `json:"message_id,omitempty"`
	UserMessageID int64  `json:"user_message_id,omitempty"`
	Previous      string `json:"previous_response_id,omitempty"`
	// Instructions, MaxOutputTokens and Truncation are the request's, echoed in the object.
	Instructions    string `json:"instructions,omitempty"`
	MaxOutputTokens int    `json:"max_output_tokens,omitempty"`
	Truncation      string `json:"truncation,omitempty"`
	// NotStored marks a store:false response (never saved; its session is deleted after it).
	NotStored bool `json:"-"`
	// Calls are the ids of the client tool calls the response ended at.
	Calls    []string        `json:"calls,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Usage    store.Usage     `json:"usage"`
	Error    string          `json:"error,omitempty"`
	Deleted  bool            `json:"deleted,omitempty"`
}

// SaveResponse records r for principal; a completed or incomplete response becomes its
// session's latest (the one previous_response_id continues without a branch).
func (g *Gateway) SaveResponse(ctx context.Context, principal string, r ResponseRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	start := time.Now()
	err = g.st.PutResponse(context.WithoutCancel(ctx), store.Response{ID: r.ID, Principal: principal, SessionID: r.SessionID,
		Status: r.Status, MessageID: r.MessageID, CreatedAt: time.Unix(r.CreatedAt, 0), Record: b,
		Latest: r.Status == "completed" || r.Status == "incomplete"})
	g.observe("put_response", start)
	if err != nil {
		return fmt.Errorf("record response %s: %w", r.ID, err)
	}
	return nil
}

// Response finds a principal's response record; a deleted or foreign one is ErrNotFound.
func (g *Gateway) Response(ctx context.Context, principal, id string) (ResponseRecord, error) {
	start := time.Now()
	rec, err := g.st.GetResponse(ctx, principal, id)
	g.observe("get_response", start)
	if errors.Is(err, store.ErrNotFound) {
		return ResponseRecord{}, fmt.Errorf("response %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return ResponseRecord{}, fmt.Errorf("find response %s: %w", id, err)
	}
	var r ResponseRecord
	if err := json.Unmarshal(rec.Record, &r); err != nil {
		return ResponseRecord{}, fmt.Errorf("response %s is unreadable: %w", id, err)
	}
	if r.Deleted {
		return ResponseRecord{}, fmt.Errorf("response %s: %w", id, ErrNotFound)
	}
	if _, err := g.owned(ctx, principal, rec.SessionID); err != nil {
		return ResponseRecord{}, err
	}
	r.ID, r.SessionID = id, rec.SessionID
	return r, nil
}

// Messages loads the messages of a principal's session as a person sees them (archived rows
// included), for the Responses and conversations routes.
func (g *Gateway) Messages(ctx context.Context, principal, sessionID string) ([]store.Message, error) {
	if _, err := g.owned(ctx, principal, sessionID); err != nil {
		return nil, err
	}
	start := time.Now()
	ms, err := g.st.Conversation(ctx, sessionID, store.ViewDisplay)
	g.observe("conversation", start)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", sessionID, err)
	}
	return ms, nil
}

// Interrupt cancels the running turn of a session, if this process runs one.
func (g *Gateway) Interrupt(sessionID string) bool {
	g.mu.Lock()
	s := g.slots[sessionID]
	g.mu.Unlock()
	if s == nil {
		return false
	}
	s.interrupt()
	return true
}
