package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/spoolhq/spool/store/internal/sqlq"
)

// stmtCache keeps prepared statements of the hot paths: modernc.org/sqlite parses and plans
// every statement it is handed, which costs as much as a small insert. DB keeps one cache for the
// append path on the writer's single connection and one for the reads on the reader pool.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[query]; ok {
		return s, nil
	}
	s, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = s
	return s, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		s.Close()
	}
	c.m = nil
}

// writerStatements are prepared when the database opens: preparing on the writer's only
// connection while a transaction holds it would wait forever.
var writerStatements = []string{bumpSessionSQL, insertMessageSQL, insertMessagesBulkSQL}

func (db *DB) prepareWriter(ctx context.Context) error {
	for _, q := range writerStatements {
		if _, err := db.wstmts.get(ctx, db.w, q); err != nil {
			return fmt.Errorf("prepare %.40q: %w", q, err)
		}
	}
	return nil
}

// txStmt binds a statement prepared by prepareWriter to tx.
func (db *DB) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	db.wstmts.mu.Lock()
	s, ok := db.wstmts.m[query]
	db.wstmts.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("statement %.40q was not prepared when the database opened", query)
	}
	return tx.StmtContext(ctx, s), nil
}

// Statements of the turn's hot write path besides the append (leases, usage), prepared with
// writerStatements and run through cachedTx.
const (
	rootOfSQL      = "SELECT root_id FROM sessions WHERE id = ?"
	leaseGetSQL    = "SELECT holder, generation, expires_at FROM turn_leases WHERE conversation_id = ?"
	leaseExtendSQL = "UPDATE turn_leases SET expires_at = ?, ttl = ? WHERE conversation_id = ?"
	leaseTakeSQL   = `INSERT INTO turn_leases (conversation_id, holder, generation, acquired_at, expires_at, ttl)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (conversation_id) DO UPDATE SET holder = ?2, generation = ?3,
			acquired_at = ?4, expires_at = ?5, ttl = ?6`
	leaseRenewSQL = `UPDATE turn_leases SET expires_at = ?, ttl = ?
			WHERE conversation_id = ? AND holder = ? AND generation = ?`
	leaseReleaseSQL = `UPDATE turn_leases SET holder = NULL, expires_at = NULL
			WHERE conversation_id = ? AND holder = ? AND generation = ?`
	leaseCheckSQL = "SELECT holder, generation, expires_at, ttl FROM turn_leases WHERE conversation_id = ?"
	leaseTouchSQL = "UPDATE turn_leases SET expires_at = ? WHERE conversation_id = ?"
	// modelConfigSetSQL is the session patch a turn's last commit carries (its compaction state).
	modelConfigSetSQL = "UPDATE sessions SET model_config = ? WHERE id = ? RETURNING root_id"
	// turnSessionSQL is a turn commit's whole change to its session row (CommitTurn): what
	// bumpSessionSQL, sqlq.UsageAddSQL and modelConfigSetSQL do, in one statement. A commit without
	// messages passes 0 as the last activity (max keeps the row's) and NULL as the preview; one
	// without a patch passes NULL as the model config (coalesce keeps the row's).
	// turnStartSQL is what BeginTurn checks before it appends: the session's conversation,
	// active count, whether compression closed it, and its newest active message (0: none).
	turnStartSQL = `SELECT root_id, message_count, ended_at IS NOT NULL AND end_reason = 'compression',
			coalesce((SELECT max(id) FROM messages WHERE session_id = ?1 AND active = 1), 0) FROM sessions WHERE id = ?1`
	turnSessionSQL = `UPDATE sessions SET message_count = message_count + ?, tool_call_count = tool_call_count + ?,
			last_active = max(last_active, ?), preview = coalesce(preview, ?),
			input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
			cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,
			reasoning_tokens = reasoning_tokens + ?, api_call_count = api_call_count + ?,
			cost_usd = cost_usd + ?, model_config = coalesce(?, model_config)
			WHERE id = ? RETURNING root_id, ended_at IS NOT NULL AND end_reason = 'compression'`
)

func init() {
	writerStatements = append(writerStatements, rootOfSQL, leaseGetSQL, leaseExtendSQL, leaseTakeSQL, leaseRenewSQL,
		leaseReleaseSQL, leaseCheckSQL, leaseTouchSQL, sqlq.UsageAddSQL, sqlq.RequestAddSQL, modelConfigSetSQL, turnSessionSQL, turnStartSQL)
}

// prepared is the writer's statement for query, nil when it was not prepared at open.
func (db *DB) prepared(query string) *sql.Stmt {
	db.wstmts.mu.Lock()
	defer db.wstmts.mu.Unlock()
	return db.wstmts.m[query]
}

// cachedTx runs a write transaction's statements through the writer's prepared ones when the
// query is one of writerStatements, else as plain statements of tx.
type cachedTx struct {
	db *DB
	tx *sql.Tx
}

func (c cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := c.db.prepared(query); s != nil {
		return c.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return c.tx.QueryRowContext(ctx, query, args...)
}

func (c cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := c.db.prepared(query); s != nil {
		return c.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return c.tx.QueryContext(ctx, query, args...)
}

func (c cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := c.db.prepared(query); s != nil {
		return c.tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return c.tx.ExecContext(ctx, query, args...)
}

// cachedReads is the reader pool with each query prepared once (rstmts). Only for call sites
// whose query strings are fixed: every distinct string stays prepared for the handle's life.
type cachedReads struct{ db *DB }

func (c cachedReads) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := c.db.rstmts.get(ctx, c.db.r, query)
	if err != nil {
		return c.db.r.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

func (c cachedReads) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := c.db.rstmts.get(ctx, c.db.r, query)
	if err != nil {
		return c.db.r.QueryContext(ctx, query, args...)
	}
	return s.QueryContext(ctx, args...)
}
