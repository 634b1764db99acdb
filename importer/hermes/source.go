package hermes

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/regfile"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// source is an open Hermes state.db with the columns it has.
type source struct {
	db      *sql.DB
	tmp     string // the private copy's directory, removed on close ("" when read in place)
	version int
	// cols holds the columns of each table this reader uses, by name.
	sessionCols map[string]bool
	messageCols map[string]bool
	hasPrompts  bool // the system_prompts table (schema 25+)
	sessionSQL  string
	messageSQL  string
	// Statements run once per session, prepared once.
	sessionStmt, messageStmt, countStmt *sql.Stmt
}

// openSource opens path read-only and checks that it is a readable Hermes session database,
// without creating or changing a byte in the home.
//
// A file with a -wal beside it has a live writer, or one that stopped before a checkpoint: its
// newest rows are in the -wal, and reading them in place would need the -shm index, which SQLite
// creates when it is missing and where every reader takes its read marks. So the two files are
// copied into a private temporary directory (again if either changed during the copy) and the
// copy is read; it is removed on close. Without a -wal the database file holds everything: a
// WAL-mode file is opened immutable (no locks, no -wal or -shm files), a rollback-journal file
// mode=ro (shared locks only).
func openSource(ctx context.Context, path string) (*source, error) {
	_, err := os.Lstat(path + "-wal")
	switch {
	case err == nil:
		tmp, copied, err := copyWithWAL(path)
		if errors.Is(err, errWALGone) {
			return openSource(ctx, path) // its last connection closed: all is in the file now
		}
		if err != nil {
			return nil, err
		}
		s, err := openSourceMode(ctx, copied, false)
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		s.tmp = tmp
		return s, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("state.db-wal: %w", pathErr(err))
	}
	s, err := openSourceMode(ctx, path, walHeader(path))
	if err != nil {
		// A read-only directory cannot hold the files SQLite wants; nothing can write there.
		if s2, err2 := openSourceMode(ctx, path, true); err2 == nil {
			return s2, nil
		}
	}
	return s, err
}

// copyWithWAL copies the database at path and its -wal into a new temporary directory and
// returns the directory and the copy's path. A copy during which either file changed (a writer
// appended or checkpointed) is made again, a few times at most.
func copyWithWAL(path string) (tmp, copied string, err error) {
	tmp, err = os.MkdirTemp("", "spool-hermes-import-")
	if err != nil {
		return "", "", fmt.Errorf("state.db: a private copy of a database with a -wal: %w", err)
	}
	copied = filepath.Join(tmp, "state.db")
	for range 5 {
		before, err := stamp(path)
		if errors.Is(err, os.ErrNotExist) {
			os.RemoveAll(tmp)
			return "", "", errWALGone
		}
		if err != nil {
			break
		}
		if err = copyFile(path, copied); err == nil {
			err = copyFile(path+"-wal", copied+"-wal")
		}
		if err != nil {
			os.RemoveAll(tmp)
			return "", "", fmt.Errorf("state.db: a private copy of a database with a -wal: %w", err)
		}
		if after, err := stamp(path); err == nil && after == before {
			return tmp, copied, nil
		}
	}
	os.RemoveAll(tmp)
	return "", "", errors.New("state.db kept changing while it was copied (Hermes is writing to it): run the import again, or stop Hermes first")
}

// errWALGone: the -wal went away before it was copied.
var errWALGone = errors.New("state.db-wal went away")

// stamp is the size and modification time of a database and its -wal.
func stamp(path string) ([4]int64, error) {
	var out [4]int64
	for i, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			return out, err
		}
		out[2*i], out[2*i+1] = fi.Size(), fi.ModTime().UnixNano()
	}
	return out, nil
}

