package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

// ImportSession implements store.Admin.
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
	err = db.write(ctx, db.opts.WriteBudget, func(tx pgx.Tx) error {
		ns := ns
		if existsOr(ctx, tx, ns.ID) == nil {
			return fmt.Errorf("session %s: %w", ns.ID, store.ErrExists)
		}
		if ns.ParentID != "" && existsOr(ctx, tx, ns.ParentID) != nil {
			ns.ParentID, ns.Relation = "", store.RelationNone // the parent was not imported
		}
		if ns.Title != "" {
			t, err := freeTitle(ctx, tx, ns.UserID, ns.Title)
			if err != nil {
				return err
			}
			ns.Title = t
		}
		if err := createSessionTx(ctx, tx, ns); err != nil {
			return err
		}
		u := s.Usage
		if _, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = $1, end_reason = $2, input_tokens = $3,
			output_tokens = $4, cache_read_tokens = $5, cache_write_tokens = $6, reasoning_tokens = $7,
			api_call_count = $8, cost_usd = $9 WHERE id = $10`,
			nullMicros(s.EndedAt), store.CleanIdent(s.EndReason), u.InputTokens, u.OutputTokens, u.CacheReadTokens,
			u.CacheWriteTokens, u.ReasoningTokens, u.APICalls, u.CostUSD, ns.ID); err != nil {
			return err
		}
		if prompt != "" {
			p := cleanNUL(store.CleanText(prompt))
			if err := setPromptTx(ctx, tx, ns.ID, p, store.PromptHash(p)); err != nil {
				return err
			}
		}
		b := &pgx.Batch{}
		for _, e := range enc {
			b.Queue(insertMessageSQL, insertArgs(ns.ID, e, e.m.Active, e.m.Compacted)...)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		// A bundle carries no copy links: infer them.
		if err := linkStoredCopies(ctx, tx, ns.ID); err != nil {
			return err
		}
		if err := recount(ctx, tx, ns.ID); err != nil {
			return err
		}
		return bumpRootActivity(ctx, tx, ns.ID)
	})
	if err != nil {
		return fmt.Errorf("import session %s: %w", s.ID, err)
	}
	return nil
}

// freeTitle returns title, or the first free "title #N" among userID's titles when it is taken.
func freeTitle(ctx context.Context, tx pgx.Tx, userID, title string) (string, error) {
	base := title
	if m := titleNumber.FindStringSubmatch(title); m != nil {
		base = m[1]
	}
	candidate := title
	for n := 2; ; n++ {
		holder, err := titleHolder(ctx, tx, userID, candidate)
		if err != nil || holder == "" {
			return candidate, err
		}
		candidate = fmt.Sprintf("%s #%d", base, n)
	}
}

// Prune implements store.Admin: sessions idle since cutoff (their own and their chain root's last
// activity), ended or not, except conversations whose turn lease is held now.
func (db *DB) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	ids, err := column[string](ctx, db.pool, `SELECT s.id FROM sessions s JOIN sessions r ON r.id = s.root_id
		WHERE s.last_active < $1 AND r.last_active < $1
		AND NOT EXISTS (SELECT 1 FROM turn_leases l WHERE l.conversation_id = s.root_id
			AND l.holder IS NOT NULL AND l.expires_at > `+nowUS+`)
		ORDER BY s.id`, micros(cutoff))
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	deleted := 0
	for _, id := range ids {
		err := db.write(ctx, routineBudget, func(tx pgx.Tx) error {
			if existsOr(ctx, tx, id) != nil {
				return nil
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

// Stats implements store.Admin. Bytes is the size of the whole database.
func (db *DB) Stats(ctx context.Context) (store.Stats, error) {
	st := store.Stats{BySource: map[string]int{}}
	q := db.pool
	err := q.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE ended_at IS NULL),
		coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cache_read_tokens), 0),
		coalesce(sum(cache_write_tokens), 0), coalesce(sum(reasoning_tokens), 0), coalesce(sum(api_call_count), 0),
		coalesce(sum(cost_usd), 0) FROM sessions`).Scan(&st.Sessions, &st.OpenSessions,
		&st.Usage.InputTokens, &st.Usage.OutputTokens, &st.Usage.CacheReadTokens, &st.Usage.CacheWriteTokens,
		&st.Usage.ReasoningTokens, &st.Usage.APICalls, &st.Usage.CostUSD)
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	err = q.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE active),
		count(*) FILTER (WHERE NOT active AND compacted), count(*) FILTER (WHERE NOT active AND NOT compacted)
		FROM messages`).Scan(&st.Messages, &st.ActiveMessages, &st.ArchivedMessages, &st.SupersededMessages)
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	if err := q.QueryRow(ctx, "SELECT count(*) FROM system_prompts").Scan(&st.SystemPrompts); err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	if err := q.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&st.Bytes); err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	rows, err := q.Query(ctx, "SELECT source, count(*) FROM sessions GROUP BY source")
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	var src string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&src, &n}, func() error { st.BySource[src] = n; return nil }); err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// Check implements store.Admin: the schema version, invalid indexes, the ctype pg_trgm needs
// for CJK, the index columns of a sample of rows against what the writer computes, and every
// session's counters against its rows. PostgreSQL enforces the foreign keys itself.
func (db *DB) Check(ctx context.Context) ([]string, error) {
	var problems []string
	q := db.pool
	v, err := db.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("schema version: %w", err)
	}
	if v != SchemaVersion() {
		problems = append(problems, fmt.Sprintf("schema: version %d, this spool writes %d", v, SchemaVersion()))
	}
	bad, err := column[string](ctx, q, `SELECT i.indexrelid::regclass::text FROM pg_index i
		JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname IN ('sessions', 'messages', 'turn_leases',
		'compression_locks', 'requests', 'system_prompts') AND NOT (i.indisvalid AND i.indisready)`)
	if err != nil {
		return nil, fmt.Errorf("index check: %w", err)
	}
	for _, name := range bad {
		problems = append(problems, "index: "+name+" is not valid (rebuild it with REINDEX)")
	}
	var noCJK bool
	if err := q.QueryRow(ctx, "SELECT show_trgm('会话数据库') = '{}'").Scan(&noCJK); err != nil {
		return nil, fmt.Errorf("trigram check: %w", err)
	}
	if noCJK {
		var ctype string
		_ = q.QueryRow(ctx, "SELECT datctype FROM pg_database WHERE datname = current_database()").Scan(&ctype)
		problems = append(problems, fmt.Sprintf("search: pg_trgm ignores CJK text under LC_CTYPE %q; create the database with LC_CTYPE 'C.UTF-8'", ctype))
	}
	// The index columns of the newest rows must be what this build's writer computes.
	rows, err := q.Query(ctx, `SELECT `+messageCols+`, m.tsv::text, m.cjk_text IS NOT NULL
		FROM messages m ORDER BY m.id DESC LIMIT 200`)
	if err != nil {
		return nil, fmt.Errorf("index sample: %w", err)
	}
	for rows.Next() {
		var m store.Message
		var tsv string
		var cjk bool
		var api, calls, callID, name, reasoning, details, finish *string
		var ts int64
		if err := rows.Scan(&m.ID, &m.Role, &m.Content, &api, &calls, &callID, &name, &reasoning, &details, &finish,
			&m.TokenCount, &ts, &m.Summary, &m.Active, &m.Compacted, &tsv, &cjk); err != nil {
			rows.Close()
			return nil, fmt.Errorf("index sample: %w", err)
		}
		if name != nil {
			m.ToolName = *name
		}
		want, wantCJK := rowIndex(m, calls)
		if (wantCJK != nil) != cjk || !sameTSV(ctx, db, tsv, want.literal()) {
			problems = append(problems, fmt.Sprintf("search: message %d is indexed differently from its text (re-save it)", m.ID))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("index sample: %w", err)
	}
	lines, err := column[string](ctx, q, `SELECT s.id || ': message_count ' || s.message_count || ', active rows ' || count(m.id)
		FROM sessions s LEFT JOIN messages m ON m.session_id = s.id AND m.active
		GROUP BY s.id HAVING s.message_count <> count(m.id)`)
	if err != nil {
		return nil, fmt.Errorf("counter check: %w", err)
	}
	for _, l := range lines {
		problems = append(problems, "counters: "+l)
	}
	return problems, nil
}

// sameTSV compares a stored tsvector with a literal in the server's canonical form.
func sameTSV(ctx context.Context, db *DB, stored, literal string) bool {
	var canon string
	if err := db.pool.QueryRow(ctx, "SELECT $1::tsvector::text", literal).Scan(&canon); err != nil {
		return false
	}
	return canon == stored
}
