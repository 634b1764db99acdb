package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

const chainWalkCap = 1000

// Children implements store.Transcript.
func (db *DB) Children(ctx context.Context, id string) ([]store.Session, error) {
	q := db.read()
	if _, err := getSession(ctx, q, id); err != nil {
		return nil, fmt.Errorf("children: %w", err)
	}
	out, err := loadSessions(ctx, q, "SELECT "+sessionCols+" FROM sessions s WHERE s.parent_session_id = ? ORDER BY s.started_at, s.id", id)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	return out, nil
}

func loadSessions(ctx context.Context, q querier, query string, args ...any) ([]store.Session, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
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

// Root implements store.Transcript. The root is kept on every row (root_id), set when a compression
// continuation is created and repaired when a chain member is deleted.
func (db *DB) Root(ctx context.Context, id string) (string, error) {
	return rootOf(ctx, db.read(), id)
}

func rootOf(ctx context.Context, q querier, id string) (string, error) {
	var root string
	err := q.QueryRowContext(ctx, rootOfSQL, id).Scan(&root)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("session", id)
	}
	return root, err
}

// Chain implements store.Transcript.
func (db *DB) Chain(ctx context.Context, id string) ([]store.Session, error) {
	chain, err := chainOf(ctx, db.read(), id)
	if err != nil {
		return nil, fmt.Errorf("chain of %s: %w", id, err)
	}
	return chain, nil
}

// chainOf walks forward from the root, at each step choosing the continuation most likely to be
// the live line: one that itself continued, then an open one, then the most recently active.
func chainOf(ctx context.Context, q querier, id string) ([]store.Session, error) {
	root, err := rootOf(ctx, q, id)
	if err != nil {
		return nil, err
	}
	cur, err := getSession(ctx, q, root)
	if err != nil {
		return nil, err
	}
	chain := []store.Session{cur}
	seen := map[string]bool{cur.ID: true}
	for len(chain) < chainWalkCap {
		next, err := scanSession(q.QueryRowContext(ctx, "SELECT "+sessionCols+` FROM sessions s
			WHERE s.parent_session_id = ? AND s.relation = 'compression'
			ORDER BY (s.end_reason = 'compression') DESC, (s.ended_at IS NULL) DESC,
				s.last_active DESC, s.started_at DESC, s.id DESC LIMIT 1`, cur.ID))
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		if seen[next.ID] {
			break
		}
		seen[next.ID] = true
		chain = append(chain, next)
		cur = next
	}
	return chain, nil
}

// resumeFastSQL is the common case of ResumeTarget in one read: id's root, and whether the root
// was continued by compression at all (when not, the chain is the root alone and it is the tip;
// a root that is gone takes the long way too, which reports it).
const resumeFastSQL = `SELECT s.root_id, EXISTS (SELECT 1 FROM sessions c
	WHERE c.parent_session_id = s.root_id AND c.relation = 'compression')
	OR NOT EXISTS (SELECT 1 FROM sessions r WHERE r.id = s.root_id) FROM sessions s WHERE s.id = ?`

// ResumeTarget implements store.Transcript.
func (db *DB) ResumeTarget(ctx context.Context, id string) (string, error) {
	// Every gateway turn asks: one read instead of chainOf's three when nothing was rotated.
	var root string
	var continued bool // or the root is gone
	found, err := db.readRow(ctx, resumeFastSQL, []any{id}, func(r rowScanner) error { return r.Scan(&root, &continued) })
	if err == nil && !found {
		return "", fmt.Errorf("resume target of %s: %w", id, notFound("session", id))
	}
	if err != nil {
		return "", fmt.Errorf("resume target of %s: %w", id, err)
	}
	if !continued {
		return root, nil
	}
	chain, err := chainOf(ctx, cachedReads{db}, id)
	if err != nil {
		return "", fmt.Errorf("resume target of %s: %w", id, err)
	}
	return chain[len(chain)-1].ID, nil
}

