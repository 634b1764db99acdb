package postgres

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

const sessionCols = `s.id, s.source, s.user_id, s.session_key, s.title, s.model, s.model_config,
	s.system_prompt_hash, s.parent_session_id, s.relation, s.started_at, s.ended_at, s.end_reason,
	s.message_count, s.tool_call_count, s.input_tokens, s.output_tokens, s.cache_read_tokens,
	s.cache_write_tokens, s.reasoning_tokens, s.api_call_count, s.cost_usd, s.cwd, s.git_branch,
	` + shownCols

// shownCols compute store.Shown: the active counts until a compaction archived a row, then the
// live and archived rows that are no verbatim copy and no summary.
const shownCols = `CASE WHEN EXISTS (SELECT 1 FROM messages x WHERE x.session_id = s.id AND NOT x.active AND x.compacted)
		THEN (SELECT count(*) FROM messages x WHERE x.session_id = s.id AND (x.active OR x.compacted) AND x.copy_of IS NULL AND NOT x.summary)
		ELSE s.message_count END,
	CASE WHEN EXISTS (SELECT 1 FROM messages x WHERE x.session_id = s.id AND NOT x.active AND x.compacted)
		THEN (SELECT coalesce(sum(json_array_length(x.tool_calls::json)), 0) FROM messages x WHERE x.session_id = s.id AND (x.active OR x.compacted) AND x.copy_of IS NULL AND NOT x.summary)
		ELSE s.tool_call_count END`

type rowScanner = sqlq.Scanner

func scanSession(r rowScanner, extra ...any) (store.Session, error) {
	var s store.Session
	var title, cfg, hash, parent *string
	var started int64
	var ended *int64
	var rel string
	dest := []any{&s.ID, &s.Source, &s.UserID, &s.SessionKey, &title, &s.Model, &cfg,
		&hash, &parent, &rel, &started, &ended, &s.EndReason,
		&s.MessageCount, &s.ToolCallCount, &s.Usage.InputTokens, &s.Usage.OutputTokens, &s.Usage.CacheReadTokens,
		&s.Usage.CacheWriteTokens, &s.Usage.ReasoningTokens, &s.Usage.APICalls, &s.Usage.CostUSD, &s.Cwd, &s.GitBranch,
		&s.Shown.Messages, &s.Shown.ToolCalls}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return s, err
	}
	if title != nil {
		s.Title = *title
	}
	if hash != nil {
		s.SystemPromptHash = *hash
	}
	if parent != nil {
		s.ParentID = *parent
	}
	if cfg != nil {
		s.ModelConfig = json.RawMessage(*cfg)
	}
	s.Relation = store.Relation(rel)
	s.StartedAt = fromMicros(started)
	if ended != nil {
		s.EndedAt = fromMicros(*ended)
	}
	return s, nil
}