// copyFile copies the regular file src to dst (mode 0600).
func copyFile(src, dst string) error {
	in, _, err := regfile.Open(src)
	var nr *regfile.NotRegularError
	switch {
	case errors.As(err, &nr):
		return fmt.Errorf("%s %w", filepath.Base(src), nr)
	case err != nil:
		return fmt.Errorf("%s: %w", filepath.Base(src), pathErr(err))
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func openSourceMode(ctx context.Context, path string, immutable bool) (*source, error) {
	db, err := sqlite.OpenForeignReadOnly(ctx, path, immutable)
	if err != nil {
		return nil, err
	}
	s := &source{db: db}
	if err := s.inspect(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// walHeader reports whether path is an SQLite file in WAL mode (header bytes 18 and 19 are 2).
func walHeader(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false
	}
	return string(h[:16]) == "SQLite format 3\x00" && h[18] == 2 && h[19] == 2
}

func (s *source) close() error {
	err := s.db.Close()
	if s.tmp != "" {
		err = errors.Join(err, os.RemoveAll(s.tmp))
	}
	return err
}

// inspect reads the schema: the tables and columns by name, the schema version, and an
// integrity check so a damaged file fails before anything is stored.
func (s *source) inspect(ctx context.Context) error {
	var check string
	if err := s.db.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&check); err != nil {
		return fmt.Errorf("state.db: %w", err)
	}
	if check != "ok" {
		return fmt.Errorf("state.db is damaged: %s", strings.Join(strings.Fields(check), " "))
	}
	tables := map[string]bool{}
	rows, err := s.db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table'")
	if err != nil {
		return fmt.Errorf("state.db: %w", err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return fmt.Errorf("state.db: %w", err)
		}
		tables[n] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("state.db: %w", err)
	}
	for _, t := range []string{"sessions", "messages"} {
		if !tables[t] {
			return fmt.Errorf("state.db is not a Hermes session database (no %s table)", t)
		}
	}
	if tables["schema_version"] {
		_ = s.db.QueryRowContext(ctx, "SELECT version FROM schema_version LIMIT 1").Scan(&s.version)
	}
	if s.sessionCols, err = s.columns(ctx, "sessions"); err != nil {
		return err
	}
	if s.messageCols, err = s.columns(ctx, "messages"); err != nil {
		return err
	}
	for t, cols := range map[string][]string{
		"sessions": {"id", "started_at"},
		"messages": {"id", "session_id", "role"},
	} {
		have := map[string]map[string]bool{"sessions": s.sessionCols, "messages": s.messageCols}[t]
		for _, c := range cols {
			if !have[c] {
				return fmt.Errorf("state.db is not a Hermes session database (%s has no %s column)", t, c)
			}
		}
	}
	if tables["system_prompts"] {
		pc, err := s.columns(ctx, "system_prompts")
		if err != nil {
			return err
		}
		s.hasPrompts = pc["hash"] && pc["prompt"] && s.sessionCols["system_prompt_hash"]
	}
	s.sessionSQL = s.buildSessionSQL()
	s.messageSQL = "SELECT " + selectList("m", s.messageCols, messageFields) + " FROM messages m WHERE m.session_id = ? ORDER BY m.id"
	for _, p := range []struct {
		stmt  **sql.Stmt
		query string
	}{{&s.sessionStmt, s.sessionSQL}, {&s.messageStmt, s.messageSQL}, {&s.countStmt, "SELECT count(*) FROM messages WHERE session_id = ?"}} {
		if *p.stmt, err = s.db.PrepareContext(ctx, p.query); err != nil {
			return fmt.Errorf("state.db: %w", err)
		}
	}
	return nil
}

func (s *source) columns(ctx context.Context, table string) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, fmt.Errorf("state.db: columns of %s: %w", table, err)
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("state.db: columns of %s: %w", table, err)
		}
		cols[n] = true
	}
	return cols, rows.Err()
}

// selectList names each wanted column, or NULL in its place when the table lacks it.
func selectList(alias string, have map[string]bool, want []string) string {
	parts := make([]string, len(want))
	for i, c := range want {
		if have[c] {
			parts[i] = alias + `."` + c + `"`
		} else {
			parts[i] = "NULL"
		}
	}
	return strings.Join(parts, ", ")
}

// indexFields are what the lineage pass needs of every session.
var indexFields = []string{"id", "parent_session_id", "source", "session_key", "model_config", "started_at", "ended_at", "end_reason", "thread_id"}

// sessionFields are the rest of a session row, read when it is imported.
var sessionFields = []string{"user_id", "model", "title", "input_tokens", "output_tokens", "cache_read_tokens",
	"cache_write_tokens", "reasoning_tokens", "api_call_count", "estimated_cost_usd", "actual_cost_usd", "cwd", "git_branch"}

var messageFields = []string{"id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
	"token_count", "finish_reason", "reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items",
	"codex_message_items", "api_content", "active", "compacted", "_compressed_summary"}

func (s *source) buildSessionSQL() string {
	prompt := "NULL"
	switch {
	case s.hasPrompts && s.sessionCols["system_prompt"]:
		prompt = "COALESCE((SELECT p.prompt FROM system_prompts p WHERE p.hash = s.system_prompt_hash), s.system_prompt)"
	case s.hasPrompts:
		prompt = "(SELECT p.prompt FROM system_prompts p WHERE p.hash = s.system_prompt_hash)"
	case s.sessionCols["system_prompt"]:
		prompt = "s.system_prompt"
	}
	return "SELECT " + selectList("s", s.sessionCols, sessionFields) + ", " + prompt + " FROM sessions s WHERE s.id = ?"
}

// entry is one session in the lineage index.
type entry struct {
	id, parent, source, key, endReason    string
	thread                                string // the lane's thread id (newer schemas)
	started, ended                        time.Time
	branchedFrom, delegateFrom, resetFrom string
	badConfig                             string // why model_config is unusable ("" when fine)
	config                                json.RawMessage
}

