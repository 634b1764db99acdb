package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

// Append implements store.Transcript.
func (db *DB) Append(ctx context.Context, sessionID string, m store.Message, opts ...store.WriteOption) (int64, error) {
	ids, err := db.appendMessages(ctx, sessionID, []store.Message{m}, store.ApplyWriteOptions(opts))
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// AppendBatch implements store.Transcript.
func (db *DB) AppendBatch(ctx context.Context, sessionID string, ms []store.Message, opts ...store.WriteOption) ([]int64, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	return db.appendMessages(ctx, sessionID, ms, store.ApplyWriteOptions(opts))
}

// encodedMessage is a message made ready for binding, computed once outside the retry loop.
type encodedMessage struct {
	m     store.Message
	calls sql.NullString
	// callText is what the word index holds of the calls: names and argument values.
	callText sql.NullString
	// stemText is what the word index's stems column holds (fts.RowStems).
	stemText sql.NullString
	cjk      bool
}

func encodeMessages(ms []store.Message) ([]encodedMessage, int, error) {
	out := make([]encodedMessage, len(ms))
	toolCalls := 0
	for i, m := range ms {
		if err := store.PrepareMessage(&m); err != nil {
			return nil, 0, fmt.Errorf("message %d: %w", i, err)
		}
		e := encodedMessage{m: m, cjk: fts.HasCJK(m.Content)}
		if len(m.ToolCalls) > 0 {
			b, err := json.Marshal(m.ToolCalls)
			if err != nil {
				return nil, 0, fmt.Errorf("message %d: encode tool calls: %w", i, err)
			}
			e.calls = sql.NullString{String: string(b), Valid: true}
			e.callText = sql.NullString{String: fts.CallsText(m.ToolCalls), Valid: true}
			toolCalls += len(m.ToolCalls)
		}
		if st := fts.RowStems(m.Role, m.Content, e.callText.String); st != "" {
			e.stemText = sql.NullString{String: st, Valid: true}
		}
		out[i] = e
	}
	return out, toolCalls, nil
}

func (db *DB) appendMessages(ctx context.Context, sessionID string, ms []store.Message, w store.WriteOptions) ([]int64, error) {
	enc, toolCalls, err := encodeMessages(ms)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", sessionID, err)
	}
	var ids []int64
	err = db.writeGrouped(ctx, db.opts.WriteBudget, func(ctx context.Context, tx *sql.Tx) (err error) {
		ids, err = db.appendTx(ctx, tx, sessionID, enc, toolCalls, w)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", sessionID, err)
	}
	return ids, nil
}

// appendTx appends enc to sessionID in tx: the session's counters, then the rows.
func (db *DB) appendTx(ctx context.Context, tx *sql.Tx, sessionID string, enc []encodedMessage, toolCalls int, w store.WriteOptions) ([]int64, error) {
	last := enc[len(enc)-1].m.Timestamp
	if err := db.bumpSession(ctx, tx, sessionID, len(enc), toolCalls, micros(last), firstUserText(enc), w); err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(enc))
	for _, e := range enc {
		id, err := db.insertMessage(ctx, tx, sessionID, e, true, false)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, db.notePending(ctx, tx, len(enc))
}

// Statements of the append path, prepared once on the writer connection (see stmtCache).
const (
	bumpSessionSQL = `UPDATE sessions SET message_count = message_count + ?,
		tool_call_count = tool_call_count + ?, last_active = max(last_active, ?), preview = coalesce(preview, ?)
		WHERE id = ? RETURNING root_id, ended_at IS NOT NULL AND end_reason = 'compression'`
	insertMessageSQL = `INSERT INTO messages (session_id, role, content, api_content, tool_calls,
		tool_call_id, tool_name, reasoning, reasoning_details, finish_reason, token_count, timestamp,
		summary, active, compacted, cjk, call_text, stem_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// firstUserText is the preview candidate of a batch: its first user message, cut to one more
// character than a preview shows (so the picker knows to add "...").
func firstUserText(enc []encodedMessage) sql.NullString {
	for _, e := range enc {
		if e.m.Role == store.RoleUser && !e.m.Summary {
			return sql.NullString{String: fts.TruncateRunes(e.m.Content, fts.PreviewChars+1), Valid: true}
		}
	}
	return sql.NullString{}
}

// bumpSession adds to the active counters, refreshes last activity (on the chain root too, so a
// compression chain lists by its newest activity) and sets the preview once. It refuses
// sessions rotated by compression and enforces the lease fence.
func (db *DB) bumpSession(ctx context.Context, tx *sql.Tx, id string, msgs, toolCalls int, at int64, preview sql.NullString, w store.WriteOptions) error {
	var root string
	var closed bool
	stmt, err := db.txStmt(ctx, tx, bumpSessionSQL)
	if err != nil {
		return err
	}
	err = stmt.QueryRowContext(ctx, msgs, toolCalls, at, preview, id).Scan(&root, &closed)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("session", id)
	}
	if err != nil {
		return err
	}
	if closed && !w.AllowClosed {
		return fmt.Errorf("session %s: %w", id, store.ErrSessionClosed)
	}
	if err := db.checkLease(ctx, tx, root, w.Fence); err != nil {
		return err
	}
	if root != id {
		_, err = tx.ExecContext(ctx, "UPDATE sessions SET last_active = max(last_active, ?) WHERE id = ?", at, root)
	}
	return err
}

func (db *DB) insertMessage(ctx context.Context, tx *sql.Tx, sessionID string, e encodedMessage, active, compacted bool) (int64, error) {
	stmt, err := db.txStmt(ctx, tx, insertMessageSQL)
	if err != nil {
		return 0, err
	}
	// The new id is the connection's last insert rowid (the writer is one connection): cheaper
	// than RETURNING, which buffers its rows in a temporary table (about 3% of an append).
	res, err := stmt.ExecContext(ctx, messageArgs(nil, sessionID, e, active, compacted)...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func messageArgs(args []any, sessionID string, e encodedMessage, active, compacted bool) []any {
	m := e.m
	return append(args, sessionID, m.Role, m.Content, nullString(m.APIContent), e.calls, nullString(m.ToolCallID),
		nullString(m.ToolName), nullString(m.Reasoning), nullJSON(m.ReasoningDetails), nullString(m.FinishReason),
		m.TokenCount, micros(m.Timestamp), m.Summary, active, compacted, e.cjk, e.callText, e.stemText)
}

// bulkRows is how many messages one INSERT of a bulk write (import) carries: one statement per
// row costs about as much again in statement overhead as the row itself.
const bulkRows = 32

// insertMessagesBulkSQL inserts bulkRows messages.
var insertMessagesBulkSQL = func() string {
	head, row, _ := strings.Cut(insertMessageSQL, "VALUES")
	rows := make([]string, bulkRows)
	for i := range rows {
		rows[i] = strings.TrimSpace(row)
	}
	return head + "VALUES " + strings.Join(rows, ", ")
}()

// insertMessages inserts enc in order, each row with its own Active and Compacted flags, without
// returning ids: bulkRows at a time, the rest one by one.
func (db *DB) insertMessages(ctx context.Context, tx *sql.Tx, sessionID string, enc []encodedMessage) error {
	if len(enc) >= bulkRows {
		stmt, err := db.txStmt(ctx, tx, insertMessagesBulkSQL)
		if err != nil {
			return err
		}
		args := make([]any, 0, strings.Count(insertMessageSQL, "?")*bulkRows)
		for len(enc) >= bulkRows {
			args = args[:0]
			for _, e := range enc[:bulkRows] {
				args = messageArgs(args, sessionID, e, e.m.Active, e.m.Compacted)
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return err
			}
			enc = enc[bulkRows:]
		}
	}
	for _, e := range enc {
		if _, err := db.insertMessage(ctx, tx, sessionID, e, e.m.Active, e.m.Compacted); err != nil {
			return err
		}
	}
	return nil
}

// Conversation implements store.Transcript.
func (db *DB) Conversation(ctx context.Context, sessionID string, v store.View) ([]store.Message, error) {
	var where string
	switch v {
	case store.ViewActive:
		where = "m.active = 1"
	case store.ViewDisplay:
		where = displayWhere
	case store.ViewAll:
		where = "1"
	default:
		return nil, fmt.Errorf("conversation %s: %w", sessionID, store.Invalid("view", "unknown view %d", v))
	}
	q := db.read()
	if v == store.ViewActive && db.raw != nil && db.hist != nil {
		ms, found, err := db.raw.loadActive(ctx, sessionID, db.hist)
		switch {
		case err == nil && !found:
			return nil, fmt.Errorf("conversation: %w", notFound("session", sessionID))
		case err == nil:
			return ms, nil
		case isCorrupt(err):
			return nil, fmt.Errorf("conversation %s: %w", sessionID, db.damage(err))
		case ctx.Err() != nil:
			return nil, fmt.Errorf("conversation %s: %w", sessionID, err)
		}
		db.rawFallback(fmt.Errorf("load %s: %w", sessionID, err))
	}
	ms, err := db.loadMessages(ctx, sessionID, where)
	if isCorrupt(err) {
		err = db.damage(err)
	}
	if err != nil {
		return nil, fmt.Errorf("conversation %s: %w", sessionID, err)
	}
	if len(ms) == 0 {
		if _, err := getSession(ctx, q, sessionID); err != nil {
			return nil, fmt.Errorf("conversation: %w", err)
		}
	}
	return ms, nil
}

// loadMessages reads a session's rows, with the raw reader where the build has one.
func (db *DB) loadMessages(ctx context.Context, sessionID, where string) ([]store.Message, error) {
	if db.raw != nil {
		ms, err := db.raw.load(ctx, sessionID, where)
		if isCorrupt(err) {
			return nil, db.damage(err) // database/sql would read the same damaged pages
		}
		if err == nil || ctx.Err() != nil {
			return ms, err
		}
		db.rawFallback(fmt.Errorf("load %s: %w", sessionID, err))
	}
	return db.loadMessagesSQL(ctx, sessionID, where)
}

// turnRoom is the spare capacity a loaded transcript gets: room for the messages of the turn
// its loader is about to add.
const turnRoom = 4

// loadMessagesSQL reads a session's rows through statements prepared once per reader connection:
// modernc.org/sqlite parses and plans every statement it is handed, which on a resume cost as
// much as a tenth of the load.
func (db *DB) loadMessagesSQL(ctx context.Context, sessionID, where string) ([]store.Message, error) {
	hintStmt, err := db.rstmts.get(ctx, db.r, "SELECT message_count FROM sessions WHERE id = ?")
	if err != nil {
		return nil, err
	}
	stmt, err := db.rstmts.get(ctx, db.r, "SELECT "+messageCols+" FROM messages m WHERE m.session_id = ? AND "+where+" ORDER BY m.id")
	if err != nil {
		return nil, err
	}
	// Sizing the slice first saves growing (and copying) it a dozen times for a long
	// transcript. The session's count of active rows is exact for the model's view and a lower
	// bound for the others.
	var hint int
	if err := hintStmt.QueryRowContext(ctx, sessionID).Scan(&hint); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ms := make([]store.Message, 0, min(max(hint, 0)+turnRoom, 1<<20))
	// Scanning a driver's string into a string does not copy it. The destinations escape to the
	// heap, so they are declared once for all rows.
	var content, head string
	var calls, extra sql.NullString
	for rows.Next() {
		if err := rows.Scan(&content, &head, &calls, &extra); err != nil {
			return nil, err
		}
		var x *string
		if extra.Valid {
			x = &extra.String
		}
		m, err := decodeMessage(sessionID, content, head, calls.String, x)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, rows.Err()
}

// displayWhere selects the display view: live and archived rows, minus every row that a newer
// visible row copies verbatim (messages.copy_of: compaction re-inserted it), so a message
// carried through several compactions shows once, as its newest copy, while distinct messages
// that merely look alike (the same text twice at the same time) all show.
const displayWhere = `(m.active = 1 OR m.compacted = 1) AND NOT EXISTS (SELECT 1 FROM messages c
	WHERE c.copy_of = coalesce(m.copy_of, m.id) AND c.id > m.id AND (c.active = 1 OR c.compacted = 1))`

// UndoLastExchange implements store.Transcript.
func (db *DB) UndoLastExchange(ctx context.Context, sessionID string, f store.Fence) (int, error) {
	w := store.ApplyFenced(f, nil)
	var n int
	err := db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
		if err := checkWritable(ctx, tx, sessionID, w); err != nil {
			return err
		}
		var from int64
		err := tx.QueryRowContext(ctx, `SELECT max(id) FROM messages WHERE session_id = ? AND active = 1
			AND role = 'user' AND summary = 0`, sessionID).Scan(&from)
		if err != nil {
			// max() over no rows is NULL, which does not scan into int64.
			return fmt.Errorf("session %s has no user message to undo: %w", sessionID, store.ErrNotFound)
		}
		res, err := tx.ExecContext(ctx, `UPDATE messages SET active = 0, compacted = 0
			WHERE session_id = ? AND active = 1 AND id >= ?`, sessionID, from)
		if err != nil {
			return err
		}
		m, _ := res.RowsAffected()
		n = int(m)
		return recount(ctx, tx, sessionID)
	})
	if err != nil {
		return 0, fmt.Errorf("undo in %s: %w", sessionID, err)
	}
	return n, nil
}

// HideMessage implements store.Transcript.
func (db *DB) HideMessage(ctx context.Context, sessionID string, id int64, f store.Fence, opts ...store.WriteOption) (int, error) {
	w := store.ApplyFenced(f, opts)
	var n int
	err := db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
		if err := checkWritable(ctx, tx, sessionID, w); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, coalesce(copy_of, 0), role, summary, coalesce(tool_call_id, ''),
			coalesce(tool_calls, '') FROM messages WHERE session_id = ? AND (active = 1 OR compacted = 1) ORDER BY id`, sessionID)
		if err != nil {
			return err
		}
		shown, err := store.HideRows(rows)
		rows.Close()
		if err != nil {
			return err
		}
		ids, err := store.HideSet(shown, id)
		if err != nil {
			return err
		}
		for _, h := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE messages SET active = 0, compacted = 0 WHERE session_id = ? AND id = ?`, sessionID, h); err != nil {
				return err
			}
		}
		n = len(ids)
		return recount(ctx, tx, sessionID)
	})
	if err != nil {
		return 0, fmt.Errorf("remove message %d from %s: %w", id, sessionID, err)
	}
	return n, nil
}
