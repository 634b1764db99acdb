package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

const routineBudget = 20 * time.Second

func notFound(kind, ref string) error {
	return fmt.Errorf("%s %q: %w", kind, ref, store.ErrNotFound)
}

// CreateSession implements store.Sessions.
func (db *DB) CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error) {
	if ns.Source == "" {
		ns.Source = "cli"
	}
	if ns.StartedAt.IsZero() {
		ns.StartedAt = time.Now()
	}
	generated := ns.ID == ""
	if generated {
		ns.ID = store.NewSessionID(ns.StartedAt) // validated below; drawn again in the transaction
	}
	if err := store.ValidateNewSession(&ns); err != nil {
		return store.Session{}, fmt.Errorf("create session %s: %w", ns.ID, err)
	}
	prompt := store.CleanText(ns.SystemPrompt)
	var first []encodedMessage
	var toolCalls int
	if len(ns.Messages) > 0 {
		var err error
		if first, toolCalls, err = encodeMessages(ns.Messages); err != nil {
			return store.Session{}, fmt.Errorf("create session %s: %w", ns.ID, err)
		}
	}
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		if generated {
			// Not an existing session's id (ensure semantics would return that session).
			id, err := freshSessionID(ctx, tx, ns.StartedAt)
			if err != nil {
				return err
			}
			ns.ID = id
		}
		fresh := len(first) > 0 || ns.SystemPrompt != ""
		if fresh {
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE id = ?", ns.ID).Scan(&one)
			if err == nil {
				return fmt.Errorf("with a prompt or first messages: %w", store.ErrExists)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if err := createSessionTx(ctx, tx, ns); err != nil || !fresh {
			return err
		}
		if prompt != "" {
			if err := setPromptTx(ctx, tx, ns.ID, prompt, store.PromptHash(prompt)); err != nil {
				return err
			}
		}
		if len(first) == 0 {
			return nil
		}
		_, err := db.appendTx(ctx, tx, ns.ID, first, toolCalls, store.WriteOptions{})
		return err
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("create session %s: %w", ns.ID, err)
	}
	return db.GetSession(ctx, ns.ID)
}

// createSessionTx inserts ns unless its id exists (ensure semantics).
func createSessionTx(ctx context.Context, tx *sql.Tx, ns store.NewSession) error {
	var existingSource string
	err := tx.QueryRowContext(ctx, "SELECT source FROM sessions WHERE id = ?", ns.ID).Scan(&existingSource)
	if err == nil {
		// Never overwrite an earlier writer's values; a placeholder source may be upgraded.
		if existingSource == "unknown" && ns.Source != "unknown" {
			_, err = tx.ExecContext(ctx, "UPDATE sessions SET source = ? WHERE id = ?", ns.Source, ns.ID)
		}
		return err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	rootID := ns.ID
	if ns.ParentID != "" {
		var parentRoot, cwd, branch string
		err := tx.QueryRowContext(ctx, "SELECT root_id, cwd, git_branch FROM sessions WHERE id = ?", ns.ParentID).
			Scan(&parentRoot, &cwd, &branch)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("parent session", ns.ParentID)
		}
		if err != nil {
			return err
		}
		if ns.Relation == store.RelationCompression {
			rootID = parentRoot
		}
		if ns.Cwd == "" {
			ns.Cwd = cwd
		}
		if ns.GitBranch == "" {
			ns.GitBranch = branch
		}
	}
	if ns.Title != "" {
		if holder, err := titleHolder(ctx, tx, ns.UserID, ns.Title); err != nil {
			return err
		} else if holder != "" {
			return &store.TitleInUseError{Title: ns.Title, SessionID: holder}
		}
	}
	started := micros(ns.StartedAt)
	_, err = tx.ExecContext(ctx, `INSERT INTO sessions (id, source, user_id, session_key, title, model,
		model_config, parent_session_id, relation, root_id, started_at, last_active, cwd, git_branch)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ns.ID, ns.Source, ns.UserID, ns.SessionKey, nullString(ns.Title), ns.Model, nullJSON(ns.ModelConfig),
		nullString(ns.ParentID), string(ns.Relation), rootID, started, started, ns.Cwd, ns.GitBranch)
	return err
}

// titleHolder returns the session of userID's that holds title ("" when none does): titles are
// unique per principal.
func titleHolder(ctx context.Context, tx *sql.Tx, userID, title string) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, "SELECT id FROM sessions WHERE user_id = ? AND title = ?", userID, title).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// GetSession implements store.Sessions.
func (db *DB) GetSession(ctx context.Context, id string) (store.Session, error) {
	var s store.Session
	found, err := db.readRow(ctx, getSessionSQL, []any{id}, func(r rowScanner) (err error) {
		s, err = scanSession(r)
		return err
	})
	if err == nil && !found {
		err = notFound("session", id)
	}
	if err != nil {
		return s, fmt.Errorf("get session: %w", err)
	}
	return s, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

const getSessionSQL = "SELECT " + sessionCols + " FROM sessions s WHERE s.id = ?"

func getSession(ctx context.Context, q querier, id string) (store.Session, error) {
	s, err := scanSession(q.QueryRowContext(ctx, getSessionSQL, id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, notFound("session", id)
	}
	return s, err
}

var titleNumber = sqlq.TitleNumber

// ResolveSession implements store.Sessions.
func (db *DB) ResolveSession(ctx context.Context, ref string) (store.Session, error) {
	return db.resolveSession(ctx, nil, ref)
}

// ResolveSessionOf implements store.Sessions.
func (db *DB) ResolveSessionOf(ctx context.Context, userID, ref string) (store.Session, error) {
	return db.resolveSession(ctx, &userID, ref)
}

// resolveSession resolves ref among owner's sessions, or among everyone's when owner is nil.
func (db *DB) resolveSession(ctx context.Context, owner *string, ref string) (store.Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return store.Session{}, store.Invalid("session", "empty reference")
	}
	q := db.read()
	if s, err := getSession(ctx, q, ref); err != nil && !errors.Is(err, store.ErrNotFound) {
		return s, err
	} else if err == nil && (owner == nil || s.UserID == *owner) {
		return s, nil
	}
	if id, err := resolveTitle(ctx, q, owner, ref); err != nil {
		return store.Session{}, err
	} else if id != "" {
		return getSession(ctx, q, id)
	}
	ownerSQL, args := "", []any{ref, ref + "\U0010FFFF"}
	if owner != nil {
		ownerSQL, args = " AND user_id = ?", append(args, *owner)
	}
	ids, err := column[string](ctx, q, "SELECT id FROM sessions WHERE id >= ? AND id < ?"+ownerSQL+" ORDER BY id LIMIT 50", args...)
	if err != nil {
		return store.Session{}, err
	}
	switch len(ids) {
	case 0:
		return store.Session{}, notFound("session", ref)
	case 1:
		return getSession(ctx, q, ids[0])
	}
	return store.Session{}, &store.AmbiguousError{Ref: ref, Matches: ids}
}

// resolveTitle finds a session by title: "name" resolves to its newest numbered continuation
// ("name #3") when there is one, else to the exact title; a numbered ref matches only itself.
// With owner nil, the local principal's title comes before other principals' own of the same name.
func resolveTitle(ctx context.Context, q querier, owner *string, ref string) (string, error) {
	t, err := store.CleanTitle(strings.Trim(ref, "\"'`"))
	if err != nil || t == "" {
		return "", nil
	}
	where, args := "title = ?1", []any{t}
	if !titleNumber.MatchString(t) {
		where, args = "(title = ?1 OR title GLOB ?2)", append(args, globEscape(t)+" #[0-9]*")
	}
	if owner != nil {
		where, args = where+fmt.Sprintf(" AND user_id = ?%d", len(args)+1), append(args, *owner)
	}
	var id string
	err = q.QueryRowContext(ctx, "SELECT id FROM sessions WHERE "+where+
		" ORDER BY user_id <> '', title = ?1, started_at DESC LIMIT 1", args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[':
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteByte(']')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// UpdateSession implements store.Sessions.
func (db *DB) UpdateSession(ctx context.Context, id string, p store.SessionPatch) error {
	sets, args, err := patchSets(p)
	if err != nil {
		return fmt.Errorf("update session %s: %w", id, err)
	}
	if len(sets) == 0 {
		_, err := db.GetSession(ctx, id)
		return err
	}
	return db.updateOne(ctx, "update session", id, "UPDATE sessions SET "+strings.Join(sets, ", ")+" WHERE id = ?", append(args, id)...)
}

// patchSets is p as the SET clauses of an UPDATE of sessions and their arguments.
func patchSets(p store.SessionPatch) (sets []string, args []any, err error) {
	if err := store.ValidateModelConfig(p.ModelConfig); err != nil {
		return nil, nil, err
	}
	add := func(col string, v any) { sets = append(sets, col+" = ?"); args = append(args, v) }
	if p.Model != nil {
		add("model", *p.Model)
	}
	if p.ModelConfig != nil {
		add("model_config", string(p.ModelConfig))
	}
	if p.Cwd != nil {
		add("cwd", *p.Cwd)
	}
	if p.GitBranch != nil {
		add("git_branch", *p.GitBranch)
	}
	if p.Source != nil {
		if *p.Source == "" {
			return nil, nil, store.Invalid("source", "must not be empty")
		}
		add("source", *p.Source)
	}
	return sets, args, nil
}

// updateOne runs a single-row update and reports a missing session as ErrNotFound.
func (db *DB) updateOne(ctx context.Context, what, id, query string, args ...any) error {
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return existsOr(ctx, tx, id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, id, err)
	}
	return nil
}

// existsOr returns ErrNotFound when the session is missing, nil otherwise.
// freshSessionID draws a generated id for a session started at t that no session has, in the
// transaction that creates it.
func freshSessionID(ctx context.Context, tx *sql.Tx, t time.Time) (string, error) {
	return store.FreshSessionID(t, func(id string) (bool, error) {
		err := existsOr(ctx, tx, id)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	})
}

func existsOr(ctx context.Context, tx *sql.Tx, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("session", id)
	}
	return err
}

// EndSession implements store.Sessions.
func (db *DB) EndSession(ctx context.Context, id, reason string) error {
	if reason == "" {
		return fmt.Errorf("end session %s: %w", id, store.Invalid("reason", "must not be empty"))
	}
	return db.updateOne(ctx, "end session", id,
		"UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
		micros(time.Now()), reason, id)
}

// ReopenSession implements store.Sessions.
func (db *DB) ReopenSession(ctx context.Context, id string) error {
	return db.updateOne(ctx, "reopen session", id,
		"UPDATE sessions SET ended_at = NULL, end_reason = '' WHERE id = ?", id)
}

// SetTitle implements store.Sessions.
func (db *DB) SetTitle(ctx context.Context, id, title string, opts ...store.WriteOption) error {
	t, err := store.CleanTitle(title)
	if err != nil {
		return fmt.Errorf("set title of %s: %w", id, err)
	}
	w := store.ApplyWriteOptions(opts)
	err = db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		var root, owner string
		if err := tx.QueryRowContext(ctx, "SELECT root_id, user_id FROM sessions WHERE id = ?", id).Scan(&root, &owner); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("session", id)
			}
			return err
		}
		if err := checkLease(ctx, tx, root, w.Fence); err != nil {
			return err
		}
		if t != "" {
			var holder, holderRoot string
			err := tx.QueryRowContext(ctx, "SELECT id, root_id FROM sessions WHERE user_id = ? AND title = ?", owner, t).
				Scan(&holder, &holderRoot)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return err
			case holder == id:
				return nil
			case holderRoot == root:
				// Held by another member of the same compression chain: the title moves to this one.
				if _, err := tx.ExecContext(ctx, "UPDATE sessions SET title = NULL WHERE id = ?", holder); err != nil {
					return err
				}
			default:
				return &store.TitleInUseError{Title: t, SessionID: holder}
			}
		}
		_, err := tx.ExecContext(ctx, "UPDATE sessions SET title = ? WHERE id = ?", nullString(t), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("set title of %s: %w", id, err)
	}
	return nil
}

