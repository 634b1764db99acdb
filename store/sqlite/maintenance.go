package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/spoolhq/spool/store"
)

// ImportSession implements store.Store.
func (db *DB) ImportSession(ctx context.Context, s store.Session, prompt string, ms []store.Message) error {
	ns := store.NewSession{ID: s.ID, Source: s.Source, UserID: s.UserID, SessionKey: s.SessionKey, Title: s.Title,
		Model: s.Model, ModelConfig: s.ModelConfig, ParentID: s.ParentID, Relation: s.Relation,
		StartedAt: s.StartedAt, Cwd: s.Cwd, GitBranch: s.GitBranch}
	if ns.ID == "" {
		return fmt.Errorf("import session: %w", store.Invalid("id", "empty"))
	}
	if ns.Source == "" {
		ns.Source = "cli"
	}
	if ns.StartedAt.IsZero() {
		return fmt.Errorf("import session %s: %w", s.ID, store.Invalid("started_at", "missing"))
	}
	if err := validateNewSession(&ns); err != nil {
		return fmt.Errorf("import session %s: %w", s.ID, err)
	}
	enc, _, err := encodeMessages(ms)
	if err != nil {
		return fmt.Errorf("import session %s: %w", s.ID, err)
	}
	err = db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
		if existsOr(ctx, tx, ns.ID) == nil {
			return fmt.Errorf("session %s: %w", ns.ID, store.ErrExists)
		}
		if ns.ParentID != "" && existsOr(ctx, tx, ns.ParentID) != nil {
			ns.ParentID, ns.Relation = "", store.RelationNone // the parent was not imported
		}
		if ns.Title != "" {
			t, err := freeTitle(ctx, tx, ns.Title)
			if err != nil {
				return err
			}
			ns.Title = t
		}
		if err := createSessionTx(ctx, tx, ns); err != nil {
			return err
		}
		u := s.Usage
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET ended_at = ?, end_reason = ?, input_tokens = ?,
			output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?, reasoning_tokens = ?,
			api_call_count = ?, cost_usd = ? WHERE id = ?`,
			nullMicros(s.EndedAt), s.EndReason, u.InputTokens, u.OutputTokens, u.CacheReadTokens,
			u.CacheWriteTokens, u.ReasoningTokens, u.APICalls, u.CostUSD, ns.ID); err != nil {
			return err
		}
		if prompt != "" {
			p := store.CleanText(prompt)
			if err := setPromptTx(ctx, tx, ns.ID, p, PromptHash(p)); err != nil {
				return err
			}
		}
		for _, e := range enc {
			if _, err := db.insertMessage(ctx, tx, ns.ID, e, e.m.Active, e.m.Compacted); err != nil {
				return err
			}
		}
		if err := recount(ctx, tx, ns.ID); err != nil {
			return err
		}
		// A compression chain lists by its newest activity, as appends keep it (bumpSession).
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET last_active = max(last_active,
			(SELECT last_active FROM sessions WHERE id = ?1)) WHERE id = (SELECT root_id FROM sessions WHERE id = ?1)
			AND id <> ?1`, ns.ID); err != nil {
			return err
		}
		return db.indexNow(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("import session %s: %w", s.ID, err)
	}
	return nil
}

// freeTitle returns title, or the first free "title #N" when it is taken.
func freeTitle(ctx context.Context, tx *sql.Tx, title string) (string, error) {
	base := title
	if m := titleNumber.FindStringSubmatch(title); m != nil {
		base = m[1]
	}
	candidate := title
	for n := 2; ; n++ {
		holder, err := titleHolder(ctx, tx, candidate)
		if err != nil || holder == "" {
			return candidate, err
		}
		candidate = fmt.Sprintf("%s #%d", base, n)
	}
}

// Prune implements store.Store: only ended sessions are deleted.
func (db *DB) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	ids, err := column[string](ctx, db.read(), "SELECT id FROM sessions WHERE ended_at IS NOT NULL AND started_at < ?", micros(cutoff))
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	deleted := 0
	for _, id := range ids {
		err := db.write(ctx, routineBudget, func(tx *sql.Tx) error {
			if existsOr(ctx, tx, id) != nil {
				return nil // gone already (a delegate of an earlier one, or another process)
			}
			return deleteSessionTx(ctx, tx, id)
		})
		if err != nil {
			return deleted, fmt.Errorf("prune %s: %w", id, err)
		}
		deleted++
	}
	return deleted, nil
}

// Stats implements store.Store.
func (db *DB) Stats(ctx context.Context) (store.Stats, error) {
	st := store.Stats{BySource: map[string]int{}}
	q := db.read()
	err := q.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE ended_at IS NULL),
		coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cache_read_tokens), 0),
		coalesce(sum(cache_write_tokens), 0), coalesce(sum(reasoning_tokens), 0), coalesce(sum(api_call_count), 0),
		coalesce(sum(cost_usd), 0) FROM sessions`).Scan(&st.Sessions, &st.OpenSessions,
		&st.Usage.InputTokens, &st.Usage.OutputTokens, &st.Usage.CacheReadTokens, &st.Usage.CacheWriteTokens,
		&st.Usage.ReasoningTokens, &st.Usage.APICalls, &st.Usage.CostUSD)
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	err = q.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE active = 1),
		count(*) FILTER (WHERE active = 0 AND compacted = 1) FROM messages`).Scan(&st.Messages, &st.ActiveMessages, &st.ArchivedMessages)
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM system_prompts").Scan(&st.SystemPrompts); err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	rows, err := q.QueryContext(ctx, "SELECT source, count(*) FROM sessions GROUP BY source")
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var src string
		var n int
		if err := rows.Scan(&src, &n); err != nil {
			return st, fmt.Errorf("stats: %w", err)
		}
		st.BySource[src] = n
	}
	for _, p := range []string{db.path, db.path + "-wal", db.path + "-shm"} {
		if fi, err := os.Stat(p); err == nil {
			st.Bytes += fi.Size()
		}
	}
	return st, rows.Err()
}

// queryStrings is column for text that may be NULL (read as "").
func queryStrings(ctx context.Context, q querier, query string) ([]string, error) {
	vals, err := column[sql.NullString](ctx, q, query)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.String
	}
	return out, nil
}