func collectSessions(rows pgx.Rows) ([]store.Session, error) {
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

const messageCols = `m.id, m.role, m.content, m.api_content, m.tool_calls, m.tool_call_id, m.tool_name,
	m.reasoning, m.reasoning_details, m.finish_reason, m.token_count, m.timestamp, m.summary, m.active, m.compacted`

func scanMessage(r rowScanner, sessionID string) (store.Message, error) {
	m := store.Message{SessionID: sessionID}
	var api, calls, callID, name, reasoning, details, finish *string
	var ts int64
	if err := r.Scan(&m.ID, &m.Role, &m.Content, &api, &calls, &callID, &name, &reasoning, &details, &finish,
		&m.TokenCount, &ts, &m.Summary, &m.Active, &m.Compacted); err != nil {
		return m, err
	}
	m.Timestamp = fromMicros(ts)
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	m.APIContent, m.ToolCallID, m.ToolName = deref(api), deref(callID), deref(name)
	m.Reasoning, m.FinishReason = deref(reasoning), deref(finish)
	if details != nil {
		m.ReasoningDetails = json.RawMessage(*details)
	}
	if calls != nil && *calls != "" {
		m.ToolCalls, _ = store.DecodeToolCalls(*calls)
	}
	return m, nil
}

// messageColTypes are the types of messageCols, in order.
var messageColTypes = [...]uint32{pgtype.Int8OID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID,
	pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.Int4OID, pgtype.Int8OID,
	pgtype.BoolOID, pgtype.BoolOID, pgtype.BoolOID}

// collectMessages reads rows of messageCols as messages of sessionID, in id order whatever order
// the rows came in. It decodes each row's raw values itself (text as it comes, integers and
// booleans in binary or, in the simple protocol, text format): for a resume of about 1,240 rows
// pgx's generic scan, with a pointer per nullable column, was half of the client's CPU.
func collectMessages(rows pgx.Rows, sessionID string) ([]store.Message, error) {
	defer rows.Close()
	out := []store.Message{} // not nil when empty, as pgx.CollectRows and store/sqlite return
	var fds []pgconn.FieldDescription
	for rows.Next() {
		if fds == nil {
			fds = rows.FieldDescriptions()
			if len(fds) != len(messageColTypes) {
				return nil, fmt.Errorf("read messages: %d columns, want %d", len(fds), len(messageColTypes))
			}
			for i, fd := range fds {
				if fd.DataTypeOID != messageColTypes[i] {
					return nil, fmt.Errorf("read messages: column %s has type %d, want %d", fd.Name, fd.DataTypeOID, messageColTypes[i])
				}
			}
		}
		m, err := decodeMessage(fds, rows.RawValues(), sessionID)
		if err != nil {
			return nil, fmt.Errorf("read messages: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	byID := func(a, b store.Message) int { return cmp.Compare(a.ID, b.ID) }
	if !slices.IsSortedFunc(out, byID) {
		slices.SortFunc(out, byID)
	}
	return out, nil
}

// decodeMessage decodes one row of messageCols; NULL text is "", as scanMessage reads it.
func decodeMessage(fds []pgconn.FieldDescription, v [][]byte, sessionID string) (store.Message, error) {
	m := store.Message{SessionID: sessionID}
	var tokens, ts int64
	var err error
	for _, c := range []struct {
		i   int
		dst *int64
	}{{0, &m.ID}, {10, &tokens}, {11, &ts}} {
		if *c.dst, err = rawInt(fds[c.i], v[c.i]); err != nil {
			return m, err
		}
	}
	for _, c := range []struct {
		i   int
		dst *bool
	}{{12, &m.Summary}, {13, &m.Active}, {14, &m.Compacted}} {
		if *c.dst, err = rawBool(fds[c.i], v[c.i]); err != nil {
			return m, err
		}
	}
	if v[1] == nil || v[2] == nil {
		return m, fmt.Errorf("message %d: NULL role or content", m.ID)
	}
	m.Role = role(v[1])
	m.Content = string(v[2])
	m.APIContent, m.ToolCallID, m.ToolName = string(v[3]), string(v[5]), string(v[6])
	m.Reasoning, m.FinishReason = string(v[7]), string(v[9])
	if v[8] != nil {
		m.ReasoningDetails = json.RawMessage(string(v[8]))
	}
	if len(v[4]) > 0 {
		m.ToolCalls, _ = store.DecodeToolCalls(string(v[4]))
	}
	m.TokenCount = int(tokens)
	m.Timestamp = fromMicros(ts)
	return m, nil
}

// role returns the stored role, without a copy for the known ones.
func role(b []byte) string {
	switch string(b) {
	case store.RoleUser:
		return store.RoleUser
	case store.RoleAssistant:
		return store.RoleAssistant
	case store.RoleTool:
		return store.RoleTool
	case store.RoleSystem:
		return store.RoleSystem
	}
	return string(b)
}

// rawInt decodes a NOT NULL int4 or int8 column.
func rawInt(fd pgconn.FieldDescription, b []byte) (int64, error) {
	if b == nil {
		return 0, fmt.Errorf("column %s is NULL", fd.Name)
	}
	if fd.Format == pgtype.TextFormatCode {
		return strconv.ParseInt(string(b), 10, 64)
	}
	switch len(b) {
	case 8:
		return int64(binary.BigEndian.Uint64(b)), nil
	case 4:
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	}
	return 0, fmt.Errorf("column %s: %d bytes for an integer", fd.Name, len(b))
}

// rawBool decodes a NOT NULL boolean column.
func rawBool(fd pgconn.FieldDescription, b []byte) (bool, error) {
	if len(b) != 1 {
		return false, fmt.Errorf("column %s: %d bytes for a boolean", fd.Name, len(b))
	}
	if fd.Format == pgtype.TextFormatCode {
		return b[0] == 't', nil
	}
	return b[0] != 0, nil
}
