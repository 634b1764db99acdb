package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

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
	if err := validateNewSession(&ns); err != nil {
		return store.Session{}, fmt.Errorf("create session %s: %w", ns.ID, err)
	}
	prompt := cleanNUL(store.CleanText(ns.SystemPrompt))
	var first []encodedMessage
	var toolCalls int
	if len(ns.Messages) > 0 {
		var err error
		if first, toolCalls, err = encodeMessages(ns.Messages); err != nil {
			return store.Session{}, fmt.Errorf("create session %s: %w", ns.ID, err)
		}
	}
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
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
			err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE id = $1", ns.ID).Scan(&one)
			if err == nil {
				return fmt.Errorf("with a prompt or first messages: %w", store.ErrExists)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
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
		_, err := appendRowsTx(ctx, tx, ns.ID, first, toolCalls)
		return err
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("create session %s: %w", ns.ID, db.titleErr(ctx, err, ns.UserID, ns.Title))
	}
	return db.GetSession(ctx, ns.ID)
}

// titleErr turns a unique violation of the title index (two writers racing for one title) into
// the TitleInUseError the check before the insert would have returned.
func (db *DB) titleErr(ctx context.Context, err error, userID, title string) error {
	if !isUnique(err, "sessions_title") {
		return err
	}
	holder, _ := titleHolder(ctx, db.pool, userID, title)
	return &store.TitleInUseError{Title: title, SessionID: holder}
}

func validateNewSession(ns *store.NewSession) error {
	if err := store.ValidateNewSession(ns); err != nil {
		return err
	}
	// PostgreSQL text cannot hold NUL; every other field is cleaned by the store package.
	for _, f := range []*string{&ns.Source, &ns.UserID, &ns.SessionKey, &ns.Model, &ns.Cwd, &ns.GitBranch} {
		*f = store.CleanIdent(*f)
	}
	return nil
}