// NextTitle implements store.Sessions.
func (db *DB) NextTitle(ctx context.Context, userID, base string) (string, error) {
	t, err := sqlq.TitleBase(base)
	if err != nil {
		return "", err
	}
	rows, err := db.read().QueryContext(ctx, "SELECT title FROM sessions WHERE user_id = ?3 AND (title = ?1 OR title GLOB ?2)",
		t, globEscape(t)+" #[0-9]*", userID)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var titles []string
	for rows.Next() {
		var title string
		if err := rows.Scan(&title); err != nil {
			return "", err
		}
		titles = append(titles, title)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return sqlq.NextNumbered(t, titles)
}

// DeleteSession implements store.Sessions.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		if err := existsOr(ctx, tx, id); err != nil {
			return err
		}
		if err := refuseRunningTurn(ctx, tx, id); err != nil {
			return err
		}
		return deleteSessionTx(ctx, tx, id)
	})
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	return nil
}

// refuseRunningTurn fails with a *store.LeaseHeldError while a live holder (not one provably
// dead) holds the turn lease of id's conversation: a session is not deleted under a running turn.
func refuseRunningTurn(ctx context.Context, tx *sql.Tx, id string) error {
	conv, err := rootOf(ctx, tx, id)
	if err != nil {
		return err
	}
	var holder sql.NullString
	var gen int64
	var expires sql.NullInt64
	switch err := tx.QueryRowContext(ctx, leaseGetSQL, conv).Scan(&holder, &gen, &expires); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	case store.LeaseLive(holder.String, fromMicros(expires.Int64), time.Now()):
		return &store.LeaseHeldError{ConversationID: conv, Holder: holder.String, ExpiresAt: fromMicros(expires.Int64)}
	}
	return nil
}

