package postgres

import (
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

const sessionCols = `s.id, s.source, s.user_id, s.session_key, s.title, s.model, s.model_config,
	s.system_prompt_hash, s.parent_session_id, s.relation, s.started_at, s.ended_at, s.end_reason,
	s.message_count, s.tool_call_count, s.input_tokens, s.output_tokens, s.cache_read_tokens,
	s.cache_write_tokens, s.reasoning_tokens, s.api_call_count, s.cost_usd, s.cwd, s.git_branch`

type rowScanner interface{ Scan(dest ...any) error }

func scanSession(r rowScanner, extra ...any) (store.Session, error) {
	var s store.Session
	var title, cfg, hash, parent *string
	var started int64
	var ended *int64
	var rel string
	dest := []any{&s.ID, &s.Source, &s.UserID, &s.SessionKey, &title, &s.Model, &cfg,
		&hash, &parent, &rel, &started, &ended, &s.EndReason,
		&s.MessageCount, &s.ToolCallCount, &s.Usage.InputTokens, &s.Usage.OutputTokens, &s.Usage.CacheReadTokens,
		&s.Usage.CacheWriteTokens, &s.Usage.ReasoningTokens, &s.Usage.APICalls, &s.Usage.CostUSD, &s.Cwd, &s.GitBranch}
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
