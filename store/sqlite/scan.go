package sqlite

import (
	"database/sql"
	"encoding/json"
	"time"

	"github.com/spoolhq/spool/store"
)

// Times are stored as integer microseconds since the epoch: exact round trips, cheap compares.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us) }

func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullJSON(raw json.RawMessage) sql.NullString {
	if len(raw) == 0 {
		return sql.NullString{}
	}
	return sql.NullString{String: string(raw), Valid: true}
}

type rowScanner interface{ Scan(dest ...any) error }

const sessionCols = `s.id, s.source, s.user_id, s.session_key, s.title, s.model, s.model_config,
	s.system_prompt_hash, s.parent_session_id, s.relation, s.started_at, s.ended_at, s.end_reason,
	s.message_count, s.tool_call_count, s.input_tokens, s.output_tokens, s.cache_read_tokens,
	s.cache_write_tokens, s.reasoning_tokens, s.api_call_count, s.cost_usd, s.cwd, s.git_branch`

func scanSession(r rowScanner, extra ...any) (store.Session, error) {
	var s store.Session
	var title, cfg, hash, parent sql.NullString
	var started int64
	var ended sql.NullInt64
	var rel string
	dest := []any{&s.ID, &s.Source, &s.UserID, &s.SessionKey, &title, &s.Model, &cfg,
		&hash, &parent, &rel, &started, &ended, &s.EndReason,
		&s.MessageCount, &s.ToolCallCount, &s.Usage.InputTokens, &s.Usage.OutputTokens, &s.Usage.CacheReadTokens,
		&s.Usage.CacheWriteTokens, &s.Usage.ReasoningTokens, &s.Usage.APICalls, &s.Usage.CostUSD, &s.Cwd, &s.GitBranch}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return s, err
	}
	s.Title, s.SystemPromptHash, s.ParentID = title.String, hash.String, parent.String
	if cfg.Valid {
		s.ModelConfig = json.RawMessage(cfg.String)
	}
	s.Relation = store.Relation(rel)
	s.StartedAt = fromMicros(started)
	if ended.Valid {
		s.EndedAt = fromMicros(ended.Int64)
	}
	return s, nil
}

const messageCols = `m.id, m.session_id, m.role, m.content, m.api_content, m.tool_calls, m.tool_call_id,
	m.tool_name, m.reasoning, m.reasoning_details, m.finish_reason, m.token_count, m.timestamp,
	m.summary, m.active, m.compacted`

func scanMessage(r rowScanner) (store.Message, error) {
	var m store.Message
	var api, calls, callID, toolName, reasoning, details, finish sql.NullString
	var ts int64
	if err := r.Scan(&m.ID, &m.SessionID, &m.Role, &m.Content, &api, &calls, &callID,
		&toolName, &reasoning, &details, &finish, &m.TokenCount, &ts,
		&m.Summary, &m.Active, &m.Compacted); err != nil {
		return m, err
	}
	m.APIContent, m.ToolCallID, m.ToolName = api.String, callID.String, toolName.String
	m.Reasoning, m.FinishReason = reasoning.String, finish.String
	if details.Valid {
		m.ReasoningDetails = json.RawMessage(details.String)
	}
	if calls.Valid && calls.String != "" {
		// Stored by us as a JSON array; a row that somehow is not parses as no calls rather
		// than failing the whole transcript load.
		if err := json.Unmarshal([]byte(calls.String), &m.ToolCalls); err != nil {
			m.ToolCalls = nil
		}
	}
	m.Timestamp = fromMicros(ts)
	return m, nil
}