// deleteSessionTx deletes id with its delegate children; other children are orphaned, and a
// compression continuation becomes the root of what remains of its chain.
func deleteSessionTx(ctx context.Context, tx *sql.Tx, id string) error {
	rows, err := tx.QueryContext(ctx, "SELECT id, relation FROM sessions WHERE parent_session_id = ?", id)
	if err != nil {
		return err
	}
	type child struct{ id, rel string }
	var children []child
	for rows.Next() {
		var c child
		if err := rows.Scan(&c.id, &c.rel); err != nil {
			rows.Close()
			return err
		}
		children = append(children, c)
	}
	rows.Close()
	for _, c := range children {
		if c.rel == string(store.RelationDelegate) {
			if err := deleteSessionTx(ctx, tx, c.id); err != nil {
				return err
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET parent_session_id = NULL, relation = '' WHERE id = ?", c.id); err != nil {
			return err
		}
		if c.rel == string(store.RelationCompression) {
			if _, err := tx.ExecContext(ctx, `WITH RECURSIVE chain(id) AS (
					SELECT ?1 UNION SELECT s.id FROM sessions s JOIN chain ON s.parent_session_id = chain.id
					WHERE s.relation = 'compression')
				UPDATE sessions SET root_id = ?1 WHERE id IN (SELECT id FROM chain)`, c.id); err != nil {
				return err
			}
		}
	}
	var hash sql.NullString
	if err := tx.QueryRowContext(ctx, "SELECT system_prompt_hash FROM sessions WHERE id = ?", id).Scan(&hash); err != nil {
		return err
	}
	for _, q := range []string{
		"DELETE FROM messages WHERE session_id = ?",
		"DELETE FROM compression_locks WHERE session_id = ?",
		"DELETE FROM requests WHERE session_id = ?",
		"DELETE FROM routes WHERE session_id = ?",
		"DELETE FROM sessions WHERE id = ?",
	} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return err
		}
	}
	if hash.Valid {
		_, err := tx.ExecContext(ctx, `DELETE FROM system_prompts WHERE hash = ?1
			AND NOT EXISTS (SELECT 1 FROM sessions WHERE system_prompt_hash = ?1)`, hash.String)
		return err
	}
	return nil
}

// SetSystemPrompt implements store.Sessions.
func (db *DB) SetSystemPrompt(ctx context.Context, id, prompt string) (string, error) {
	prompt = store.CleanText(prompt)
	hash := store.PromptHash(prompt)
	err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
		return setPromptTx(ctx, tx, id, prompt, hash)
	})
	if err != nil {
		return "", fmt.Errorf("set system prompt of %s: %w", id, err)
	}
	return hash, nil
}

func setPromptTx(ctx context.Context, tx *sql.Tx, id, prompt, hash string) error {
	if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)", hash, prompt); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, "UPDATE sessions SET system_prompt_hash = ? WHERE id = ?", hash, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("session", id)
	}
	return nil
}
