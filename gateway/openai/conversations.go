package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/store"
)

func conversationObject(s store.Session, meta json.RawMessage) map[string]any {
	return map[string]any{"id": s.ID, "object": "conversation", "created_at": s.StartedAt.Unix(), "metadata": meta}
}

// readItems decodes a list of message items (conversations and compact).
func readItems(raw json.RawMessage, max int) ([]gateway.Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	msgs, err := inputMessages(raw)
	if err != nil {
		return nil, err
	}
	if max > 0 && len(msgs) > max {
		return nil, badParam("items", fmt.Sprintf("at most %d items, got %d", max, len(msgs)))
	}
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" && m.Role != "developer" {
			return nil, badParam(fmt.Sprintf("items[%d].role", i), fmt.Sprintf("role %q is not supported", m.Role))
		}
	}
	return msgs, nil
}

func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, errorOf(err))
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, newError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "the body is not valid JSON: "+err.Error()).noRetry())
		return false
	}
	return true
}

func (s *Server) conversationCreate(w http.ResponseWriter, r *http.Request, principal string) {
	var req struct {
		Items    json.RawMessage `json:"items"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if !s.readBody(w, r, &req) {
		return
	}
	msgs, err := readItems(req.Items, 20)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	sess, err := s.g.CreateConversation(r.Context(), principal, msgs, req.Metadata)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	_, meta, err := s.g.Conversation(r.Context(), principal, sess.ID)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, conversationObject(sess, meta))
}

func (s *Server) conversationGet(w http.ResponseWriter, r *http.Request, principal string) {
	sess, meta, err := s.g.Conversation(r.Context(), principal, r.PathValue("id"))
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, conversationObject(sess, meta))
}

func (s *Server) conversationUpdate(w http.ResponseWriter, r *http.Request, principal string) {
	var req struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if !s.readBody(w, r, &req) {
		return
	}
	id := r.PathValue("id")
	if _, _, err := s.g.Conversation(r.Context(), principal, id); err != nil {
		writeError(w, errorOf(err))
		return
	}
	if err := s.g.SetConversationMeta(r.Context(), principal, id, req.Metadata); err != nil {
		writeError(w, errorOf(err))
		return
	}
	s.conversationGet(w, r, principal)
}

func (s *Server) conversationDelete(w http.ResponseWriter, r *http.Request, principal string) {
	id := r.PathValue("id")
	if err := s.g.DeleteConversation(r.Context(), principal, id); err != nil {
		writeError(w, errorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "conversation.deleted", "deleted": true})
}

func (s *Server) itemsAdd(w http.ResponseWriter, r *http.Request, principal string) {
	var req struct {
		Items json.RawMessage `json:"items"`
	}
	if !s.readBody(w, r, &req) {
		return
	}
	msgs, err := readItems(req.Items, 20)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	if len(msgs) == 0 {
		writeError(w, badParam("items", "items is empty"))
		return
	}
	rows, err := s.g.AppendItems(r.Context(), principal, r.PathValue("id"), msgs)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, itemList(rows, false))
}

func itemList(ms []store.Message, more bool) map[string]any {
	var items []convItem
	for _, m := range ms {
		items = append(items, convItem{row: m.ID, obj: messageItem(m)})
	}
	return convItemList(items, more)
}

func convItemList(items []convItem, more bool) map[string]any {
	data := make([]any, 0, len(items))
	for _, it := range items {
		data = append(data, it.obj)
	}
	list := map[string]any{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		list["first_id"] = items[0].obj["id"]
		list["last_id"] = items[len(items)-1].obj["id"]
	}
	return list
}

// itemMessageID reads the message id out of an item id: "msg_<session>_<id>" (a message) or
// "fco_<session>_<id>" (a function_call_output).
func itemMessageID(sessionID, itemID string) (int64, bool) {
	rest, ok := strings.CutPrefix(itemID, "msg_"+sessionID+"_")
	if !ok {
		if rest, ok = strings.CutPrefix(itemID, "fco_"+sessionID+"_"); !ok {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n > 0
}

// convItem is one conversation item and the stored row it comes from.
type convItem struct {
	row int64
	obj map[string]any
}

// ownTool says whether a tool call is spool's own (run server-side, not an item of the client's).
func ownTool(name string) bool { return slices.Contains(gateway.APITools, name) }

// conversationItems are a conversation's rows as the Responses API lists items: user and
// assistant text as message items, each client tool call as a function_call item (after the
// text of the assistant message that made it, "fc_<call id>" as in the response's output) and
// each answer to one as a function_call_output item. Summaries, spool's own tool calls and
// their results are spool's and not items.
func conversationItems(ms []store.Message) []convItem {
	var out []convItem
	for _, m := range ms {
		if m.Summary {
			continue
		}
		switch m.Role {
		case store.RoleUser:
			out = append(out, convItem{m.ID, messageItem(m)})
		case store.RoleAssistant:
			if m.Content != "" {
				out = append(out, convItem{m.ID, messageItem(m)})
			}
			for _, c := range m.ToolCalls {
				if !ownTool(c.Function.Name) {
					out = append(out, convItem{m.ID, callItem(c, "completed")})
				}
			}
		case store.RoleTool:
			if !ownTool(m.ToolName) {
				out = append(out, convItem{m.ID, callOutputItem(m)})
			}
		}
	}
	return out
}

// callOutputItem is a stored answer to a client tool call as a function_call_output item.
func callOutputItem(m store.Message) map[string]any {
	return map[string]any{"id": fmt.Sprintf("fco_%s_%d", m.SessionID, m.ID), "type": "function_call_output", "status": "completed",
		"call_id": m.ToolCallID, "output": m.Content}
}

func (s *Server) itemsList(w http.ResponseWriter, r *http.Request, principal string) {
	id := r.PathValue("id")
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, badParam("limit", "limit must be 1 to 100"))
			return
		}
		limit = n
	}
	order := q.Get("order")
	if order == "" {
		order = "desc"
	}
	if order != "asc" && order != "desc" {
		writeError(w, badParam("order", "order must be asc or desc"))
		return
	}
	pq := store.PageQuery{Limit: 1000}
	if order == "desc" {
		pq.BeforeID = 1 << 62 // newest first: the window ends at the last row
	}
	cursor := ""
	if after := q.Get("after"); after != "" {
		mid, ok := s.itemRow(r.Context(), principal, id, after)
		if !ok {
			writeError(w, badParam("after", "after is not an item of this conversation"))
			return
		}
		// The window starts at the cursor's row (a row may hold several items: an assistant
		// message's text and its calls); the items up to the cursor are dropped below.
		cursor = after
		if order == "asc" {
			pq.AfterID = mid - 1
		} else {
			pq.BeforeID = mid + 1
		}
	}
	// Pages of stored rows are read until limit+1 items are found (spool's own tool rows and
	// summaries are not items).
	var items []convItem
	for {
		ms, err := s.g.Items(r.Context(), principal, id, pq)
		if err != nil {
			writeError(w, errorOf(err))
			return
		}
		vis := conversationItems(ms)
		if order == "desc" {
			slices.Reverse(vis)
		}
		if cursor != "" {
			for i, it := range vis {
				if it.obj["id"] == cursor {
					vis, cursor = vis[i+1:], ""
					break
				}
			}
			if cursor != "" {
				vis = nil // not reached yet (cannot happen: the window starts at its row)
			}
		}
		items = append(items, vis...)
		if len(items) > limit || len(ms) < pq.Limit {
			break
		}
		if order == "asc" {
			pq.AfterID = ms[len(ms)-1].ID
		} else {
			pq.BeforeID = ms[0].ID
		}
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	writeJSON(w, http.StatusOK, convItemList(items, more))
}

// itemRow is the stored row an item id of conversation id names: msg_ and fco_ ids carry it, a
// function_call item ("fc_<call id>") is found by its call among the conversation's rows.
func (s *Server) itemRow(ctx context.Context, principal, id, itemID string) (int64, bool) {
	if mid, ok := itemMessageID(id, itemID); ok {
		return mid, true
	}
	call, ok := strings.CutPrefix(itemID, "fc_")
	if !ok || call == "" {
		return 0, false
	}
	pq := store.PageQuery{Limit: 1000}
	for {
		ms, err := s.g.Items(ctx, principal, id, pq)
		if err != nil {
			return 0, false
		}
		for _, m := range ms {
			for _, c := range m.ToolCalls {
				if c.ID == call && m.Role == store.RoleAssistant && !ownTool(c.Function.Name) {
					return m.ID, true
				}
			}
		}
		if len(ms) < pq.Limit {
			return 0, false
		}
		pq.AfterID = ms[len(ms)-1].ID
	}
}

func (s *Server) itemGet(w http.ResponseWriter, r *http.Request, principal string) {
	id, itemID := r.PathValue("id"), r.PathValue("item_id")
	notFound := newError(http.StatusNotFound, "invalid_request_error", "not_found", "no such item in this conversation").noRetry()
	mid, ok := s.itemRow(r.Context(), principal, id, itemID)
	if !ok {
		if _, err := s.g.Items(r.Context(), principal, id, store.PageQuery{Limit: 1}); err != nil {
			writeError(w, errorOf(err)) // another principal's or a missing conversation
			return
		}
		writeError(w, notFound)
		return
	}
	ms, err := s.g.Items(r.Context(), principal, id, store.PageQuery{AfterID: mid - 1, Limit: 1})
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	if len(ms) == 0 || ms[0].ID != mid {
		writeError(w, notFound)
		return
	}
	for _, it := range conversationItems(ms) {
		if it.obj["id"] == itemID {
			writeJSON(w, http.StatusOK, it.obj)
			return
		}
	}
	writeError(w, notFound)
}

// itemDelete removes one item from a conversation and returns the conversation (the OpenAI
// shape). The stored row is hidden, not destroyed; an assistant item takes its tool results
// with it (gateway.DeleteItem).
func (s *Server) itemDelete(w http.ResponseWriter, r *http.Request, principal string) {
	id := r.PathValue("id")
	// A function_call item is deleted with the assistant message that made the call (and the
	// results answering it, as gateway.DeleteItem does).
	mid, ok := s.itemRow(r.Context(), principal, id, r.PathValue("item_id"))
	if !ok {
		if _, err := s.g.Items(r.Context(), principal, id, store.PageQuery{Limit: 1}); err != nil {
			writeError(w, errorOf(err))
			return
		}
		writeError(w, newError(http.StatusNotFound, "invalid_request_error", "not_found", "no such item in this conversation").noRetry())
		return
	}
	if err := s.g.DeleteItem(r.Context(), principal, id, mid); err != nil {
		writeError(w, errorOf(err))
		return
	}
	s.conversationGet(w, r, principal)
}

// compact runs spool's compaction on the session a previous response or conversation names and
// returns a compaction item whose opaque content refers to spool's summary.
func (s *Server) compact(w http.ResponseWriter, r *http.Request, principal string) {
	var req struct {
		Model              string          `json:"model"`
		PreviousResponseID string          `json:"previous_response_id"`
		Conversation       json.RawMessage `json:"conversation"`
		Input              json.RawMessage `json:"input"`
	}
	if !s.readBody(w, r, &req) {
		return
	}
	if !s.knownModel(req.Model) {
		writeError(w, modelNotFound(req.Model))
		return
	}
	sid := conversationID(req.Conversation)
	if req.PreviousResponseID != "" {
		rec, err := s.g.Response(r.Context(), principal, req.PreviousResponseID)
		if err != nil {
			writeError(w, errorOf(err).param("previous_response_id"))
			return
		}
		sid = rec.SessionID
	}
	if sid == "" {
		sid = r.Header.Get("X-Spool-Session-Id")
	}
	if sid == "" {
		writeError(w, badParam("previous_response_id", "spool compacts a stored session: give previous_response_id or conversation"))
		return
	}
	tip, err := s.g.Compact(r.Context(), principal, sid)
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	ms, err := s.g.Items(r.Context(), principal, tip, store.PageQuery{Limit: 100000})
	if err != nil {
		writeError(w, errorOf(err))
		return
	}
	output := []any{}
	var summary int64
	for _, m := range ms {
		if !m.Active {
			continue
		}
		if m.Summary {
			summary = m.ID
			continue
		}
		if m.Role == store.RoleUser {
			output = append(output, messageItem(m))
		}
	}
	output = append(output, map[string]any{
		"id": fmt.Sprintf("cmp_%s_%d", tip, summary), "type": "compaction", "created_by": "spool",
		"encrypted_content": fmt.Sprintf("spool:session=%s;summary_message=%d", tip, summary),
	})
	sessionHeaders(w, tip, "")
	writeJSON(w, http.StatusOK, map[string]any{
		"id": newID("cmp_"), "object": "response.compaction", "created_at": time.Now().Unix(), "output": output,
		"usage": responseUsage(store.Usage{}),
	})
}
