package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
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

type rowScanner = sqlq.Scanner

// column runs a one-column query and returns its values in order.
func column[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

const sessionCols = `s.id, s.source, s.user_id, s.session_key, s.title, s.model, s.model_config,
	s.system_prompt_hash, s.parent_session_id, s.relation, s.started_at, s.ended_at, s.end_reason,
	s.message_count, s.tool_call_count, s.input_tokens, s.output_tokens, s.cache_read_tokens,
	s.cache_write_tokens, s.reasoning_tokens, s.api_call_count, s.cost_usd, s.cwd, s.git_branch,
	` + shownCols

// shownCols compute store.Shown: the active counts until a compaction archived a row, then the
// live and archived rows that are no verbatim copy and no summary.
const shownCols = `CASE WHEN EXISTS (SELECT 1 FROM messages x WHERE x.session_id = s.id AND x.active = 0 AND x.compacted = 1)
		THEN (SELECT count(*) FROM messages x WHERE x.session_id = s.id AND (x.active = 1 OR x.compacted = 1) AND x.copy_of IS NULL AND x.summary = 0)
		ELSE s.message_count END,
	CASE WHEN EXISTS (SELECT 1 FROM messages x WHERE x.session_id = s.id AND x.active = 0 AND x.compacted = 1)
		THEN (SELECT coalesce(sum(json_array_length(x.tool_calls)), 0) FROM messages x WHERE x.session_id = s.id AND (x.active = 1 OR x.compacted = 1) AND x.copy_of IS NULL AND x.summary = 0)
		ELSE s.tool_call_count END`

func scanSession(r rowScanner, extra ...any) (store.Session, error) {
	var s store.Session
	var title, cfg, hash, parent sql.NullString
	var started int64
	var ended sql.NullInt64
	var rel string
	dest := []any{&s.ID, &s.Source, &s.UserID, &s.SessionKey, &title, &s.Model, &cfg,
		&hash, &parent, &rel, &started, &ended, &s.EndReason,
		&s.MessageCount, &s.ToolCallCount, &s.Usage.InputTokens, &s.Usage.OutputTokens, &s.Usage.CacheReadTokens,
		&s.Usage.CacheWriteTokens, &s.Usage.ReasoningTokens, &s.Usage.APICalls, &s.Usage.CostUSD, &s.Cwd, &s.GitBranch,
		&s.Shown.Messages, &s.Shown.ToolCalls}
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

// messageCols packs a message row into four columns for the database/sql path (the cgo build,
// and the fallback of the raw reader). Through database/sql every column read is a
// locked C-API call and a boxed value, so a 16-column row costs several times a 4-column one.
// The small fields travel as one unit-separated string, tool calls as their JSON, and the rare
// fields (wire sidecar, reasoning) as one JSON array that is NULL for most rows. Identifiers are
// cleaned of control characters on write, so the separator cannot occur inside them.
const messageCols = `m.content,
	m.role || char(31) || m.id || char(31) || m.timestamp || char(31) ||
		(m.active + 2 * m.compacted + 4 * m.summary) || char(31) || m.token_count || char(31) ||
		coalesce(m.tool_call_id, '') || char(31) || coalesce(m.tool_name, '') || char(31) ||
		coalesce(m.finish_reason, ''),
	m.tool_calls,
	CASE WHEN m.api_content IS NULL AND m.reasoning IS NULL AND m.reasoning_details IS NULL THEN NULL
		ELSE json_array(m.api_content, m.reasoning, m.reasoning_details) END`

// decodeMessage builds a message from the three packed columns of messageCols; extra is nil
// when the row has no rare fields.
func decodeMessage(sessionID, content, head, calls string, extra *string) (store.Message, error) {
	m := store.Message{SessionID: sessionID, Content: content}
	var f [8]string
	for i := range f {
		var ok bool
		if i == len(f)-1 {
			f[i] = head
		} else if f[i], head, ok = strings.Cut(head, "\x1f"); !ok {
			return m, fmt.Errorf("message row: malformed header")
		}
	}
	id, err1 := strconv.ParseInt(f[1], 10, 64)
	ts, err2 := strconv.ParseInt(f[2], 10, 64)
	flags, err3 := strconv.Atoi(f[3])
	tokens, err4 := strconv.Atoi(f[4])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return m, fmt.Errorf("message row: %w", err)
	}
	m.Role, m.ID, m.Timestamp, m.TokenCount = f[0], id, fromMicros(ts), tokens
	m.Active, m.Compacted, m.Summary = flags&1 != 0, flags&2 != 0, flags&4 != 0
	m.ToolCallID, m.ToolName, m.FinishReason = f[5], f[6], f[7]
	if calls != "" {
		// Stored by us as a JSON array; a row that somehow is not loads as no calls rather than
		// failing the whole transcript.
		m.ToolCalls, _ = store.DecodeToolCalls(calls)
	}
	if extra != nil {
		var x [3]*string
		if err := json.Unmarshal([]byte(*extra), &x); err != nil {
			return m, fmt.Errorf("message %d: extra fields: %w", id, err)
		}
		if x[0] != nil {
			m.APIContent = *x[0]
		}
		if x[1] != nil {
			m.Reasoning = *x[1]
		}
		if x[2] != nil {
			m.ReasoningDetails = json.RawMessage(*x[2])
		}
	}
	return m, nil
}
