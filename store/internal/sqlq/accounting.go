package sqlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

// The statements of a recorded model call: its usage added to the session (returning the
// session's conversation, which the lease fences) and its row.
const (
	UsageAddSQL = `UPDATE sessions SET
			input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
			cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,
			reasoning_tokens = reasoning_tokens + ?, api_call_count = api_call_count + ?,
			cost_usd = cost_usd + ? WHERE id = ? RETURNING root_id`
	RequestAddSQL = `INSERT INTO requests (session_id, at, model, task, input_tokens, output_tokens,
			cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, cache_break, latency_us, fallback)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	requestsSQL = `SELECT at, model, task, input_tokens, output_tokens, cache_read_tokens,
		cache_write_tokens, reasoning_tokens, cost_usd, cache_break, latency_us, fallback FROM requests WHERE session_id = ?
		ORDER BY id DESC LIMIT ?`
	sessionExistsSQL = `SELECT 1 FROM sessions WHERE id = ?`
)

// EncodedRequest is one model call's record made ready for its statements once, outside a
// write's retries: defaults applied, cache break encoded, arguments boxed. It is what a hot path
// hands its write transaction, so RecordRequest costs one allocation beyond its arguments.
type EncodedRequest struct {
	R     store.RequestRecord
	usage [8]any  // UsageAddSQL's arguments
	row   [13]any // RequestAddSQL's arguments
	s     Store   // for RecordRequest's transaction (Run)
}

// EncodeRequest prepares r's statements for session id, its identifiers as d stores them.
func EncodeRequest(d *Dialect, id string, r store.RequestRecord) (EncodedRequest, error) {
	e := EncodedRequest{R: r.Normalized()}
	doc, ok, err := r.BreakJSON()
	n, u, sid := e.R, e.R.Usage, any(id) // id boxed once for both statements
	e.usage = [8]any{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.APICalls, u.CostUSD, sid}
	e.row = [13]any{sid, micros(n.At), d.Ident(n.Model), d.Ident(n.Task), u.InputTokens, u.OutputTokens,
		u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.CostUSD, sql.NullString{String: doc, Valid: ok},
		max(n.Latency.Microseconds(), 0), d.Ident(n.Fallback)}
	return e, err
}

// UsageArgs are UsageAddSQL's arguments.
func (e *EncodedRequest) UsageArgs() []any { return e.usage[:] }

// RowArgs are RequestAddSQL's arguments.
func (e *EncodedRequest) RowArgs() []any { return e.row[:] }

func (e *EncodedRequest) id() string { return e.usage[7].(string) }

// RecordRequest implements store.Accounting.
func (s Store) RecordRequest(ctx context.Context, id string, r store.RequestRecord) error {
	e, err := EncodeRequest(s.d, id, r)
	if err != nil {
		return fmt.Errorf("record request of %s: %w", id, err)
	}
	e.s = s
	if err := s.db.Write(ctx, true, &e); err != nil {
		return fmt.Errorf("record request of %s: %w", id, err)
	}
	return nil
}

// Run implements Job: RecordRequest's transaction.
func (e *EncodedRequest) Run(ctx context.Context, x Executor) error {
	return e.s.RecordTx(ctx, x, e, e.R.Lease)
}

// RecordTx adds one request's usage to its session and stores its row, in x's transaction,
// fenced by l.
func (s Store) RecordTx(ctx context.Context, x Executor, e *EncodedRequest, l *store.Lease) error {
	var root string
	err := x.QueryRow(ctx, s.d.Rebind(UsageAddSQL), e.UsageArgs()...).Scan(&root)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("session", e.id())
	}
	if err != nil {
		return err
	}
	if err := s.db.CheckLease(ctx, x, root, l); err != nil {
		return err // rolls the usage back too
	}
	return s.InsertRequest(ctx, x, e)
}

// InsertRequest adds e's row to the requests table (the session's usage is added by the caller).
func (s Store) InsertRequest(ctx context.Context, x Executor, e *EncodedRequest) error {
	_, err := x.Exec(ctx, s.d.Rebind(RequestAddSQL), e.RowArgs()...)
	return err
}

// Requests implements store.Accounting.
func (s Store) Requests(ctx context.Context, id string, limit int) ([]store.RequestRecord, error) {
	lim := s.d.NoLimit
	if limit > 0 {
		lim = limit
	}
	// Every turn reads its session's last call (the cache forensics).
	var out []store.RequestRecord
	err := s.db.Read().Query(ctx, s.d.Rebind(requestsSQL), []any{id, lim}, func(row Scanner) error {
		r, err := scanRequest(row)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("requests of %s: %w", id, err)
	}
	if len(out) == 0 {
		if err := s.sessionExists(ctx, id); err != nil {
			return nil, fmt.Errorf("requests: %w", err)
		}
	}
	return out, nil
}

func scanRequest(row Scanner) (store.RequestRecord, error) {
	var r store.RequestRecord
	var at, latency int64
	var brk sql.NullString
	u := &r.Usage
	if err := row.Scan(&at, &r.Model, &r.Task, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens,
		&u.CacheWriteTokens, &u.ReasoningTokens, &u.CostUSD, &brk, &latency, &r.Fallback); err != nil {
		return r, err
	}
	r.At, u.APICalls, r.Latency = fromMicros(at), 1, time.Duration(latency)*time.Microsecond
	if brk.Valid {
		r.Break = &store.CacheBreak{}
		if err := json.Unmarshal([]byte(brk.String), r.Break); err != nil {
			return r, fmt.Errorf("cache break: %w", err)
		}
	}
	return r, nil
}

// sessionExists is nil when session id exists, else an error matching store.ErrNotFound.
func (s Store) sessionExists(ctx context.Context, id string) error {
	var one int
	err := s.db.Read().QueryRow(ctx, s.d.Rebind(sessionExistsSQL), id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("session", id)
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	return nil
}

const microsPerDay = int64(24 * time.Hour / time.Microsecond)

// UsageByDay implements store.Accounting.
func (s Store) UsageByDay(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	var since int64 = -1 << 62
	if !q.Since.IsZero() {
		since = micros(q.Since)
	}
	query := s.d.Rebind(`SELECT ` + s.d.FloorDiv("r.at", "?") + ` AS day, r.model, CAST(sum(r.input_tokens) AS BIGINT),
		CAST(sum(r.output_tokens) AS BIGINT), CAST(sum(r.cache_read_tokens) AS BIGINT), CAST(sum(r.cache_write_tokens) AS BIGINT),
		CAST(sum(r.reasoning_tokens) AS BIGINT), count(*), sum(r.cost_usd)
		FROM requests r JOIN sessions s ON s.id = r.session_id
		WHERE r.at >= ? AND (? = '' OR s.user_id = ?)
		GROUP BY day, r.model ORDER BY day, r.model`)
	var out []store.UsageRow
	err := s.db.Read().Query(ctx, query, []any{microsPerDay, since, q.UserID, q.UserID}, func(r Scanner) error {
		var row store.UsageRow
		var day int64
		u := &row.Usage
		if err := r.Scan(&day, &row.Model, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens,
			&u.ReasoningTokens, &u.APICalls, &u.CostUSD); err != nil {
			return err
		}
		row.Day = time.UnixMicro(day * microsPerDay).UTC()
		out = append(out, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage by day: %w", err)
	}
	return out, nil
}

func notFound(kind, ref string) error { return fmt.Errorf("%s %q: %w", kind, ref, store.ErrNotFound) }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us) }
