package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/agent"

	"github.com/spoolhq/spool/store"
)

// ErrNoCompaction: the gateway's runner cannot compact (compression disabled or no engine).
var ErrNoCompaction = errors.New("compaction is not available (compression.enabled)")

// CreateConversation starts a session for principal holding msgs.
func (g *Gateway) CreateConversation(ctx context.Context, principal string, msgs []Message, meta json.RawMessage) (store.Session, error) {
	s, err := g.create(ctx, principal, store.NewSession{})
	if err != nil {
		return store.Session{}, err
	}
	if len(msgs) > 0 {
		start := time.Now()
		_, err := g.st.AppendBatch(ctx, s.ID, clientRows(msgs))
		g.observe("append_history", start)
		if err != nil {
			return store.Session{}, fmt.Errorf("store the items of %s: %w", s.ID, err)
		}
	}
	if err := g.SetConversationMeta(ctx, principal, s.ID, meta); err != nil {
		return store.Session{}, err
	}
	return s, nil
}

// SetConversationMeta stores a conversation's metadata.
func (g *Gateway) SetConversationMeta(ctx context.Context, principal, sessionID string, meta json.RawMessage) error {
	if len(meta) == 0 || string(meta) == "null" {
		meta = json.RawMessage(`{}`)
	}
	var obj map[string]any
	if err := json.Unmarshal(meta, &obj); err != nil {
		return badRequest("metadata", "metadata must be an object of strings")
	}
	if len(obj) > 16 {
		return badRequest("metadata", "metadata holds at most 16 pairs, got %d", len(obj))
	}
	if err := g.st.PutConversationMeta(ctx, principal, sessionID, meta); err != nil {
		return fmt.Errorf("store the metadata of %s: %w", sessionID, err)
	}
	return nil
}

// Conversation returns a principal's session and its metadata ({} when none was set).
func (g *Gateway) Conversation(ctx context.Context, principal, id string) (store.Session, json.RawMessage, error) {
	if _, err := g.owned(ctx, principal, id); err != nil {
		return store.Session{}, nil, err
	}
	s, err := g.st.GetSession(ctx, id)
	if err != nil {
		return store.Session{}, nil, fmt.Errorf("find session %s: %w", id, err)
	}
	meta, err := g.st.ConversationMeta(ctx, id)
	if err != nil {
		return store.Session{}, nil, fmt.Errorf("find the metadata of %s: %w", id, err)
	}
	if len(meta) == 0 {
		meta = json.RawMessage(`{}`)
	}
	return s, meta, nil
}

// DeleteConversation deletes a principal's session. While a turn of its conversation runs, in
// this process or another (the store refuses under a live turn lease), it is *BusyError.
func (g *Gateway) DeleteConversation(ctx context.Context, principal, id string) error {
	tip, err := g.owned(ctx, principal, id)
	if err != nil {
		return err
	}
	sl, err := g.acquire(ctx, tip, BusyWait)
	if err != nil {
		return err
	}
	defer g.releaseSlot(tip, sl)
	return g.deleteSession(ctx, id)
}

// DropConversation is DeleteConversation for a turn's own OnDone (an unstored response drops
// its session), whose in-process slot is still held: it skips the slot and relies on the store,
// which refuses while another holder has the conversation's turn lease (then *BusyError).
func (g *Gateway) DropConversation(ctx context.Context, principal, id string) error {
	if _, err := g.owned(ctx, principal, id); err != nil {
		return err
	}
	return g.deleteSession(ctx, id)
}

// deleteSession deletes id, a live turn lease on its conversation being *BusyError.
func (g *Gateway) deleteSession(ctx context.Context, id string) error {
	if err := g.st.DeleteSession(ctx, id); errors.Is(err, store.ErrLeaseHeld) {
		return &BusyError{SessionID: id, RetryAfter: g.cfg.RetryAfter}
	} else if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	return nil
}

// AppendItems adds messages to a principal's session between turns (waiting for a running one
// like a turn would) and returns them with their ids.
func (g *Gateway) AppendItems(ctx context.Context, principal, id string, msgs []Message) ([]store.Message, error) {
	tip, err := g.owned(ctx, principal, id)
	if err != nil {
		return nil, err
	}
	sl, err := g.acquire(ctx, tip, BusyWait)
	if err != nil {
		return nil, err
	}
	defer g.releaseSlot(tip, sl)
	rows := clientRows(msgs)
	start := time.Now()
	ids, err := g.st.AppendBatch(ctx, tip, rows)
	g.observe("append_history", start)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", tip, err)
	}
	for i := range rows {
		rows[i].ID, rows[i].SessionID = ids[i], tip
	}
	return rows, nil
}

// Items pages through a principal's session as a person sees it (archived rows included).
func (g *Gateway) Items(ctx context.Context, principal, id string, q store.PageQuery) ([]store.Message, error) {
	if _, err := g.owned(ctx, principal, id); err != nil {
		return nil, err
	}
	q.View = store.ViewDisplay
	start := time.Now()
	ms, err := g.st.ConversationPage(ctx, id, q)
	g.observe("conversation_page", start)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", id, err)
	}
	return ms, nil
}

