package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	calls *string
	tsv   tsVector
	cjk   *string
}

func encodeMessages(ms []store.Message) ([]encodedMessage, int, error) {
	out := make([]encodedMessage, len(ms))
	toolCalls := 0
	for i, m := range ms {
		if err := store.PrepareMessage(&m); err != nil {
			return nil, 0, fmt.Errorf("message %d: %w", i, err)
		}
		for _, f := range []*string{&m.Content, &m.APIContent, &m.Reasoning} {
			*f = cleanNUL(*f)
		}
		e := encodedMessage{m: m}
		if len(m.ToolCalls) > 0 {
			b, err := json.Marshal(m.ToolCalls)
			if err != nil {
				return nil, 0, fmt.Errorf("message %d: encode tool calls: %w", i, err)
			}
			s := string(b)
			e.calls = &s
			toolCalls += len(m.ToolCalls)
		}
		e.tsv, e.cjk = rowIndex(m, e.calls)
		out[i] = e
	}
	return out, toolCalls, nil
}

const (
	bumpSessionSQL = `UPDATE sessions SET message_count = message_count + $1,
		tool_call_count = tool_call_count + $2, last_active = greatest(last_active, $3), preview = coalesce(preview, $4)
		WHERE id = $5 RETURNING root_id, ended_at IS NOT NULL AND end_reason = 'compression'`
	bumpRootSQL = `UPDATE sessions r SET last_active = greatest(r.last_active, $2)
		FROM sessions c WHERE c.id = $1 AND r.id = c.root_id AND r.id <> c.id`
	insertMessageSQL = `INSERT INTO messages (session_id, role, content, api_content, tool_calls,
		tool_call_id, tool_name, reasoning, reasoning_details, finish_reason, token_count, timestamp,
		summary, active, compacted, tsv, cjk_text) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
		$13, $14, $15, $16::tsvector, $17) RETURNING id`
	// appendHeadSQL is bumpSessionSQL, spool_fence and bumpRootSQL in one statement
	// (migration 0011).
	appendHeadSQL = `SELECT spool_append_head($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	// leaseRowSQL locks the conversation's lease row for the rest of the transaction, so a new
	// holder cannot take it between the check and the commit.
	leaseRowSQL = `SELECT holder, generation, expires_at <= ` + nowUS + `, ttl FROM turn_leases
		WHERE conversation_id = $1 FOR UPDATE`
)

func insertArgs(sessionID string, e encodedMessage, active, compacted bool) []any {
	m := e.m
	return []any{sessionID, m.Role, m.Content, nullString(m.APIContent), e.calls, nullString(m.ToolCallID),
		nullString(m.ToolName), nullString(m.Reasoning), nullJSON(m.ReasoningDetails), nullString(m.FinishReason),
		m.TokenCount, micros(m.Timestamp), m.Summary, active, compacted, e.tsv, e.cjk}
}

// firstUserText is the preview candidate of a batch.
func firstUserText(enc []encodedMessage) *string {
	for _, e := range enc {
		if e.m.Role == store.RoleUser && !e.m.Summary {
			s := fts.TruncateRunes(e.m.Content, fts.PreviewChars+1)
			return &s
		}
	}
	return nil
}

// appendMessages writes the batch in one round trip: spool_append_head (the session's counters,
// which lock its row and so order appends to it; the closed-session and lease checks, which
// lock the lease row; the root's activity) and every insert are pipelined with SendBatch,
// which PostgreSQL runs as one implicit transaction: a failed check aborts all of it.
func (db *DB) appendMessages(ctx context.Context, sessionID string, ms []store.Message, w store.WriteOptions) ([]int64, error) {
	enc, toolCalls, err := encodeMessages(ms)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", sessionID, err)
	}
	var ids []int64
	conv, holder, gen := fenceArgs(w)
	b := &pgx.Batch{}
	b.Queue(appendHeadSQL, sessionID, len(enc), toolCalls, micros(enc[len(enc)-1].m.Timestamp), firstUserText(enc),
		w.AllowClosed, conv, holder, gen)
	for _, e := range enc {
		b.Queue(insertMessageSQL, insertArgs(sessionID, e, true, false)...)
	}
	err = db.batch(ctx, db.opts.WriteBudget, b, func(br pgx.BatchResults) error {
		ids = ids[:0]
		if _, err := br.Exec(); err != nil {
			return fenceErr(err, sessionID, w)
		}
		for range enc {
			var id int64
			if err := br.QueryRow().Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", sessionID, err)
	}
	return ids, nil
}

// appendRowsTx appends enc to sessionID in tx with no lease or closed check of its own (the
// session was created in tx, or tx already holds what fences it: BeginTurn's lease), in one
// round trip: counters, the root's activity, the rows. It returns the rows' ids.
func appendRowsTx(ctx context.Context, tx pgx.Tx, sessionID string, enc []encodedMessage, toolCalls int) ([]int64, error) {
	last := micros(enc[len(enc)-1].m.Timestamp)
	b := &pgx.Batch{}
	b.Queue(bumpSessionSQL, len(enc), toolCalls, last, firstUserText(enc), sessionID)
	b.Queue(bumpRootSQL, sessionID, last)
	for _, e := range enc {
		b.Queue(insertMessageSQL, insertArgs(sessionID, e, true, false)...)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	ids := make([]int64, 0, len(enc))
	for range enc {
		var id int64
		if err := br.QueryRow().Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, br.Close()
}

// queueFence adds the spool_fence call of a write on sessionID under w.
func queueFence(b *pgx.Batch, sessionID string, w store.WriteOptions) {
	conv, holder, gen := fenceArgs(w)
	b.Queue("SELECT spool_fence($1, $2, $3, $4, $5)", sessionID, w.AllowClosed, conv, holder, gen)
}

// fenceArgs are spool_fence's lease arguments for w: a nil conversation when the write is not
// fenced (the zero fence names the conversation "", which no lease row has: it is refused).
func fenceArgs(w store.WriteOptions) (conv, holder *string, gen int64) {
	if f := w.Fence; f != nil {
		c, h := f.ConversationID(), f.Holder()
		return &c, &h, f.Generation()
	}
	return nil, nil, 0
}

// fenceErr maps spool_fence's SQLSTATEs to the store's errors.
func fenceErr(err error, sessionID string, w store.WriteOptions) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "SP001":
		return notFound("session", sessionID)
	case "SP002":
		return fmt.Errorf("session %s: %w", sessionID, store.ErrSessionClosed)
	case "SP003":
		if f := w.Fence; f != nil {
			return fmt.Errorf("generation %d of %s: %w", f.Generation(), f.ConversationID(), store.ErrLeaseLost)
		}
		return store.ErrLeaseLost
	}
	return err
}

// checkLeaseRow reads leaseRowSQL's row for conversation root against f. renew is true when
// the lease is still f's but expired (nobody took it): the write then renews it in place.
func checkLeaseRow(row pgx.Row, root string, f *store.Fence) (renew bool, err error) {
	var holder *string
	var gen, ttl int64
	var expired *bool
	err = row.Scan(&holder, &gen, &expired, &ttl)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, f.Check(root, "", 0)
	}
	if err != nil {
		return false, err
	}
	cur := ""
	if holder != nil {
		cur = *holder
	}
	if err := f.Check(root, cur, gen); err != nil {
		return false, err
	}
	return expired != nil && *expired, nil
}

func renewExpired(ctx context.Context, tx pgx.Tx, conv string) error {
	_, err := tx.Exec(ctx, "UPDATE turn_leases SET expires_at = "+nowUS+" + greatest(ttl, 100000) WHERE conversation_id = $1", conv)
	return err
}

// checkLease fences a write on a session whose conversation root is root, inside tx.
func checkLease(ctx context.Context, tx pgx.Tx, root string, f *store.Fence) error {
	if f == nil {
		return nil
	}
	if err := f.Check(root, f.Holder(), f.Generation()); err != nil {
		return err // the zero fence, or another conversation's
	}
	renew, err := checkLeaseRow(tx.QueryRow(ctx, leaseRowSQL, root), root, f)
	if err != nil || !renew {
		return err
	}
	return renewExpired(ctx, tx, root)
}

// Conversation implements store.Transcript.
func (db *DB) Conversation(ctx context.Context, sessionID string, v store.View) ([]store.Message, error) {
	var where string
	switch v {
	case store.ViewActive:
		where = "m.active"
	case store.ViewDisplay:
		where = displayWhere
	case store.ViewAll:
		where = "true"
	default:
		return nil, fmt.Errorf("conversation %s: %w", sessionID, store.Invalid("view", "unknown view %d", v))
	}
	// No ORDER BY: collectMessages puts the rows in id order. A session's rows are spread over
	// the heap (sessions append in turns), so PostgreSQL reads them through a bitmap in heap
	// order, which is nearly id order; sorting them on the server held the whole transcript
	// back until the last row was read and sorted (a third of the server's time for 1,503
	// rows), where unsorted they stream to the client as they are read.
	rows, err := db.pool.Query(ctx, "SELECT "+messageCols+" FROM messages m WHERE m.session_id = $1 AND "+where, sessionID)
	if err != nil {
		return nil, fmt.Errorf("conversation %s: %w", sessionID, err)
	}
	ms, err := collectMessages(rows, sessionID)
	if err != nil {
		return nil, fmt.Errorf("conversation %s: %w", sessionID, err)
	}
	if len(ms) == 0 {
		if _, err := getSession(ctx, db.pool, sessionID); err != nil {
			return nil, fmt.Errorf("conversation: %w", err)
		}
	}
	return ms, nil
}

// UndoLastExchange implements store.Transcript.
func (db *DB) UndoLastExchange(ctx context.Context, sessionID string, f store.Fence) (int, error) {
	w := store.ApplyFenced(f, nil)
	var n int
	err := db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) error {
		if err := checkWritable(ctx, tx, sessionID, w); err != nil {
			return err
		}
		var from *int64
		if err := tx.QueryRow(ctx, `SELECT max(id) FROM messages WHERE session_id = $1 AND active
			AND role = 'user' AND NOT summary`, sessionID).Scan(&from); err != nil {
			return err
		}
		if from == nil {
			return fmt.Errorf("session %s has no user message to undo: %w", sessionID, store.ErrNotFound)
		}
		tag, err := tx.Exec(ctx, `UPDATE messages SET active = false, compacted = false
			WHERE session_id = $1 AND active AND id >= $2`, sessionID, *from)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
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
	err := db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) error {
		if err := checkWritable(ctx, tx, sessionID, w); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, coalesce(copy_of, 0), role, summary, coalesce(tool_call_id, ''),
			coalesce(tool_calls, '') FROM messages WHERE session_id = $1 AND (active OR compacted) ORDER BY id`, sessionID)
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
		if _, err := tx.Exec(ctx, `UPDATE messages SET active = false, compacted = false
			WHERE session_id = $1 AND id = ANY($2)`, sessionID, ids); err != nil {
			return err
		}
		n = len(ids)
		return recount(ctx, tx, sessionID)
	})
	if err != nil {
		return 0, fmt.Errorf("remove message %d from %s: %w", id, sessionID, err)
	}
	return n, nil
}
