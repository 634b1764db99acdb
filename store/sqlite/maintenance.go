package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/spoolhq/spool/store"
)

// freeTitle returns title, or the first free "title #N" among userID's titles when it is taken.
func freeTitle(ctx context.Context, tx *sql.Tx, userID, title string) (string, error) {
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

// Prune implements store.Admin. A session is idle when its own last activity (its newest
// message, else its start) and its compression chain's newest activity (kept on the chain root)
// are both before cutoff; CLI sessions never end, so an end stamp is not required. A
// conversation whose turn lease is held is being used and is kept.
func (db *DB) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	ids, err := column[string](ctx, db.read(), `SELECT s.id FROM sessions s JOIN sessions r ON r.id = s.root_id
		WHERE s.last_active < ?1 AND r.last_active < ?1
		AND NOT EXISTS (SELECT 1 FROM turn_leases l WHERE l.conversation_id = s.root_id
			AND l.holder IS NOT NULL AND l.expires_at > ?2)
		ORDER BY s.id`, micros(cutoff), micros(time.Now()))
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

// Stats implements store.Admin.
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
		count(*) FILTER (WHERE active = 0 AND compacted = 1), count(*) FILTER (WHERE active = 0 AND compacted = 0)
		FROM messages`).Scan(&st.Messages, &st.ActiveMessages, &st.ArchivedMessages, &st.SupersededMessages)
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
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	if db.mem != nil {
		err := db.r.QueryRowContext(ctx, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()").Scan(&st.Bytes)
		return st, err
	}
	for _, p := range []string{db.path, db.path + "-wal", db.path + "-shm"} {
		if fi, err := os.Stat(p); err == nil {
			st.Bytes += fi.Size()
		}
	}
	return st, nil
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