// Compact compacts a principal's session now, in its turn like a turn would.
func (g *Gateway) Compact(ctx context.Context, principal, id string) (string, error) {
	c, ok := g.run.(Compactor)
	if !ok {
		return "", ErrNoCompaction
	}
	tip, err := g.owned(ctx, principal, id)
	if err != nil {
		return "", err
	}
	sl, err := g.acquire(ctx, tip, BusyWait)
	if err != nil {
		return "", err
	}
	defer g.releaseSlot(tip, sl)
	var notices []string
	res, err := c.Compact(context.WithoutCancel(ctx), tip, "", agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
	g.m.compactions.Add(float64(res.Compactions))
	if err != nil {
		return "", g.classify(tip, err)
	}
	if res.Compactions == 0 {
		return "", badRequest("previous_response_id", "nothing to compact in session %s: %s", tip, strings.Join(notices, "; "))
	}
	return res.SessionID, nil
}

// DeleteItem removes message mid from a principal's conversation id (DELETE
// /v1/conversations/{id}/items/{item}): the row is hidden, not destroyed (store.HideMessage:
// kept for audit, no longer shown, searched or sent to the model), and an assistant message
// takes the tool results of its calls with it. It waits for a running turn like AppendItems
// (then *BusyError), and across processes it holds the conversation's turn lease for the write.
// A message that is not a shown item of the conversation is ErrNotFound; a summary or a tool
// result alone is a *BadRequestError.
func (g *Gateway) DeleteItem(ctx context.Context, principal, id string, mid int64) error {
	tip, err := g.owned(ctx, principal, id)
	if err != nil {
		return err
	}
	sl, err := g.acquire(ctx, tip, BusyWait)
	if err != nil {
		return err
	}
	defer g.releaseSlot(tip, sl)
	hideIn := func(ctx context.Context, sid string, row int64, f store.Fence) error {
		var opts []store.WriteOption
		if sid != tip {
			// An item listed under an earlier, compacted part of the conversation.
			opts = append(opts, store.AllowClosed())
		}
		start := time.Now()
		_, err := g.st.HideMessage(ctx, sid, row, f, opts...)
		g.observe("hide_message", start)
		return err
	}
	hide := func(ctx context.Context, f store.Fence) error {
		// A rotation copied the item into the newer sessions of the conversation (and the item
		// may itself be such a copy): every copy goes first, the named row last, so a retry after
		// a failure still finds the item and finishes the job.
		copies, err := g.copiesOf(ctx, id, mid)
		if err != nil {
			return err
		}
		for _, c := range copies {
			if err := hideIn(ctx, c.SessionID, c.ID, f); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return hideIn(ctx, id, mid, f)
	}
	// Another process's turn is waited for no longer than one of ours.
	err = g.fenced(ctx, tip, hide)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("item %d of %s: %w", mid, id, ErrNotFound)
	case errors.Is(err, store.ErrInvalid):
		var inv *store.InvalidError
		if errors.As(err, &inv) {
			return badRequest("item_id", "%s", inv.Reason)
		}
		return badRequest("item_id", "%s", err.Error())
	}
	return err
}

// copiesOf finds the verbatim copies of message mid of session id in the other sessions of its
// compression chain: a rotation re-inserts the messages it keeps into the continuation as new
// rows (same role, text, time and call), which HideMessage, confined to one session, cannot know
// of. Each other session's first shown row that matches is its copy. A mid that session id does
// not show has no copies (HideMessage then answers ErrNotFound).
func (g *Gateway) copiesOf(ctx context.Context, id string, mid int64) ([]store.Message, error) {
	ms, err := g.st.ConversationPage(ctx, id, store.PageQuery{View: store.ViewDisplay, AfterID: mid - 1, Limit: 1})
	if err != nil || len(ms) == 0 || ms[0].ID != mid {
		return nil, err
	}
	orig := ms[0]
	chain, err := g.st.Chain(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("chain of %s: %w", id, err)
	}
	var out []store.Message
	for _, s := range chain {
		if s.ID == id {
			continue
		}
		q := store.PageQuery{View: store.ViewDisplay, Limit: 1000}
		for found := false; !found; {
			page, err := g.st.ConversationPage(ctx, s.ID, q)
			if err != nil {
				return nil, fmt.Errorf("copies of %d in %s: %w", mid, s.ID, err)
			}
			for _, m := range page {
				if sameMessage(m, orig) {
					out, found = append(out, m), true
					break
				}
			}
			if len(page) < q.Limit {
				break
			}
			q.AfterID = page[len(page)-1].ID
		}
	}
	return out, nil
}

// sameMessage reports whether a is a verbatim copy of b (or b of a).
func sameMessage(a, b store.Message) bool {
	if a.Summary || a.Role != b.Role || a.Content != b.Content || !a.Timestamp.Equal(b.Timestamp) ||
		a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i].ID != b.ToolCalls[i].ID {
			return false
		}
	}
	return true
}
