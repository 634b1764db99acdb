package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

const chainWalkCap = 1000

// Children implements store.Transcript.
func (db *DB) Children(ctx context.Context, id string) ([]store.Session, error) {
	if _, err := getSession(ctx, db.pool, id); err != nil {
		return nil, fmt.Errorf("children: %w", err)
	}
	rows, err := db.pool.Query(ctx, "SELECT "+sessionCols+" FROM sessions s WHERE s.parent_session_id = $1 ORDER BY s.started_at, s.id", id)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	out, err := collectSessions(rows)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	return out, nil
}

// Root implements store.Transcript.
func (db *DB) Root(ctx context.Context, id string) (string, error) {
	return rootOf(ctx, db.pool, id)
}

func rootOf(ctx context.Context, q querier, id string) (string, error) {
	var root string
	err := q.QueryRow(ctx, "SELECT root_id FROM sessions WHERE id = $1", id).Scan(&root)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", notFound("session", id)
	}
	return root, err
}

// Chain implements store.Transcript.
func (db *DB) Chain(ctx context.Context, id string) ([]store.Session, error) {
	chain, err := chainOf(ctx, db.pool, id)
	if err != nil {
		return nil, fmt.Errorf("chain of %s: %w", id, err)
	}
	return chain, nil
}

// chainOf walks forward from the root as store/sqlite does: at each step the continuation that
// itself continued, then an open one, then the most recently active.
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
		next, err := scanSession(q.QueryRow(ctx, "SELECT "+sessionCols+` FROM sessions s
			WHERE s.parent_session_id = $1 AND s.relation = 'compression'
			ORDER BY (s.end_reason = 'compression') DESC, (s.ended_at IS NULL) DESC,
				s.last_active DESC, s.started_at DESC, s.id DESC LIMIT 1`, cur.ID))
		if errors.Is(err, pgx.ErrNoRows) {
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

// ResumeTarget implements store.Transcript.
func (db *DB) ResumeTarget(ctx context.Context, id string) (string, error) {
	chain, err := chainOf(ctx, db.pool, id)
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
	if err := validateNewSession(&child); err != nil {
		return store.Session{}, fmt.Errorf("branch %s: %w", parentID, err)
	}
	err = db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) error {
		if err := createChildTx(ctx, tx, &child, generated); err != nil {
			return err
		}
		return copyActive(ctx, tx, parentID, child.ID, 0, -1)
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("branch %s: %w", parentID, db.titleErr(ctx, err, child.UserID, child.Title))
	}
	return db.GetSession(ctx, child.ID)
}

// createChildTx creates a new child session with its parent's prompt. A generated id is drawn
// again here while a session has it; a given one must be free.
func createChildTx(ctx context.Context, tx pgx.Tx, child *store.NewSession, generated bool) error {
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
	_, err := tx.Exec(ctx, `UPDATE sessions SET system_prompt_hash =
		(SELECT system_prompt_hash FROM sessions WHERE id = $1) WHERE id = $2`, child.ParentID, child.ID)
	return err
}

// copyActive clones the active rows of from with lo < id (and id <= hi unless hi < 0) into to,
// in id order, then recounts to's counters.
func copyActive(ctx context.Context, tx pgx.Tx, from, to string, lo, hi int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO messages (session_id, role, content, api_content, tool_calls,
		tool_call_id, tool_name, reasoning, reasoning_details, finish_reason, token_count, timestamp,
		summary, active, compacted, tsv, cjk_text)
		SELECT $1, role, content, api_content, tool_calls, tool_call_id, tool_name, reasoning,
			reasoning_details, finish_reason, token_count, timestamp, summary, true, false, tsv, cjk_text
		FROM messages WHERE session_id = $2 AND active AND id > $3 AND ($4 < 0 OR id <= $4) ORDER BY id`,
		to, from, lo, hi)
	if err != nil {
		return err
	}
	return recount(ctx, tx, to)
}

// recount sets a session's counters to its active totals and its activity to its newest row.
func recount(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `UPDATE sessions SET
		message_count = (SELECT count(*) FROM messages WHERE session_id = $1 AND active),
		tool_call_count = (SELECT coalesce(sum(json_array_length(tool_calls::json)), 0) FROM messages
			WHERE session_id = $1 AND active AND tool_calls IS NOT NULL),
		last_active = greatest(last_active, coalesce((SELECT max(timestamp) FROM messages WHERE session_id = $1), 0)),
		preview = coalesce(preview, (SELECT left(content, $2) FROM messages WHERE session_id = $1
			AND role = 'user' AND NOT summary AND (active OR compacted) ORDER BY id LIMIT 1))
		WHERE id = $1`, id, fts.PreviewChars+1)
	return err
}

// bumpRootActivity moves the last activity of id's chain root up to id's newest message, as
// appends do: a compression chain lists by its newest message.
func bumpRootActivity(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `UPDATE sessions SET last_active = greatest(last_active,
		coalesce((SELECT max(timestamp) FROM messages WHERE session_id = $1), 0))
		WHERE id = (SELECT root_id FROM sessions WHERE id = $1) AND id <> $1`, id)
	return err
}