// createSessionTx inserts ns unless its id exists (ensure semantics).
func createSessionTx(ctx context.Context, tx pgx.Tx, ns store.NewSession) error {
	var existingSource string
	err := tx.QueryRow(ctx, "SELECT source FROM sessions WHERE id = $1 FOR UPDATE", ns.ID).Scan(&existingSource)
	if err == nil {
		if existingSource == "unknown" && ns.Source != "unknown" {
			_, err = tx.Exec(ctx, "UPDATE sessions SET source = $1 WHERE id = $2", ns.Source, ns.ID)
		}
		return err
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	rootID := ns.ID
	if ns.ParentID != "" {
		var parentRoot, cwd, branch string
		err := tx.QueryRow(ctx, "SELECT root_id, cwd, git_branch FROM sessions WHERE id = $1", ns.ParentID).
			Scan(&parentRoot, &cwd, &branch)
		if errors.Is(err, pgx.ErrNoRows) {
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
	_, err = tx.Exec(ctx, `INSERT INTO sessions (id, source, user_id, session_key, title, model,
		model_config, parent_session_id, relation, root_id, started_at, last_active, cwd, git_branch)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13) ON CONFLICT (id) DO NOTHING`,
		ns.ID, ns.Source, ns.UserID, ns.SessionKey, nullString(ns.Title), ns.Model, nullJSON(ns.ModelConfig),
		nullString(ns.ParentID), string(ns.Relation), rootID, started, ns.Cwd, ns.GitBranch)
	return err
}

// titleHolder returns the session of userID's that holds title ("" when none does): titles are
// unique per principal.
func titleHolder(ctx context.Context, q querier, userID, title string) (string, error) {
	var id string
	err := q.QueryRow(ctx, "SELECT id FROM sessions WHERE user_id = $1 AND title = $2", userID, title).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// GetSession implements store.Sessions.
func (db *DB) GetSession(ctx context.Context, id string) (store.Session, error) {
	s, err := getSession(ctx, db.pool, id)
	if err != nil {
		return s, fmt.Errorf("get session: %w", err)
	}
	return s, nil
}

func getSession(ctx context.Context, q querier, id string) (store.Session, error) {
	s, err := scanSession(q.QueryRow(ctx, "SELECT "+sessionCols+" FROM sessions s WHERE s.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return s, notFound("session", id)
	}
	return s, err
}

var titleNumber = sqlq.TitleNumber

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

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
	ref = store.CleanIdent(ref)
	q := db.pool
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
	ownerSQL, args := "", []any{likeEscape(ref) + "%"}
	if owner != nil {
		ownerSQL, args = " AND user_id = $2", append(args, *owner)
	}
	ids, err := column[string](ctx, q, `SELECT id FROM sessions WHERE id LIKE $1`+ownerSQL+` ORDER BY id COLLATE "C" LIMIT 50`, args...)
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

// numberedLike matches "base #N..." candidates; titleNumber decides in Go.
const numberedTitles = `(starts_with(title, $2) AND substr(title, $3, 1) ~ '^[0-9]')`

// resolveTitle finds a session by title as SQLite's resolveTitle does.
func resolveTitle(ctx context.Context, q querier, owner *string, ref string) (string, error) {
	t, err := store.CleanTitle(strings.Trim(ref, "\"'`"))
	if err != nil || t == "" {
		return "", nil
	}
	where, args := "title = $1", []any{t}
	if !titleNumber.MatchString(t) {
		where, args = "(title = $1 OR "+numberedTitles+")", append(args, t+" #", len([]rune(t))+3)
	}
	if owner != nil {
		where, args = where+fmt.Sprintf(" AND user_id = $%d", len(args)+1), append(args, *owner)
	}
	var id string
	err = q.QueryRow(ctx, "SELECT id FROM sessions WHERE "+where+
		" ORDER BY user_id <> '', title = $1, started_at DESC LIMIT 1", args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, err
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
	args = append(args, id)
	return db.updateOne(ctx, "update session", id,
		fmt.Sprintf("UPDATE sessions SET %s WHERE id = $%d", strings.Join(sets, ", "), len(args)), args...)
}

// patchSets is p as the SET clauses of an UPDATE of sessions ($1 on) and their arguments.
func patchSets(p store.SessionPatch) (sets []string, args []any, err error) {
	if err := store.ValidateModelConfig(p.ModelConfig); err != nil {
		return nil, nil, err
	}
	add := func(col string, v any) {
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if p.Model != nil {
		add("model", store.CleanIdent(*p.Model))
	}
	if p.ModelConfig != nil {
		add("model_config", string(p.ModelConfig))
	}
	if p.Cwd != nil {
		add("cwd", store.CleanIdent(*p.Cwd))
	}
	if p.GitBranch != nil {
		add("git_branch", store.CleanIdent(*p.GitBranch))
	}
	if p.Source != nil {
		if *p.Source == "" {
			return nil, nil, store.Invalid("source", "must not be empty")
		}
		add("source", store.CleanIdent(*p.Source))
	}
	return sets, args, nil
}

// updateOne runs a single-row update and reports a missing session as ErrNotFound.
func (db *DB) updateOne(ctx context.Context, what, id, query string, args ...any) error {
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, query, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
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
func freshSessionID(ctx context.Context, q querier, t time.Time) (string, error) {
	return store.FreshSessionID(t, func(id string) (bool, error) {
		err := existsOr(ctx, q, id)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	})
}

func existsOr(ctx context.Context, q querier, id string) error {
	var one int
	err := q.QueryRow(ctx, "SELECT 1 FROM sessions WHERE id = $1", id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
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
		"UPDATE sessions SET ended_at = $1, end_reason = $2 WHERE id = $3 AND ended_at IS NULL",
		micros(time.Now()), store.CleanIdent(reason), id)
}

// ReopenSession implements store.Sessions.
func (db *DB) ReopenSession(ctx context.Context, id string) error {
	return db.updateOne(ctx, "reopen session", id,
		"UPDATE sessions SET ended_at = NULL, end_reason = '' WHERE id = $1", id)
}

// SetTitle implements store.Sessions.
func (db *DB) SetTitle(ctx context.Context, id, title string, opts ...store.WriteOption) error {
	t, err := store.CleanTitle(title)
	if err != nil {
		return fmt.Errorf("set title of %s: %w", id, err)
	}
	w := store.ApplyWriteOptions(opts)
	var owner string // the session's principal: titles are unique among its sessions
	err = db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		var root string
		if err := tx.QueryRow(ctx, "SELECT root_id, user_id FROM sessions WHERE id = $1 FOR UPDATE", id).Scan(&root, &owner); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("session", id)
			}
			return err
		}
		if err := checkLease(ctx, tx, root, w.Fence); err != nil {
			return err
		}
		if t != "" {
			var holder, holderRoot string
			err := tx.QueryRow(ctx, "SELECT id, root_id FROM sessions WHERE user_id = $1 AND title = $2", owner, t).
				Scan(&holder, &holderRoot)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return err
			case holder == id:
				return nil
			case holderRoot == root:
				if _, err := tx.Exec(ctx, "UPDATE sessions SET title = NULL WHERE id = $1", holder); err != nil {
					return err
				}
			default:
				return &store.TitleInUseError{Title: t, SessionID: holder}
			}
		}
		_, err := tx.Exec(ctx, "UPDATE sessions SET title = $1 WHERE id = $2", nullString(t), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("set title of %s: %w", id, db.titleErr(ctx, err, owner, t))
	}
	return nil
}

// NextTitle implements store.Sessions.
func (db *DB) NextTitle(ctx context.Context, userID, base string) (string, error) {
	return nextTitle(ctx, db.pool, userID, base)
}

func nextTitle(ctx context.Context, q querier, userID, base string) (string, error) {
	t, err := sqlq.TitleBase(base)
	if err != nil {
		return "", err
	}
	titles, err := column[string](ctx, q, "SELECT title FROM sessions WHERE user_id = $4 AND (title = $1 OR "+numberedTitles+")",
		t, t+" #", len([]rune(t))+3, userID)
	if err != nil {
		return "", err
	}
	return sqlq.NextNumbered(t, titles)
}

// DeleteSession implements store.Sessions.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
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
// The lease row is locked, so a turn cannot take it while the delete commits.
func refuseRunningTurn(ctx context.Context, tx pgx.Tx, id string) error {
	conv, err := rootOf(ctx, tx, id)
	if err != nil {
		return err
	}
	var holder *string
	var expires *int64
	switch err := tx.QueryRow(ctx, "SELECT holder, expires_at FROM turn_leases WHERE conversation_id = $1 FOR UPDATE", conv).Scan(&holder, &expires); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	case holder != nil && expires != nil && store.LeaseLive(*holder, fromMicros(*expires), time.Now()):
		return &store.LeaseHeldError{ConversationID: conv, Holder: *holder, ExpiresAt: fromMicros(*expires)}
	}
	return nil
}

func deleteSessionTx(ctx context.Context, tx pgx.Tx, id string) error {
	rows, err := tx.Query(ctx, "SELECT id, relation FROM sessions WHERE parent_session_id = $1", id)
	if err != nil {
		return err
	}
	type child struct{ id, rel string }
	children, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (child, error) {
		var c child
		err := r.Scan(&c.id, &c.rel)
		return c, err
	})
	if err != nil {
		return err
	}
	for _, c := range children {
		if c.rel == string(store.RelationDelegate) {
			if err := deleteSessionTx(ctx, tx, c.id); err != nil {
				return err
			}
			continue
		}
		if _, err := tx.Exec(ctx, "UPDATE sessions SET parent_session_id = NULL, relation = '' WHERE id = $1", c.id); err != nil {
			return err
		}
		if c.rel == string(store.RelationCompression) {
			if _, err := tx.Exec(ctx, `WITH RECURSIVE chain(id) AS (
					SELECT $1::text UNION SELECT s.id FROM sessions s JOIN chain ON s.parent_session_id = chain.id
					WHERE s.relation = 'compression')
				UPDATE sessions SET root_id = $1 WHERE id IN (SELECT id FROM chain)`, c.id); err != nil {
				return err
			}
		}
	}
	var hash *string
	if err := tx.QueryRow(ctx, "SELECT system_prompt_hash FROM sessions WHERE id = $1", id).Scan(&hash); err != nil {
		return err
	}
	for _, q := range []string{
		"DELETE FROM messages WHERE session_id = $1",
		"DELETE FROM compression_locks WHERE session_id = $1",
		"DELETE FROM requests WHERE session_id = $1",
		"DELETE FROM routes WHERE session_id = $1",
		"DELETE FROM sessions WHERE id = $1",
	} {
		if _, err := tx.Exec(ctx, q, id); err != nil {
			return err
		}
	}
	if hash != nil {
		_, err := tx.Exec(ctx, `DELETE FROM system_prompts WHERE hash = $1
			AND NOT EXISTS (SELECT 1 FROM sessions WHERE system_prompt_hash = $1)`, *hash)
		return err
	}
	return nil
}

// SetSystemPrompt implements store.Sessions.
func (db *DB) SetSystemPrompt(ctx context.Context, id, prompt string) (string, error) {
	prompt = cleanNUL(store.CleanText(prompt))
	hash := store.PromptHash(prompt)
	err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
		return setPromptTx(ctx, tx, id, prompt, hash)
	})
	if err != nil {
		return "", fmt.Errorf("set system prompt of %s: %w", id, err)
	}
	return hash, nil
}

func setPromptTx(ctx context.Context, tx pgx.Tx, id, prompt, hash string) error {
	if _, err := tx.Exec(ctx, "INSERT INTO system_prompts (hash, prompt) VALUES ($1, $2) ON CONFLICT DO NOTHING", hash, prompt); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, "UPDATE sessions SET system_prompt_hash = $1 WHERE id = $2", hash, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("session", id)
	}
	return nil
}

// cleanNUL removes NUL characters, which PostgreSQL text cannot hold (SQLite keeps them).
func cleanNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