// index reads the lineage fields of every session.
func (s *source) index(ctx context.Context) ([]*entry, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+selectList("s", s.sessionCols, indexFields)+" FROM sessions s ORDER BY s.started_at, s.id")
	if err != nil {
		return nil, fmt.Errorf("state.db: read sessions: %w", err)
	}
	defer rows.Close()
	var out []*entry
	for rows.Next() {
		var id, parent, src, key, cfg, reason, thread sql.NullString
		var started, ended any
		if err := rows.Scan(&id, &parent, &src, &key, &cfg, &started, &ended, &reason, &thread); err != nil {
			return nil, fmt.Errorf("state.db: read sessions: %w", err)
		}
		e := &entry{id: id.String, parent: parent.String, source: src.String, key: key.String, endReason: reason.String,
			started: epoch(started), ended: epoch(ended), thread: thread.String}
		if c := strings.TrimSpace(cfg.String); c != "" && c != "null" {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(c), &obj); err != nil {
				e.badConfig = "model_config is not a JSON object"
			} else {
				e.config = json.RawMessage(c)
				e.branchedFrom = marker(obj["_branched_from"])
				e.delegateFrom = marker(obj["_delegate_from"])
				e.resetFrom = marker(obj["_reset_from"])
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func marker(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case map[string]any:
		// A marker may be an object naming the parent.
		for _, k := range []string{"session_id", "id", "parent_session_id"} {
			if s, ok := x[k].(string); ok {
				return s
			}
		}
		return "?"
	default:
		return fmt.Sprint(x)
	}
}

// row is the rest of a session row.
type row struct {
	userID, model, title, cwd, branch, prompt string
	usage                                     store.Usage
}

func (s *source) session(ctx context.Context, id string) (row, error) {
	var userID, model, title, cwd, branch, prompt sql.NullString
	var in, out, cr, cw, reason, calls sql.NullInt64
	var est, act sql.NullFloat64
	err := s.sessionStmt.QueryRowContext(ctx, id).Scan(&userID, &model, &title, &in, &out, &cr, &cw, &reason,
		&calls, &est, &act, &cwd, &branch, &prompt)
	if err != nil {
		return row{}, fmt.Errorf("state.db: read session %s: %w", id, err)
	}
	r := row{userID: userID.String, model: model.String, title: title.String, cwd: cwd.String, branch: branch.String,
		prompt: prompt.String, usage: store.Usage{InputTokens: in.Int64, OutputTokens: out.Int64, CacheReadTokens: cr.Int64,
			CacheWriteTokens: cw.Int64, ReasoningTokens: reason.Int64, APICalls: calls.Int64}}
	// The actual cost when the provider reported one, else the estimate.
	if act.Valid {
		r.usage.CostUSD = act.Float64
	} else {
		r.usage.CostUSD = est.Float64
	}
	return r, nil
}

// count is the number of SQLite rows a session has (for the JSONL rule).
func (s *source) count(ctx context.Context, id string) (int, error) {
	var n int
	err := s.countStmt.QueryRowContext(ctx, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("state.db: count messages of %s: %w", id, err)
	}
	return n, nil
}

// totalMessages counts every message row, for the progress bar.
func (s *source) totalMessages(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM messages").Scan(&n)
	return n, err
}

// messages streams a session's rows in id order to fn.
func (s *source) messages(ctx context.Context, id string, fn func(rawMessage) error) error {
	rows, err := s.messageStmt.QueryContext(ctx, id)
	if err != nil {
		return fmt.Errorf("state.db: read messages of %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var m rawMessage
		var ts any
		if err := rows.Scan(&m.rowID, &m.role, &m.content, &m.toolCallID, &m.toolCalls, &m.toolName, &ts, &m.tokenCount,
			&m.finishReason, &m.reasoning, &m.reasoningContent, &m.reasoningDetails, &m.codexReasoning, &m.codexMessages,
			&m.apiContent, &m.active, &m.compacted, &m.summary); err != nil {
			return fmt.Errorf("state.db: read messages of %s: %w", id, err)
		}
		m.timestamp = epoch(ts)
		if err := fn(m); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("state.db: read messages of %s: %w", id, err)
	}
	return nil
}

// rawMessage is a message row as Hermes stored it.
type rawMessage struct {
	rowID                                                       sql.NullInt64
	role, content, toolCallID, toolCalls, toolName              sql.NullString
	finishReason, reasoning, reasoningContent, reasoningDetails sql.NullString
	codexReasoning, codexMessages, apiContent                   sql.NullString
	tokenCount, active, compacted, summary                      sql.NullInt64
	timestamp                                                   time.Time
}

// epoch reads a Hermes time: REAL epoch seconds, or (rarely) text.
func epoch(v any) time.Time {
	var f float64
	switch x := v.(type) {
	case nil:
		return time.Time{}
	case float64:
		f = x
	case int64:
		f = float64(x)
	case []byte:
		return epoch(string(x))
	case string:
		if n, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			f = n
			break
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999"} {
			if t, err := time.ParseInLocation(layout, strings.TrimSpace(x), time.Local); err == nil {
				return t
			}
		}
		return time.Time{}
	default:
		return time.Time{}
	}
	if f <= 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3)
}