// Branch implements store.Transcript.
func (db *DB) Branch(ctx context.Context, parentID string, child store.NewSession) (store.Session, error) {
	child.ParentID = parentID
	child.Relation = store.RelationBranch
	parent, err := db.GetSession(ctx, parentID)
	if err != nil {
		return store.Session{}, fmt.Errorf("branch: %w", err)
	}
	if child.Source == "" {
		child.Source = parent.Source
	}
	if child.Model == "" {
		child.Model, child.ModelConfig = parent.Model, parent.ModelConfig
	}
	if child.UserID == "" {
		child.UserID = parent.UserID
	}
	if child.StartedAt.IsZero() {
		child.StartedAt = time.Now()
	}
	generated := child.ID == ""
	if generated {
		child.ID = store.NewChildSessionID(child.StartedAt, parentID) // validated below; drawn again in the transaction
	}
	if err := store.ValidateNewSession(&child); err != nil {
		return store.Session{}, fmt.Errorf("branch %s: %w", parentID, err)
	}
	err = db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
		if err := createChildTx(ctx, tx, &child, generated); err != nil {
			return err
		}
		if err := copyActive(ctx, tx, parentID, child.ID, 0, -1); err != nil {
			return err
		}
		return db.indexNow(ctx, tx)
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("branch %s: %w", parentID, err)
	}
	return db.GetSession(ctx, child.ID)
}

// createChildTx creates a new child session that starts with its parent's system prompt. A
// generated id is drawn again here while a session has it; a given one must be free.
func createChildTx(ctx context.Context, tx *sql.Tx, child *store.NewSession, generated bool) error {
	if generated {
		id, err := freshSessionID(ctx, tx, child.StartedAt)
		if err != nil {
			return err
		}
		child.ID = id
	} else if existsOr(ctx, tx, child.ID) == nil {
		return fmt.Errorf("session %s: %w", child.ID, store.ErrExists)
	}
	if err := createSessionTx(ctx, tx, *child); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE sessions SET system_prompt_hash =
		(SELECT system_prompt_hash FROM sessions WHERE id = ?) WHERE id = ?`, child.ParentID, child.ID)
	return err
}

// copyActive clones the active rows of from with lo < id (and id <= hi unless hi < 0) into to,
// in id order, then recounts to's active counters.
func copyActive(ctx context.Context, tx *sql.Tx, from, to string, lo, hi int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO messages (session_id, role, content, api_content, tool_calls,
		tool_call_id, tool_name, reasoning, reasoning_details, finish_reason, token_count, timestamp,
		summary, active, compacted, cjk, call_text, stem_text)
		SELECT ?, role, content, api_content, tool_calls, tool_call_id, tool_name, reasoning,
			reasoning_details, finish_reason, token_count, timestamp, summary, 1, 0, cjk, call_text, stem_text
		FROM messages WHERE session_id = ? AND active = 1 AND id > ? AND (? < 0 OR id <= ?) ORDER BY id`,
		to, from, lo, hi, hi)
	if err != nil {
		return err
	}
	return recount(ctx, tx, to)
}

// bumpRoot keeps a compression chain listed by its newest activity, as appends do (bumpSession):
// the root of id's chain takes the newest last_active of the chain's sessions.
func bumpRoot(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.ExecContext(ctx, `UPDATE sessions SET last_active = max(last_active,
		(SELECT max(last_active) FROM sessions WHERE root_id = (SELECT root_id FROM sessions WHERE id = ?1)))
		WHERE id = (SELECT root_id FROM sessions WHERE id = ?1)`, id)
	return err
}

// recount sets a session's counters to its active totals and its activity to its newest row.
func recount(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.ExecContext(ctx, `UPDATE sessions SET
		message_count = (SELECT count(*) FROM messages WHERE session_id = ?1 AND active = 1),
		tool_call_count = (SELECT coalesce(sum(json_array_length(tool_calls)), 0) FROM messages
			WHERE session_id = ?1 AND active = 1 AND tool_calls IS NOT NULL),
		last_active = max(last_active, coalesce((SELECT max(timestamp) FROM messages WHERE session_id = ?1), 0)),
		preview = coalesce(preview, (SELECT substr(content, 1, ?2) FROM messages WHERE session_id = ?1
			AND role = 'user' AND summary = 0 AND (active = 1 OR compacted = 1) ORDER BY id LIMIT 1))
		WHERE id = ?1`, id, fts.PreviewChars+1)
	return err
}
